package recall

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// FoldEvidence records what the summarize strategy did on one recall: the
// span it folded (or reused, or could not fold) and what the fold cost.
type FoldEvidence struct {
	// Status: folded (a model call wrote a new summary now), reused
	// (existing summaries cover the old span), none (fewer than `size`
	// messages: nothing to fold), failed (the model call failed: recalled
	// verbatim), refused (the summary was not shorter than what it
	// replaces: that span is not asked again).
	Status       string   `json:"status"`
	SummaryID    string   `json:"summaryId,omitempty"`
	FromTurn     int      `json:"fromTurn,omitempty"`
	ToTurn       int      `json:"toTurn,omitempty"`
	Covers       []string `json:"covers,omitempty"`
	LLM          string   `json:"llm,omitempty"`
	Model        string   `json:"model,omitempty"`
	InputTokens  int64    `json:"inputTokens,omitempty"`
	OutputTokens int64    `json:"outputTokens,omitempty"`
	Reason       string   `json:"reason,omitempty"`
}

// summaryValue is the stored value of a msg-summary-{from}-{to} entry.
type summaryValue struct {
	Content      string    `json:"content,omitempty"`
	From         int       `json:"from"`
	To           int       `json:"to"`
	Covers       []string  `json:"covers"`
	LLM          string    `json:"llm"`
	Model        string    `json:"model"`
	InputTokens  int64     `json:"inputTokens"`
	OutputTokens int64     `json:"outputTokens"`
	CreatedAt    time.Time `json:"createdAt"`
	// Refused marks a span whose summary was not shorter than the
	// originals: the originals stay verbatim and the span is not asked
	// again.
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

const defaultSummarizePrompt = "You compress conversation history for an AI assistant's memory. " +
	"Summarise the conversation below in a few sentences: keep names, facts, decisions, numbers and open questions; " +
	"drop pleasantries. Write in the third person. Answer with the summary only."

// foldPlan is the span one fold would replace.
type foldPlan struct {
	from, to int
	entries  []core.Entry // oldest first
}

// summaries returns the memory's summary entries parsed, oldest first.
func summaries(entries []core.Entry) []struct {
	e core.Entry
	v summaryValue
} {
	var out []struct {
		e core.Entry
		v summaryValue
	}
	for _, e := range entries {
		if e.Kind != core.KindSummary {
			continue
		}
		var v summaryValue
		if json.Unmarshal(e.Value, &v) != nil {
			continue
		}
		out = append(out, struct {
			e core.Entry
			v summaryValue
		}{e, v})
	}
	slices.SortFunc(out, func(a, b struct {
		e core.Entry
		v summaryValue
	}) int {
		return a.v.From - b.v.From
	})
	return out
}

// uncoveredMessages returns the messages no (non-refused) summary covers,
// oldest first.
func uncoveredMessages(entries []core.Entry) []core.Entry {
	sums := summaries(entries)
	var out []core.Entry
	for _, e := range entries {
		if e.Kind != core.KindMessage {
			continue
		}
		covered := false
		for _, s := range sums {
			if !s.v.Refused && e.Turn >= s.v.From && e.Turn <= s.v.To {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b core.Entry) int { return core.CompareNewest(b, a) })
	return out
}

// planFold decides what a summarize strategy folds: when at least `size`
// uncovered messages are loaded, everything older than the newest `recent`
// — the verbatim tail extended back to the start of its oldest turn, so no
// turn is split — unless that exact span was refused before.
func planFold(entries []core.Entry, s core.Strategy) (foldPlan, bool) {
	recent, _ := s.Int("recent")
	size, _ := s.Int("size")
	msgs := uncoveredMessages(entries)
	if int64(len(msgs)) < size || int64(len(msgs)) <= recent {
		return foldPlan{}, false
	}
	cut := len(msgs) - int(recent) // msgs[cut:] is the verbatim tail
	for cut > 0 && msgs[cut-1].Turn == msgs[cut].Turn {
		cut-- // keep the tail's oldest turn whole
	}
	if cut == 0 {
		return foldPlan{}, false
	}
	p := foldPlan{from: msgs[0].Turn, to: msgs[cut-1].Turn, entries: msgs[:cut]}
	for _, sm := range summaries(entries) {
		if sm.v.Refused && sm.v.From == p.from && sm.v.To == p.to {
			return foldPlan{}, false
		}
	}
	return p, true
}

// summaryID names the summary of a span.
func summaryID(from, to int) string { return fmt.Sprintf("msg-summary-%d-%d", from, to) }

// fold runs the summarize strategy's write-back before its read: if a span
// is due, ONE model call summarises it and the summary is stored (tier
// cold), so a span is paid for once; a failed call leaves recall verbatim.
// It returns the entries to read (with the new summary) and the evidence.
func (s *Service) fold(ctx context.Context, m core.Memory, st core.Strategy, entries []core.Entry, now time.Time) ([]core.Entry, *FoldEvidence) {
	plan, due := planFold(entries, st)
	if !due {
		used, refused := 0, 0
		for _, sm := range summaries(entries) {
			if sm.v.Refused {
				refused++
			} else {
				used++
			}
		}
		switch {
		case refused > 0 && used == 0:
			return entries, &FoldEvidence{Status: "refused", Reason: "the span due for folding was refused before (its summary was not shorter): it stays verbatim and is not asked again"}
		case used > 0:
			return entries, &FoldEvidence{Status: "reused"}
		}
		return entries, &FoldEvidence{Status: "none", Reason: "fewer messages than `size`: nothing to fold yet"}
	}
	ev := &FoldEvidence{SummaryID: summaryID(plan.from, plan.to), FromTurn: plan.from, ToTurn: plan.to, LLM: st.Str("llm"), Model: st.Str("model")}
	for _, e := range plan.entries {
		ev.Covers = append(ev.Covers, e.ID)
	}
	llm, ok := s.llms[ev.LLM]
	if !ok {
		ev.Status, ev.Reason = "failed", fmt.Sprintf("the LLM provider %q is not configured on this server", ev.LLM)
		return entries, ev
	}
	var transcript strings.Builder
	replaced := 0
	for _, e := range plan.entries {
		var msg core.Message
		if json.Unmarshal(e.Value, &msg) != nil {
			continue
		}
		fmt.Fprintf(&transcript, "%s: %s\n", msg.Role, msg.Content)
		replaced += len([]rune(msg.Content))
	}
	prompt := st.Str("systemPrompt")
	if prompt == "" {
		prompt = defaultSummarizePrompt
	}
	res, err := llm.Complete(ctx, core.ChatRequest{Model: ev.Model, MaxTokens: max(64, min(1024, replaced/8)),
		Messages: []core.Message{{Role: "system", Content: prompt}, {Role: "user", Content: transcript.String()}}})
	if err != nil {
		ev.Status, ev.Reason = "failed", "the model call failed ("+core.SafeReason(err)+"): recalled verbatim"
		s.countFold(ev.LLM, "failed")
		return entries, ev
	}
	ev.InputTokens, ev.OutputTokens = res.InputTokens, res.OutputTokens
	summary := strings.TrimSpace(res.Content)
	v := summaryValue{Content: summary, From: plan.from, To: plan.to, Covers: ev.Covers, LLM: ev.LLM, Model: ev.Model,
		InputTokens: res.InputTokens, OutputTokens: res.OutputTokens, CreatedAt: now}
	ev.Status = "folded"
	if summary == "" || len([]rune(summary)) >= replaced {
		v.Content, v.Refused = "", true
		v.Reason = fmt.Sprintf("the summary (%d characters) was not shorter than the %d characters it would replace", len([]rune(summary)), replaced)
		ev.Status, ev.Reason = "refused", v.Reason+": that span stays verbatim and is not asked again"
	}
	value, _ := json.Marshal(v) // plain data: always marshals
	e := core.Entry{Tenant: m.Tenant, MemoryID: m.ID, Namespace: plan.entries[0].Namespace, ID: ev.SummaryID, Kind: core.KindSummary,
		Turn: plan.to, Value: value, Metadata: json.RawMessage(`{}`), Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now,
		Tier: "cold", SourceTurn: plan.to}
	if err := s.store.PutEntries(ctx, []core.Entry{e}); err != nil {
		ev.Status, ev.Reason = "failed", "the summary could not be stored ("+core.SafeReason(err)+"): recalled verbatim"
		return entries, ev
	}
	s.countFold(ev.LLM, ev.Status)
	return append(slices.Clone(entries), e), ev
}
