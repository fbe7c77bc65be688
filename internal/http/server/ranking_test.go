package server_test

import (
	"math"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
)

// withHashDefaults publishes the built-in embedder as the server does (its Info, calibrated
// ranking defaults included), rather than the bare description the other tests use.
func withHashDefaults(t *testing.T) func(*options) {
	return func(o *options) {
		h, err := embedder.NewHash("hash", 384)
		if err != nil {
			t.Fatal(err)
		}
		info := h.Info()
		info.Default = true
		o.caps.Embedders = []core.EmbedderInfo{info}
	}
}

// TestRecallRankings: each ranking's evidence shows every component it ranked by, the score
// the threshold was compared with and where ranking and threshold came from; the threshold
// holds on that score; an unrelated query is turned away under every ranking's default.
func TestRecallRankings(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"vec","type":"semantic","strategy":{"kind":"topK","topK":3,"ranking":"vector"}}`)
		e.define(`{"id":"lex","type":"semantic","strategy":{"kind":"topK","topK":3,"ranking":"lexical"}}`)
		e.define(`{"id":"dflt","type":"semantic","strategy":{"kind":"topK","topK":3}}`)
		e.define(`{"id":"cut","type":"semantic","strategy":{"kind":"topK","topK":3,"ranking":"hybrid","alpha":0.5,"threshold":0.25}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2}}`)
		for _, body := range []string{
			`{"messages":[{"role":"user","content":"What is the refund window for damaged items?"},{"role":"assistant","content":"Damaged items are refunded within 30 days."}]}`,
			`{"messages":[{"role":"user","content":"Do you ship to Norway?"},{"role":"assistant","content":"Yes, we ship to Norway and Sweden."}]}`,
			`{"messages":[{"role":"user","content":"Where is my parcel?"},{"role":"assistant","content":"Your parcel left the warehouse this morning."}]}`,
		} {
			if r, _ := e.turn("c", body); r.status != 201 {
				t.Fatalf("turn: %d %s", r.status, r.body)
			}
		}
		def := embedder.HashRanking()
		r := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"What is the refund window for damaged items, please?"}`)
		if r.status != 200 {
			t.Fatalf("recall: %d %s", r.status, r.body)
		}
		byMemory := map[string]map[string]any{}
		for _, m := range r.json(t)["memories"].([]any) {
			mm := m.(map[string]any)
			byMemory[mm["memoryId"].(string)] = mm["evidence"].(map[string]any)
		}
		want := []struct {
			memory, ranking, rankingSource, thresholdSource string
			threshold, alpha                                float64
		}{
			{"vec", "vector", "memory", "embedder default", def.Thresholds[core.RankVector], 0},
			{"lex", "lexical", "memory", "embedder default", def.Thresholds[core.RankLexical], 0},
			{"dflt", "hybrid", "embedder default", "embedder default", def.Thresholds[core.RankHybrid], def.Alpha},
			{"cut", "hybrid", "memory", "memory", 0.25, 0.5},
			{"why", "hybrid", "embedder default", "embedder default", def.Thresholds[core.RankHybrid], def.Alpha},
		}
		for _, w := range want {
			ev := byMemory[w.memory]
			if ev["ranking"] != w.ranking || ev["rankingSource"] != w.rankingSource || ev["thresholdOn"] != w.ranking ||
				ev["thresholdSource"] != w.thresholdSource || ev["threshold"] != w.threshold {
				t.Errorf("%s: ranking %v (%v), threshold %v on %v (%v); want %s (%s), %v on %s (%s)", w.memory, ev["ranking"], ev["rankingSource"],
					ev["threshold"], ev["thresholdOn"], ev["thresholdSource"], w.ranking, w.rankingSource, w.threshold, w.ranking, w.thresholdSource)
			}
			if w.alpha != 0 && ev["alpha"] != w.alpha {
				t.Errorf("%s: alpha %v, want %v", w.memory, ev["alpha"], w.alpha)
			}
			cands := ev["candidates"].([]any)
			if len(cands) == 0 {
				t.Fatalf("%s: no candidates", w.memory)
			}
			admitted := 0
			for _, c := range cands {
				c := c.(map[string]any)
				score := c["score"].(float64)
				v, hasV := c["vectorScore"].(float64)
				l, hasL := c["lexicalScore"].(float64)
				switch w.ranking {
				case "vector":
					if !hasV || hasL || v != score {
						t.Errorf("%s %s: score %v, vector %v, lexical %v: a vector ranking's score is its vector score, alone", w.memory, c["id"], score, c["vectorScore"], c["lexicalScore"])
					}
				case "lexical":
					if hasV || !hasL || l != score {
						t.Errorf("%s %s: score %v, vector %v, lexical %v: a lexical ranking's score is its lexical score, alone", w.memory, c["id"], score, c["vectorScore"], c["lexicalScore"])
					}
				case "hybrid":
					if !hasV || !hasL || math.Abs(score-(w.alpha*v+(1-w.alpha)*l)) > 1e-9 {
						t.Errorf("%s %s: score %v from vector %v and lexical %v, want %v·v + %v·l", w.memory, c["id"], score, v, l, w.alpha, 1-w.alpha)
					}
				}
				// The threshold holds on the named score, strictly.
				switch {
				case c["admitted"] == true:
					admitted++
					if !(score > w.threshold) {
						t.Errorf("%s %s admitted at %v, not above the threshold %v", w.memory, c["id"], score, w.threshold)
					}
				case c["reason"] == "below-threshold" && score > w.threshold:
					t.Errorf("%s %s below the threshold at %v > %v", w.memory, c["id"], score, w.threshold)
				}
			}
			if admitted == 0 {
				t.Errorf("%s: nothing admitted for a question the first turn answers: %v", w.memory, cands)
			}
		}
		// The threshold is on the hybrid score, not the vector one: a candidate whose vector
		// score alone clears 0.3 is still turned away when its hybrid score does not.
		for _, c := range byMemory["cut"]["candidates"].([]any) {
			c := c.(map[string]any)
			if c["vectorScore"].(float64) > 0.25 && c["score"].(float64) <= 0.25 && c["reason"] != "below-threshold" {
				t.Errorf("cut %s: vector %v above, hybrid %v not: reason %v", c["id"], c["vectorScore"], c["score"], c["reason"])
			}
		}

		// An unrelated query: below the default threshold under every ranking, nothing injected.
		r = e.do("POST", "/v1/conversations/c/recall", "", `{"query":"zxq unrelated words"}`)
		if r.status != 200 {
			t.Fatalf("recall: %d %s", r.status, r.body)
		}
		body := r.json(t)
		for _, m := range body["memories"].([]any) {
			mm := m.(map[string]any)
			ev := mm["evidence"].(map[string]any)
			if mm["memoryId"] == "cut" {
				continue // its own threshold
			}
			if ev["admittedCount"].(float64) != 0 {
				t.Errorf("%s (%v): an unrelated query admitted %v: %v", mm["memoryId"], ev["ranking"], ev["admittedCount"], ev["candidates"])
			}
			if best, ok := ev["nearestMiss"].(float64); !ok || best >= ev["threshold"].(float64) {
				t.Errorf("%s (%v): nearest miss %v against threshold %v", mm["memoryId"], ev["ranking"], ev["nearestMiss"], ev["threshold"])
			}
		}
		if inj := body["injections"].([]any); len(inj) != 0 {
			t.Errorf("an unrelated query injected %v", inj)
		}
	}, withHashDefaults(t))
}
