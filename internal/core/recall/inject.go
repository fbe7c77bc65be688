package recall

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// Injections turns recalls into injections. Per memory, when the admitted
// candidates' fragments joined with "\n\n" in PromptPosition order equal
// the memory's system content byte for byte, there is one injection per
// admitted chunk (id memory:<id>#<entryId>, carrying its score and rank);
// otherwise one injection memory:<id> for the whole memory, which is always
// correct and merely coarser. Non-system messages ride on their own
// memory:<id> injection beside per-chunk ones. Recalls with nothing to
// inject are skipped.
func Injections(recalls []MemoryRecall) []Injection {
	out := []Injection{}
	for _, rc := range recalls {
		system, messages := splitRecall(rc.Messages)
		if system == "" && len(messages) == 0 {
			continue
		}
		flavor := "memory"
		if rc.Flavor == "rag" {
			flavor = "rag"
		}
		whole := Injection{
			ID:          "memory:" + rc.MemoryID,
			Flavor:      flavor,
			Description: fmt.Sprintf("recall from memory '%s'", rc.MemoryID),
		}
		if chunks := chunkInjections(rc, flavor, system); chunks != nil {
			out = append(out, chunks...)
			if len(messages) > 0 {
				whole.Messages = messages
				out = append(out, whole)
			}
			continue
		}
		whole.SystemPrompt, whole.Messages = system, messages
		out = append(out, whole)
	}
	return out
}

// splitRecall returns the system-role contents joined with "\n\n" and the
// other messages.
func splitRecall(ms []core.Message) (string, []core.Message) {
	var system []string
	var others []core.Message
	for _, m := range ms {
		if m.Role == "system" {
			system = append(system, m.Content)
		} else {
			others = append(others, m)
		}
	}
	return strings.Join(system, "\n\n"), others
}

// chunkInjections returns one injection per admitted chunk, or nil when the
// recall's evidence does not rebuild its system content exactly (the guard
// is an equality check on the assembled bytes, so a hand-edited recall or a
// future formatter change falls back to the coarse path instead of altering
// the prompt).
func chunkInjections(rc MemoryRecall, flavor, system string) []Injection {
	var admitted []Candidate
	for _, c := range rc.Evidence.Candidates {
		if c.Admitted && c.PromptFragment != nil && c.PromptPosition != nil {
			admitted = append(admitted, c)
		}
	}
	if len(admitted) == 0 {
		return nil
	}
	// Prompt order, not rank order: joining in rank order could rebuild the
	// same bytes in a sequence the model never saw.
	slices.SortStableFunc(admitted, func(a, b Candidate) int { return cmp.Compare(*a.PromptPosition, *b.PromptPosition) })
	frags := make([]string, len(admitted))
	for i, c := range admitted {
		frags[i] = *c.PromptFragment
	}
	if strings.Join(frags, "\n\n") != system {
		return nil
	}
	out := make([]Injection, len(admitted))
	for i, c := range admitted {
		inj := Injection{
			ID:           fmt.Sprintf("memory:%s#%s", rc.MemoryID, c.ID),
			Flavor:       flavor,
			SystemPrompt: *c.PromptFragment,
		}
		switch {
		case c.Score != nil && c.DocURI != "":
			inj.Description = fmt.Sprintf("retrieved '%s' from %s (rank %d, score %s)", c.ID, c.DocURI, c.Rank, formatScore(*c.Score))
		case c.Score != nil:
			inj.Description = fmt.Sprintf("retrieved '%s' (rank %d, score %s)", c.ID, c.Rank, formatScore(*c.Score))
		default:
			inj.Description = fmt.Sprintf("recalled '%s' (rank %d)", c.ID, c.Rank)
		}
		if c.Score != nil {
			inj.Retrieval = &Retrieval{Score: *c.Score, Rank: c.Rank}
			if t := thresholdFor(rc.Evidence, c); t != nil {
				v := *t
				inj.Retrieval.Threshold = &v
			}
		}
		out[i] = inj
	}
	return out
}

// thresholdFor is the threshold the candidate cleared: the evidence's own,
// or for a hybrid the threshold of the part that admitted it.
func thresholdFor(ev Evidence, c Candidate) *float64 {
	if ev.Threshold != nil {
		return ev.Threshold
	}
	for _, p := range ev.Parts {
		for _, pc := range p.Candidates {
			if pc.Admitted && pc.ID == c.ID {
				return thresholdFor(p, pc)
			}
		}
	}
	return nil
}

// SystemPrompt joins every recall's system-role contents with "\n\n", in
// memory order; recalls with no system content add nothing (not even a
// separator). It equals the injections' system prompts joined the same way.
func SystemPrompt(recalls []MemoryRecall) string {
	var parts []string
	for _, rc := range recalls {
		if s, _ := splitRecall(rc.Messages); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}
