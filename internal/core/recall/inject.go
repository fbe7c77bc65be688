package recall

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// Assemble writes the recalls, as ReadMemory made them, into one recall
// text and the injections that point into it, and returns both. The text
// (a recall's SystemPrompt) is every recall's system-role contents joined
// with "\n\n", in memory order; recalls with no system content add nothing
// (not even a separator). It is the only copy of the text: each recall's
// SystemSpan, each per-chunk injection's and each of its admitted
// candidates' (hybrid parts' included) name their part of it, and Assemble
// clears the recalls' Messages and the candidates' PromptFragment once it
// has placed them.
//
// Per memory, when the admitted candidates' fragments joined with "\n\n"
// in PromptPosition order equal the memory's system content byte for byte,
// there is one injection per admitted chunk (id memory:<id>#<entryId>,
// carrying its score and rank); otherwise one injection memory:<id> for the
// whole memory, which is always correct and merely coarser, no candidate
// gets a span (its fragment is not what the prompt carries), and the
// evidence's note says so. Non-system messages ride on their own
// memory:<id> injection beside per-chunk ones. Recalls with nothing to
// inject are skipped.
func Assemble(recalls []MemoryRecall) (string, []Injection) {
	var prompt strings.Builder
	out := []Injection{}
	for i := range recalls {
		rc := &recalls[i]
		system, messages := splitRecall(rc.Messages)
		rc.Messages = nil
		if system == "" && len(messages) == 0 {
			clearFragments(&rc.Evidence)
			continue
		}
		var span *Span
		if system != "" {
			if prompt.Len() > 0 {
				prompt.WriteString("\n\n")
			}
			span = &Span{Start: prompt.Len(), End: prompt.Len() + len(system)}
			prompt.WriteString(system)
			rc.SystemSpan = span
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
		chunks, guarded := chunkInjections(rc, flavor, system, span)
		clearFragments(&rc.Evidence)
		if chunks != nil {
			out = append(out, chunks...)
			if len(messages) > 0 {
				whole.Messages = messages
				out = append(out, whole)
			}
			continue
		}
		if guarded {
			rc.Evidence.Note = strings.TrimSpace(rc.Evidence.Note + " The admitted entries' fragments do not rebuild this memory's recall text byte for byte, so it is injected whole (" + whole.ID + ") and no candidate points into the prompt.")
		}
		whole.SystemSpan, whole.Messages = span, messages
		out = append(out, whole)
	}
	return prompt.String(), out
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

// chunkInjections returns one injection per admitted chunk, and sets the
// admitted candidates' spans, when the recall's fragments rebuild its
// system content exactly; else nil, and whether that was because the guard
// refused them (false: no fragments at all). The guard is an equality check
// on the bytes, each fragment located in place at the offset the ones
// before it and their separators end at, so a hand-edited recall or a
// future formatter change falls back to the coarse path instead of altering
// the prompt or pointing a candidate at text it did not contribute. span is
// where system lies in the prompt.
func chunkInjections(rc *MemoryRecall, flavor, system string, span *Span) ([]Injection, bool) {
	var admitted []*Candidate
	for i := range rc.Evidence.Candidates {
		c := &rc.Evidence.Candidates[i]
		if c.Admitted && c.PromptFragment != nil && c.PromptPosition != nil {
			admitted = append(admitted, c)
		}
	}
	if len(admitted) == 0 || span == nil {
		return nil, len(admitted) > 0
	}
	// Prompt order, not rank order: joining in rank order could rebuild the
	// same bytes in a sequence the model never saw.
	slices.SortStableFunc(admitted, func(a, b *Candidate) int { return cmp.Compare(*a.PromptPosition, *b.PromptPosition) })
	spans := make([]Span, len(admitted))
	at := 0
	for i, c := range admitted {
		if i > 0 {
			if !strings.HasPrefix(system[at:], "\n\n") {
				return nil, true
			}
			at += 2
		}
		frag := *c.PromptFragment
		if !strings.HasPrefix(system[at:], frag) {
			return nil, true
		}
		spans[i] = Span{Start: span.Start + at, End: span.Start + at + len(frag)}
		at += len(frag)
	}
	if at != len(system) {
		return nil, true
	}
	byID := make(map[string]Span, len(admitted))
	out := make([]Injection, len(admitted))
	for i, c := range admitted {
		s := spans[i]
		c.SystemSpan = &s
		byID[c.ID] = s
		inj := Injection{
			ID:         fmt.Sprintf("memory:%s#%s", rc.MemoryID, c.ID),
			Flavor:     flavor,
			SystemSpan: &s,
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
			if t := thresholdFor(rc.Evidence, *c); t != nil {
				v := *t
				inj.Retrieval.Threshold = &v
			}
		}
		out[i] = inj
	}
	spanParts(rc.Evidence.Parts, byID)
	return out, true
}

// spanParts gives a hybrid's parts' admitted candidates the spans of the
// same entries at the top level.
func spanParts(parts []Evidence, byID map[string]Span) {
	for p := range parts {
		for i := range parts[p].Candidates {
			c := &parts[p].Candidates[i]
			if s, ok := byID[c.ID]; ok && c.Admitted && c.PromptFragment != nil {
				c.SystemSpan = &s
			}
		}
		spanParts(parts[p].Parts, byID)
	}
}

// clearFragments drops the rendered fragments from the evidence, parts
// included: the prompt holds their text.
func clearFragments(ev *Evidence) {
	for i := range ev.Candidates {
		ev.Candidates[i].PromptFragment = nil
	}
	for p := range ev.Parts {
		clearFragments(&ev.Parts[p])
	}
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
