package recall

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/footprint/footprint/internal/core"
)

// UnmarshalJSON reads a receipt as stored, in either of the two shapes
// receipts have been stored in: the current one (the text once, in
// systemPrompt, and spans into it), and the one before it, which stored
// each admitted chunk's text four times (the memory's `messages`, the
// candidate's `promptFragment`, the injection's `systemPrompt` and the
// recall's `systemPrompt`) and no spans. A receipt of the earlier shape is
// rebuilt by Assemble from its messages and fragments, so that it reads
// back exactly as a receipt of the current shape made by the same recall:
// the same systemPrompt, injections and spans.
func (r *RecallResult) UnmarshalJSON(data []byte) error {
	type plain RecallResult
	if err := json.Unmarshal(data, (*plain)(r)); err != nil {
		return err
	}
	if !legacyReceipt(data) {
		return nil
	}
	var old struct {
		Memories []struct {
			Messages []core.Message `json:"messages"`
			Evidence legacyEvidence `json:"evidence"`
		} `json:"memories"`
		SystemPrompt string `json:"systemPrompt"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return err
	}
	if len(old.Memories) != len(r.Memories) {
		return fmt.Errorf("receipt %s: %d memories, %d as stored", r.RecallID, len(r.Memories), len(old.Memories))
	}
	for i := range r.Memories {
		r.Memories[i].Messages = old.Memories[i].Messages
		old.Memories[i].Evidence.restore(&r.Memories[i].Evidence)
	}
	r.SystemPrompt, r.Injections = Assemble(r.Memories)
	if r.SystemPrompt != old.SystemPrompt {
		return fmt.Errorf("receipt %s: its memories' text does not rebuild its systemPrompt", r.RecallID)
	}
	return nil
}

// legacyReceipt reports whether a stored receipt has the shape before spans:
// a candidate's promptFragment, or an injection's systemPrompt besides the
// recall's. A JSON string escapes every quote, so neither key can be
// matched inside stored text.
func legacyReceipt(data []byte) bool {
	return bytes.Contains(data, []byte(`"promptFragment":`)) || bytes.Count(data, []byte(`"systemPrompt":`)) > 1
}

// legacyEvidence is the part of an earlier receipt's evidence that its spans
// are rebuilt from: each candidate's fragment, parts included.
type legacyEvidence struct {
	Candidates []struct {
		PromptFragment *string `json:"promptFragment"`
	} `json:"candidates"`
	Parts []legacyEvidence `json:"parts"`
}

func (l legacyEvidence) restore(ev *Evidence) {
	for i := range min(len(l.Candidates), len(ev.Candidates)) {
		ev.Candidates[i].PromptFragment = l.Candidates[i].PromptFragment
	}
	for p := range min(len(l.Parts), len(ev.Parts)) {
		l.Parts[p].restore(&ev.Parts[p])
	}
}
