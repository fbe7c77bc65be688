package explain_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
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
	prompt := frag + "\n\n" + other
	receipt := recall.RecallResult{RecallID: "rcl_aaaaaaaaaa", Turn: 3, CreatedAt: t0.Add(time.Hour), SystemPrompt: prompt,
		Memories: []recall.MemoryRecall{{MemoryID: "why", Evidence: recall.Evidence{Candidates: []recall.Candidate{
			{ID: "snap-1", Score: &score, Rank: 1, Admitted: true, SystemSpan: spanOf(prompt, frag), PromptPosition: &pos},
			{ID: "snap-2", Rank: 2, Reason: recall.ReasonBelowThreshold},
			{ID: "snap-0", Score: &score, Rank: 3, Admitted: true, SystemSpan: spanOf(prompt, other), PromptPosition: &pos},
		}}}},
		Injections: []recall.Injection{{ID: "memory:why#snap-1", SystemSpan: spanOf(prompt, frag)}}}
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

// TestShownOfferedUnknown: a receipt offers; only a recording shows. Each origin says which
// it is, and suspects are drawn from what was shown.
func TestShownOfferedUnknown(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	entry := func(mem, id, text string) core.Entry {
		v, _ := json.Marshal(core.Message{Role: "user", Content: text})
		return core.Entry{MemoryID: mem, ID: id, Kind: core.KindMessage, Turn: 1, SourceTurn: 1, Value: v, UpdatedAt: t0}
	}
	answer, _ := json.Marshal(core.Snapshot{Query: "q", FinalContent: "refunds take thirty days for damaged items"})
	pos := 0
	// why offered three entries one by one; chat offered two inside one whole-memory injection.
	prompt := "refunds take thirty days\n\ndamaged items are replaced\n\nrefunds for damaged items take thirty days\n\nthirty days refunds\n\ndamaged items"
	at := func(text string) *recall.Span { return spanOf(prompt, text) }
	chatText := &recall.Span{Start: at("thirty days refunds").Start, End: len(prompt)}
	receipt := recall.RecallResult{RecallID: "rcl_b", Turn: 2, CreatedAt: t0.Add(time.Hour), SystemPrompt: prompt,
		Memories: []recall.MemoryRecall{
			{MemoryID: "why", Evidence: recall.Evidence{Candidates: []recall.Candidate{
				{ID: "a", Rank: 1, Admitted: true, SystemSpan: at("refunds take thirty days"), PromptPosition: &pos},
				{ID: "b", Rank: 2, Admitted: true, SystemSpan: at("damaged items are replaced"), PromptPosition: &pos},
				{ID: "c", Rank: 3, Admitted: true, SystemSpan: at("refunds for damaged items take thirty days"), PromptPosition: &pos},
			}}},
			{MemoryID: "chat", SystemSpan: chatText, Evidence: recall.Evidence{Candidates: []recall.Candidate{
				{ID: "m0", Rank: 1, Admitted: true, SystemSpan: at("thirty days refunds"), PromptPosition: &pos},
				{ID: "m1", Rank: 2, Admitted: true, SystemSpan: &recall.Span{Start: len(prompt) - len("damaged items"), End: len(prompt)}, PromptPosition: &pos},
			}}},
		},
		Injections: []recall.Injection{{ID: "memory:why#a", SystemSpan: at("refunds take thirty days")},
			{ID: "memory:why#b", SystemSpan: at("damaged items are replaced")}, {ID: "memory:why#c", SystemSpan: at("refunds for damaged items take thirty days")},
			{ID: "memory:chat", SystemSpan: chatText}}}
	announce := func(iteration int, id string) runs.Event {
		return runs.Event{Type: "context.injected", Payload: json.RawMessage(fmt.Sprintf(`{"slot":"system","sourceId":%q,"iteration":%d}`, id, iteration))}
	}
	// The run showed why#a in both calls and the whole chat injection in the second: not b, not c.
	recording := explain.Recording{RunID: "run-2", Complete: true, Finished: true,
		Events: []runs.Event{announce(1, "memory:why#a"), announce(2, "memory:why#a"), announce(2, "memory:chat")}}
	records := func(recs ...explain.Recording) explain.ExplainRecords {
		return explain.ExplainRecords{Turn: 2,
			Snapshots: []core.Entry{{MemoryID: "why", ID: "snap-2", Kind: core.KindSnapshot, Turn: 2, Value: answer}},
			Recalls:   []recall.RecallResult{receipt}, Recordings: recs,
			Entries: map[string]explain.EntryLookup{
				"why#a": {Entry: entry("why", "a", "x"), Found: true}, "why#b": {Entry: entry("why", "b", "x"), Found: true},
				"why#c": {Entry: entry("why", "c", "x"), Found: true}, "chat#m0": {Entry: entry("chat", "m0", "x"), Found: true},
				"chat#m1": {Entry: entry("chat", "m1", "x"), Found: true}},
			Influence: []explain.InfluenceScorer{{Name: "lexical-overlap", Score: explain.LexicalOverlap}}}
	}
	exposures := func(ex explain.Explanation) map[string]string {
		out := map[string]string{}
		for _, o := range ex.Origins {
			out[o.InjectionID] = o.Exposure
		}
		return out
	}
	suspects := func(ex explain.Explanation) map[string]string {
		out := map[string]string{}
		for _, s := range ex.Suspects {
			out[s.InjectionID] = s.Exposure
		}
		return out
	}

	ex := explain.AssembleExplanation(records(recording))
	want := map[string]string{"memory:why#a": "shown", "memory:why#b": "offered", "memory:why#c": "offered",
		"memory:chat#m0": "shown", "memory:chat#m1": "shown"}
	if got := exposures(ex); !maps.Equal(got, want) {
		t.Errorf("exposures = %v, want %v", got, want)
	}
	for _, o := range ex.Origins {
		switch o.InjectionID {
		case "memory:why#a":
			if !slices.Equal(o.ShownIn, []explain.ShownIn{{RunID: "run-2", Iteration: 1}, {RunID: "run-2", Iteration: 2}}) {
				t.Errorf("why#a shown in %v", o.ShownIn)
			}
		case "memory:chat#m1":
			if !slices.Equal(o.ShownIn, []explain.ShownIn{{RunID: "run-2", Iteration: 2}}) {
				t.Errorf("chat#m1 (inside the whole chat injection) shown in %v", o.ShownIn)
			}
		case "memory:why#b":
			if len(o.ShownIn) != 0 {
				t.Errorf("why#b shown in %v", o.ShownIn)
			}
		}
	}
	// c resembles the answer most, but the model never saw it: no suspect.
	if got := suspects(ex); !maps.Equal(got, map[string]string{"memory:why#a": "shown", "memory:chat#m0": "shown", "memory:chat#m1": "shown"}) {
		t.Errorf("suspects = %v", got)
	}

	// No recording: everything offered is unknown, and the ranking says so.
	bare := explain.AssembleExplanation(records())
	for id, e := range exposures(bare) {
		if e != "unknown" {
			t.Errorf("without a recording, %s is %s", id, e)
		}
	}
	if len(bare.Suspects) != 5 || bare.Suspects[0].InjectionID != "memory:why#c" || bare.Suspects[0].Exposure != "unknown" ||
		!strings.Contains(bare.Suspects[0].Note, "unknown") {
		t.Errorf("suspects without a recording = %+v", bare.Suspects)
	}

	// A recording that lost events (or never finished) cannot say "not shown".
	truncated := recording
	truncated.DroppedEvents = 40
	part := explain.AssembleExplanation(records(truncated))
	if got := exposures(part); got["memory:why#b"] != "unknown" || got["memory:why#a"] != "shown" {
		t.Errorf("truncated recording: exposures %v", got)
	}
	// Shown suspects rank before the unknown ones.
	if s := part.Suspects; len(s) != 5 || s[0].Exposure != "shown" || s[len(s)-1].Exposure != "unknown" {
		t.Errorf("truncated recording: suspects %+v", s)
	}
	open := recording
	open.Complete = false
	if got := exposures(explain.AssembleExplanation(records(open))); got["memory:why#c"] != "unknown" {
		t.Errorf("open recording: exposures %v", got)
	}
}

// spanOf is where text first lies in prompt.
func spanOf(prompt, text string) *recall.Span {
	i := strings.Index(prompt, text)
	if i < 0 {
		panic("not in the prompt: " + text)
	}
	return &recall.Span{Start: i, End: i + len(text)}
}
