package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
)

// fakeLLM is a deterministic chat provider: it answers with reply(n) where n
// counts the calls, or fails when fail is set.
type fakeLLM struct {
	calls atomic.Int64
	reply func(req core.ChatRequest) string
	fail  bool
}

func (f *fakeLLM) Info() core.LLMInfo { return core.LLMInfo{ID: "fake", Model: "tiny"} }

func (f *fakeLLM) Complete(_ context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	f.calls.Add(1)
	if f.fail {
		return core.ChatResponse{}, fmt.Errorf("provider said 503 with secret body: %w", core.ErrUnavailable)
	}
	return core.ChatResponse{Content: f.reply(req), Model: req.Model, InputTokens: 100, OutputTokens: 10}, nil
}

func withLLM(l core.LLM) func(*options) {
	return func(o *options) {
		o.caps.LLMs = []core.LLMInfo{l.Info()}
		o.svc = append(o.svc, app.WithLLMs(l))
	}
}

type foldCase struct {
	Memories []struct {
		Evidence struct {
			AdmittedCount int `json:"admittedCount"`
			Candidates    []struct {
				ID       string
				Admitted bool
			} `json:"candidates"`
			Fold *struct {
				Status       string   `json:"status"`
				SummaryID    string   `json:"summaryId"`
				Covers       []string `json:"covers"`
				InputTokens  int64    `json:"inputTokens"`
				OutputTokens int64    `json:"outputTokens"`
				Reason       string   `json:"reason"`
			} `json:"fold"`
		} `json:"evidence"`
	} `json:"memories"`
	SystemPrompt string `json:"systemPrompt"`
}

func admittedIDs(fc foldCase) string {
	var ids []string
	for _, c := range fc.Memories[0].Evidence.Candidates {
		if c.Admitted {
			ids = append(ids, c.ID)
		}
	}
	return strings.Join(ids, ",")
}

// summarizeScenario defines a summarize memory, posts turns and recalls.
func summarizeScenario(t *testing.T, llm *fakeLLM, strategy string, turns func(e *env)) (*env, func() foldCase) {
	e := setup(t, withLLM(llm))
	e.define(`{"id":"chat","type":"episodic","strategy":` + strategy + `}`)
	turns(e)
	recall := func() foldCase {
		t.Helper()
		var fc foldCase
		r := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"what happened?"}`)
		if r.status != 200 {
			t.Fatalf("recall: %d %s", r.status, r.body)
		}
		if err := jsonUnmarshal(r.body, &fc); err != nil {
			t.Fatal(err)
		}
		return fc
	}
	return e, recall
}

func oneMessageTurns(from, to int) func(*env) {
	return func(e *env) {
		for n := from; n <= to; n++ {
			e.turn("c", fmt.Sprintf(`{"turnNumber":%d,"messages":[{"role":"user","content":"message number %d with enough words to be worth summarising"}]}`, n, n))
		}
	}
}

func TestSummarizeFolds(t *testing.T) {
	t.Parallel()
	short := func(core.ChatRequest) string { return "A short summary." }

	t.Run("ten entries, trigger 5, keep 3", func(t *testing.T) {
		t.Parallel()
		llm := &fakeLLM{reply: short}
		_, recall := summarizeScenario(t, llm, `{"kind":"summarize","recent":3,"size":5,"llm":"fake","model":"tiny"}`, oneMessageTurns(1, 10))
		fc := recall()
		fold := fc.Memories[0].Evidence.Fold
		if fold == nil || fold.Status != "folded" || fold.SummaryID != "msg-summary-1-7" || len(fold.Covers) != 7 || fold.InputTokens != 100 {
			t.Fatalf("fold = %+v", fold)
		}
		if got := admittedIDs(fc); got != "msg-summary-1-7,msg-10-0,msg-9-0,msg-8-0" {
			t.Errorf("admitted = %s", got)
		}
		if !strings.Contains(fc.SystemPrompt, "A short summary.") || strings.Contains(fc.SystemPrompt, "message number 3 ") {
			t.Errorf("prompt:\n%s", fc.SystemPrompt)
		}
		// The summary was written back: the next recall pays nothing.
		again := recall()
		if llm.calls.Load() != 1 || again.Memories[0].Evidence.Fold.Status != "reused" || admittedIDs(again) != admittedIDs(fc) {
			t.Errorf("second recall: calls %d, fold %+v, admitted %s", llm.calls.Load(), again.Memories[0].Evidence.Fold, admittedIDs(again))
		}
	})

	t.Run("turns 100 to 107 keeping 2", func(t *testing.T) {
		t.Parallel()
		_, recall := summarizeScenario(t, &fakeLLM{reply: short}, `{"kind":"summarize","recent":2,"llm":"fake","model":"tiny"}`, oneMessageTurns(100, 107))
		if fold := recall().Memories[0].Evidence.Fold; fold.SummaryID != "msg-summary-100-105" {
			t.Errorf("fold = %+v", fold)
		}
	})

	t.Run("whole turns", func(t *testing.T) {
		t.Parallel()
		_, recall := summarizeScenario(t, &fakeLLM{reply: short}, `{"kind":"summarize","recent":3,"size":4,"llm":"fake","model":"tiny"}`, func(e *env) {
			for n := 1; n <= 5; n++ {
				e.turn("c", fmt.Sprintf(`{"messages":[{"role":"user","content":"question %d about the order and its delivery"},{"role":"assistant","content":"answer %d about the order and its delivery"}]}`, n, n))
			}
		})
		fc := recall()
		if fold := fc.Memories[0].Evidence.Fold; fold.SummaryID != "msg-summary-1-3" {
			t.Errorf("fold = %+v (the tail keeps turn 4 whole)", fold)
		}
		if got := admittedIDs(fc); got != "msg-summary-1-3,msg-5-1,msg-5-0,msg-4-1,msg-4-0" {
			t.Errorf("admitted = %s", got)
		}
	})

	t.Run("six entries keeping five: no fold", func(t *testing.T) {
		t.Parallel()
		llm := &fakeLLM{reply: short}
		_, recall := summarizeScenario(t, llm, `{"kind":"summarize","recent":5,"llm":"fake","model":"tiny"}`, oneMessageTurns(1, 6))
		if fold := recall().Memories[0].Evidence.Fold; fold.Status != "none" || llm.calls.Load() != 0 {
			t.Errorf("fold = %+v, calls %d", fold, llm.calls.Load())
		}
	})

	t.Run("a failing model leaves recall verbatim", func(t *testing.T) {
		t.Parallel()
		llm := &fakeLLM{fail: true}
		e, recall := summarizeScenario(t, llm, `{"kind":"summarize","recent":3,"size":5,"llm":"fake","model":"tiny"}`, oneMessageTurns(1, 10))
		fc := recall()
		fold := fc.Memories[0].Evidence.Fold
		if fold.Status != "failed" || strings.Contains(fold.Reason, "secret") || fc.Memories[0].Evidence.AdmittedCount != 5 {
			t.Errorf("fold = %+v, admitted %d", fold, fc.Memories[0].Evidence.AdmittedCount)
		}
		if n := len(e.do("GET", "/v1/conversations/c/entries?kind=summary", "", "").json(t)["entries"].([]any)); n != 0 {
			t.Errorf("a failed fold stored %d summaries", n)
		}
	})

	t.Run("a summary no shorter is refused and not asked again", func(t *testing.T) {
		t.Parallel()
		llm := &fakeLLM{reply: func(req core.ChatRequest) string { return strings.Repeat("long ", 400) }}
		_, recall := summarizeScenario(t, llm, `{"kind":"summarize","recent":3,"size":5,"llm":"fake","model":"tiny"}`, oneMessageTurns(1, 10))
		if fold := recall().Memories[0].Evidence.Fold; fold.Status != "refused" {
			t.Errorf("fold = %+v", fold)
		}
		if fold := recall().Memories[0].Evidence.Fold; fold.Status == "folded" || llm.calls.Load() != 1 {
			t.Errorf("asked again: fold %+v, calls %d", fold, llm.calls.Load())
		}
	})
}

var errNotJSON = errors.New("not JSON")

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", errNotJSON, err)
	}
	return nil
}

func TestLLMExtraction(t *testing.T) {
	t.Parallel()
	replies := []string{
		`{"facts":[{"key":"name","value":"Ada","confidence":0.95},{"key":"likes:tea","value":"green tea","confidence":0.4}]}`,
		`{"facts":[{"key":"name"}]}`, // invalid: no value or confidence
		`not json at all`,
	}
	var n atomic.Int64
	llm := &fakeLLM{reply: func(req core.ChatRequest) string {
		if req.JSONSchema == nil {
			t.Errorf("extraction did not ask for a JSON schema")
		}
		return replies[int(n.Add(1)-1)%len(replies)]
	}}
	e := setup(t, withLLM(llm))
	e.define(`{"id":"facts","type":"semantic","strategy":{"kind":"extract","extractor":"llm","llm":"fake","model":"tiny","minConfidence":0.5}}`)
	turn := func() map[string]any {
		r := e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"My name is Grace and I live in Oslo."},{"role":"assistant","content":"Noted."}]}`)
		if r.status != 201 {
			t.Fatalf("turn: %d %s", r.status, r.body)
		}
		return r.json(t)
	}
	first := turn()
	note := first["extraction"].([]any)[0].(map[string]any)
	if note["extractor"] != "llm" || note["inputTokens"].(float64) != 100 {
		t.Errorf("first note = %v", note)
	}
	ids := first["written"].([]any)[0].(map[string]any)["ids"].([]any)
	if len(ids) != 1 || ids[0] != "fact:name" {
		t.Errorf("written = %v (minConfidence 0.5 drops likes:tea)", ids)
	}
	for _, want := range []string{"rejected", "rejected"} {
		res := turn()
		note := res["extraction"].([]any)[0].(map[string]any)
		if note["extractor"] != "pattern" || !strings.Contains(note["fallbackReason"].(string), want) {
			t.Errorf("fallback note = %v", note)
		}
	}
	fact := e.do("GET", "/v1/conversations/c/entries/fact:location?memory=facts", "", "")
	if fact.status != 200 {
		t.Errorf("the pattern fallback did not store fact:location: %d", fact.status)
	}
}
