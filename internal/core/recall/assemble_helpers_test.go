package recall_test

import (
	"slices"

	"github.com/footprint/footprint/internal/core/recall"
)

// assembled assembles copies of the recalls (ReadMemory's output is left as
// it is, fragments included) into a result: its SystemPrompt, injections and
// spans.
func assembled(rcs ...recall.MemoryRecall) recall.RecallResult {
	res := recall.RecallResult{Memories: make([]recall.MemoryRecall, len(rcs))}
	for i, rc := range rcs {
		rc.Messages = slices.Clone(rc.Messages)
		rc.Evidence = cloneEvidence(rc.Evidence)
		res.Memories[i] = rc
	}
	res.SystemPrompt, res.Injections = recall.Assemble(res.Memories)
	return res
}

func cloneEvidence(ev recall.Evidence) recall.Evidence {
	ev.Candidates = slices.Clone(ev.Candidates)
	ev.Parts = slices.Clone(ev.Parts)
	for i := range ev.Parts {
		ev.Parts[i] = cloneEvidence(ev.Parts[i])
	}
	return ev
}

// promptOf is the recall text the recalls assemble into.
func promptOf(rcs ...recall.MemoryRecall) string { return assembled(rcs...).SystemPrompt }

// injectionsOf are the injections the recalls assemble into.
func injectionsOf(rcs ...recall.MemoryRecall) []recall.Injection {
	return assembled(rcs...).Injections
}

// injected is the system text an injection of res names.
func injected(res recall.RecallResult, inj recall.Injection) string {
	text, _ := res.Text(inj.SystemSpan)
	return text
}
