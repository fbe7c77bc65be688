package explain_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
)

func TestAblationVerdicts(t *testing.T) {
	t.Parallel()
	const id = "memory:why#snap-1"
	ab := func(flipped bool, excluded ...string) explain.Ablation {
		return explain.Ablation{Excluded: excluded, Flipped: flipped}
	}
	tests := []struct {
		name    string
		reruns  []explain.Ablation
		verdict string
	}{
		{"never excluded", []explain.Ablation{ab(true, "memory:x#y")}, "untested"},
		{"2 of 3 flips", []explain.Ablation{ab(true, id), ab(false, id), ab(true, id)}, "confirmed"},
		{"one flip is not a majority of two", []explain.Ablation{ab(true, id)}, "inconclusive"},
		{"1 of 2 flips", []explain.Ablation{ab(true, id), ab(false, id)}, "inconclusive"},
		{"no flips", []explain.Ablation{ab(false, id), ab(false, id)}, "not-confirmed"},
		{"baseline flip", []explain.Ablation{ab(true, id), ab(true, id), ab(true)}, "inconclusive"},
		{"stable baseline", []explain.Ablation{ab(true, id), ab(true, id), ab(false)}, "confirmed"},
	}
	for _, tc := range tests {
		if got, _, _ := explain.Verdict(id, tc.reruns); got != tc.verdict {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.verdict)
		}
	}
}

func TestLexicalOverlap(t *testing.T) {
	t.Parallel()
	if s, ok := explain.LexicalOverlap("Refunds within 30 days of purchase", "We refund within 30 days"); !ok || s <= 0 || s > 1 {
		t.Errorf("overlap = %v, %v", s, ok)
	}
	if _, ok := explain.LexicalOverlap("anything", ""); ok {
		t.Errorf("an empty answer has no overlap to score")
	}
	hi, _ := explain.LexicalOverlap("refunds are issued within 30 days", "refunds are issued within 30 days")
	lo, _ := explain.LexicalOverlap("shipping takes two days", "refunds are issued within 30 days")
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
	receipt := recall.RecallResult{RecallID: "rcl_aaaaaaaaaa", Turn: 3, CreatedAt: t0.Add(time.Hour),
		Memories: []recall.MemoryRecall{{MemoryID: "why", Evidence: recall.Evidence{Candidates: []recall.Candidate{
			{ID: "snap-1", Score: &score, Rank: 1, Admitted: true, PromptFragment: &frag, PromptPosition: &pos},
			{ID: "snap-2", Rank: 2, Reason: recall.ReasonBelowThreshold},
			{ID: "snap-0", Score: &score, Rank: 3, Admitted: true, PromptFragment: &other, PromptPosition: &pos},
		}}}},
		Injections: []recall.Injection{{ID: "memory:why#snap-1", SystemPrompt: frag}}}
	payload := `{"slot":"system","source":"memory","sourceId":"memory:why#snap-1","contentHash":42,"iteration":1}`
	recs := explain.ExplainRecords{
		Turn:      3,
		Snapshots: []core.Entry{snap(3, "run-3", "How long do refunds take?", "We refund within 30 days.")},
		Recalls:   []recall.RecallResult{receipt},
		Recordings: []explain.Recording{{RunID: "run-3", Complete: false, DroppedEvents: 5, Events: []runs.Event{
			{Type: "context.injected", Payload: json.RawMessage(payload)},
			{Type: "context.injected", Payload: json.RawMessage(payload)},
			{Type: "llm.call", Payload: json.RawMessage(`{}`)},
		}}},
		Entries: map[string]explain.EntryLookup{
			"why#snap-1": {Entry: snap(1, "run-1", "What is the refund window?", "30 days."), Found: true},
			"why#snap-0": {Found: false, Forgotten: true},
		},
		Influence: []explain.InfluenceScorer{{Name: "lexical-overlap", Score: explain.LexicalOverlap}},
	}
	ex := explain.AssembleExplanation(recs)
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
	bare := explain.AssembleExplanation(explain.ExplainRecords{Turn: 9})
	flags = flags[:0]
	for _, h := range bare.Honesty {
		flags = append(flags, h.Flag)
	}
	if !slices.Equal(flags, []string{"no-answer", "no-recording", "no-recall-linked"}) {
		t.Errorf("bare flags = %v", flags)
	}
}
