package core_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
)

func TestAblationVerdicts(t *testing.T) {
	t.Parallel()
	const id = "memory:why#snap-1"
	ab := func(flipped bool, excluded ...string) core.Ablation {
		return core.Ablation{Excluded: excluded, Flipped: flipped}
	}
	tests := []struct {
		name    string
		reruns  []core.Ablation
		verdict string
	}{
		{"never excluded", []core.Ablation{ab(true, "memory:x#y")}, "untested"},
		{"2 of 3 flips", []core.Ablation{ab(true, id), ab(false, id), ab(true, id)}, "confirmed"},
		{"one flip is not a majority of two", []core.Ablation{ab(true, id)}, "inconclusive"},
		{"1 of 2 flips", []core.Ablation{ab(true, id), ab(false, id)}, "inconclusive"},
		{"no flips", []core.Ablation{ab(false, id), ab(false, id)}, "not-confirmed"},
		{"baseline flip", []core.Ablation{ab(true, id), ab(true, id), ab(true)}, "inconclusive"},
		{"stable baseline", []core.Ablation{ab(true, id), ab(true, id), ab(false)}, "confirmed"},
	}
	for _, tc := range tests {
		if got, _, _ := core.Verdict(id, tc.reruns); got != tc.verdict {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.verdict)
		}
	}
}

func TestLexicalOverlap(t *testing.T) {
	t.Parallel()
	if s, ok := core.LexicalOverlap("Refunds within 30 days of purchase", "We refund within 30 days"); !ok || s <= 0 || s > 1 {
		t.Errorf("overlap = %v, %v", s, ok)
	}
	if _, ok := core.LexicalOverlap("anything", ""); ok {
		t.Errorf("an empty answer has no overlap to score")
	}
	hi, _ := core.LexicalOverlap("refunds are issued within 30 days", "refunds are issued within 30 days")
	lo, _ := core.LexicalOverlap("shipping takes two days", "refunds are issued within 30 days")
	if hi != 1 || lo >= hi {
		t.Errorf("identical %v, unrelated %v", hi, lo)
	}
}

func TestAssembleExplanationChainAndFlags(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	snap := func(turn int, run, query, answer string) core.Entry {
		v, _ := json.Marshal(core.Snapshot{Query: query, FinalContent: answer})
		return core.Entry{MemoryID: "why", ID: "snap-" + string(rune('0'+turn)), Kind: core.KindSnapshot, Turn: turn, SourceTurn: turn, SourceRunID: run, Value: v, UpdatedAt: t0}
	}
	score := 0.9
	frag := "Past decision (turn 1): refunds within 30 days"
	pos := 0
	other := "Past decision (turn 0): shipping is free"
	recall := core.RecallResult{RecallID: "rcl_aaaaaaaaaa", Turn: 3, CreatedAt: t0.Add(time.Hour),
		Memories: []core.MemoryRecall{{MemoryID: "why", Evidence: core.Evidence{Candidates: []core.Candidate{
			{ID: "snap-1", Score: &score, Rank: 1, Admitted: true, PromptFragment: &frag, PromptPosition: &pos},
			{ID: "snap-2", Rank: 2, Reason: core.ReasonBelowThreshold},
			{ID: "snap-0", Score: &score, Rank: 3, Admitted: true, PromptFragment: &other, PromptPosition: &pos},
		}}}},
		Injections: []core.Injection{{ID: "memory:why#snap-1", SystemPrompt: frag}}}
	payload := `{"slot":"system","source":"memory","sourceId":"memory:why#snap-1","contentHash":42,"iteration":1}`
	recs := core.ExplainRecords{
		Turn:      3,
		Snapshots: []core.Entry{snap(3, "run-3", "How long do refunds take?", "We refund within 30 days.")},
		Recalls:   []core.RecallResult{recall},
		Recordings: []core.Recording{{RunID: "run-3", Complete: false, DroppedEvents: 5, Events: []core.Event{
			{Type: "context.injected", Payload: json.RawMessage(payload)},
			{Type: "context.injected", Payload: json.RawMessage(payload)},
			{Type: "llm.call", Payload: json.RawMessage(`{}`)},
		}}},
		Entries: map[string]core.EntryLookup{
			"why#snap-1": {Entry: snap(1, "run-1", "What is the refund window?", "30 days."), Found: true},
			"why#snap-0": {Found: false, Forgotten: true},
		},
		Influence: []core.InfluenceScorer{{Name: "lexical-overlap", Score: core.LexicalOverlap}},
	}
	ex := core.AssembleExplanation(recs)
	if ex.Answer.Source != "snapshot" || ex.Answer.RunID != "run-3" || ex.Answer.Snapshot.FinalContent != "We refund within 30 days." {
		t.Errorf("answer = %+v", ex.Answer)
	}
	if len(ex.Context.Runs) != 1 || len(ex.Context.Runs[0].Calls) != 1 || ex.Context.Runs[0].Calls[0].Pieces[0].Repeats != 1 ||
		ex.Context.Runs[0].Calls[0].Pieces[0].SourceID != "memory:why#snap-1" {
		t.Errorf("ledger = %+v", ex.Context.Runs)
	}
	if len(ex.Origins) != 2 || ex.Origins[0].Status != "present" || ex.Origins[0].Entry.RunID != "run-1" || ex.Origins[0].Entry.Turn != 1 ||
		ex.Origins[1].Status != "forgotten" {
		t.Errorf("origins = %+v", ex.Origins)
	}
	var flags []string
	for _, h := range ex.Honesty {
		flags = append(flags, h.Flag)
	}
	for _, want := range []string{"recording-truncated", "recording-incomplete", "entry-missing"} {
		if !slices.Contains(flags, want) {
			t.Errorf("flags %v lack %s", flags, want)
		}
	}
	if slices.Contains(flags, "no-recording") || slices.Contains(flags, "no-recall-linked") {
		t.Errorf("flags %v claim missing links that exist", flags)
	}
	if len(ex.Suspects) == 0 || ex.Suspects[0].InjectionID != "memory:why#snap-1" || ex.Suspects[0].Verdict != "untested" {
		t.Errorf("suspects = %+v", ex.Suspects)
	}
	bare := core.AssembleExplanation(core.ExplainRecords{Turn: 9})
	flags = flags[:0]
	for _, h := range bare.Honesty {
		flags = append(flags, h.Flag)
	}
	if !slices.Equal(flags, []string{"no-answer", "no-recording", "no-recall-linked"}) {
		t.Errorf("bare flags = %v", flags)
	}
}
