package strategies_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// decode turns a JSON literal into the value a request body would carry.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func refusal(t *testing.T, err error) *core.ValidationError {
	t.Helper()
	var ve *core.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want *core.ValidationError", err)
	}
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("error does not unwrap to ErrInvalid")
	}
	return ve
}

func fixJSON(t *testing.T, ve *core.ValidationError) string {
	t.Helper()
	b, err := json.Marshal(ve.Fix)
	if err != nil {
		t.Fatalf("fix does not marshal: %v", err)
	}
	return string(b)
}

// minimal is a working strategy per kind on the full deployment.
var minimal = map[core.StrategyKind]string{
	core.Window:    `{"kind":"window"}`,
	core.Budget:    `{"kind":"budget"}`,
	core.Summarize: `{"kind":"summarize","llm":"openai","model":"gpt-4o-mini"}`,
	core.TopK:      `{"kind":"topK"}`,
	core.Extract:   `{"kind":"extract"}`,
	core.Decay:     `{"kind":"decay"}`,
	core.Hybrid:    `{"kind":"hybrid","strategies":[{"kind":"window","size":5}]}`,
}

func TestTypeKindMatrix(t *testing.T) {
	t.Parallel()
	accepts := map[core.MemoryType][]core.StrategyKind{
		core.Episodic:  {core.Window, core.Budget, core.Summarize, core.Decay, core.Hybrid},
		core.Semantic:  {core.Window, core.TopK, core.Extract, core.Hybrid},
		core.Narrative: {core.Window, core.Extract, core.Hybrid},
		core.Causal:    {core.TopK},
	}
	for _, typ := range core.MemoryTypes {
		for _, kind := range strategies.StrategyKinds() {
			strategy := minimal[kind]
			if kind == core.Hybrid && typ == core.Semantic {
				strategy = `{"kind":"hybrid","strategies":[{"kind":"window","size":5},{"kind":"topK"}]}`
			}
			_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: string(typ), Strategy: decode(t, strategy)}, full)
			if slices.Contains(accepts[typ], kind) {
				if err != nil {
					t.Errorf("%s × %s refused: %v", typ, kind, err)
				}
				continue
			}
			ve := refusal(t, err)
			if ve.Code != core.CodeStrategyNotForType || ve.Path != "strategy.kind" {
				t.Errorf("%s × %s: code %q path %q, want strategy-not-for-type at strategy.kind", typ, kind, ve.Code, ve.Path)
			}
			for _, k := range accepts[typ] {
				if !strings.Contains(ve.Detail, "`"+string(k)+"`") {
					t.Errorf("%s × %s: detail does not name accepted kind %s: %s", typ, kind, k, ve.Detail)
				}
			}
			if !slices.Equal(ve.Extra["acceptedKinds"].([]core.StrategyKind), accepts[typ]) {
				t.Errorf("%s × %s: acceptedKinds = %v", typ, kind, ve.Extra["acceptedKinds"])
			}
		}
	}
}

func TestTopKOnEpisodicSaysUseSemantic(t *testing.T) {
	t.Parallel()
	_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "chat", Type: "episodic", Strategy: decode(t, `{"kind":"topK","topK":3}`)}, full)
	ve := refusal(t, err)
	if !strings.Contains(ve.Detail, "use type `semantic`") {
		t.Errorf("detail %q does not point at type semantic", ve.Detail)
	}
}

func TestShapeRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, strategy, path, fix string
		code                      string
	}{
		{"bare kind string", `"window"`, "strategy", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"bare other kind string gets that kind's fix", `"budget"`, "strategy", `{"kind":"budget","maxEntries":20}`, core.CodeInvalidStrategy},
		{"miscased kind string", `"TopK"`, "strategy", `{"kind":"topK","topK":3,"embedder":"hash"}`, core.CodeInvalidStrategy},
		{"unknown string", `"lru"`, "strategy", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"null", `null`, "strategy", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"number", `42`, "strategy", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"array", `["window"]`, "strategy", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"empty object", `{}`, "strategy.kind", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"kind not a string", `{"kind":7}`, "strategy.kind", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"hybrid without strategies", `{"kind":"hybrid"}`, "strategy.strategies", `{"kind":"hybrid","strategies":[{"kind":"window","size":20}]}`, core.CodeInvalidStrategy},
		{"hybrid with empty strategies", `{"kind":"hybrid","strategies":[]}`, "strategy.strategies", `{"kind":"hybrid","strategies":[{"kind":"window","size":20}]}`, core.CodeInvalidStrategy},
		{"hybrid with non-array strategies", `{"kind":"hybrid","strategies":{"kind":"window"}}`, "strategy.strategies", `{"kind":"hybrid","strategies":[{"kind":"window","size":20}]}`, core.CodeInvalidStrategy},
		{"nested path", `{"kind":"hybrid","strategies":[{"kind":"window"},"budget"]}`, "strategy.strategies[1]", `{"kind":"budget","maxEntries":20}`, core.CodeInvalidStrategy},
		{"nested hybrid path", `{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"hybrid","strategies":[{}]}]}`, "strategy.strategies[1].strategies[0].kind", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"shape before dispatch", `{"kind":"hybrid","strategies":[{"kind":"nope"},{}]}`, "strategy.strategies[1].kind", `{"kind":"window","size":20}`, core.CodeInvalidStrategy},
		{"unknown kind", `{"kind":"lru"}`, "strategy.kind", `{"kind":"window","size":20}`, core.CodeUnknownStrategy},
		{"miscased kind", `{"kind":"topk"}`, "strategy.kind", `{"kind":"topK","topK":3,"embedder":"hash"}`, core.CodeUnknownStrategy},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "chat", Type: "episodic", Strategy: decode(t, tc.strategy)}, full)
			ve := refusal(t, err)
			if ve.Code != tc.code || ve.Path != tc.path {
				t.Errorf("code %q path %q, want %q at %q (detail: %s)", ve.Code, ve.Path, tc.code, tc.path, ve.Detail)
			}
			if got := fixJSON(t, ve); got != tc.fix {
				t.Errorf("fix %s, want %s", got, tc.fix)
			}
			if ve.Site != "defineMemory[chat]" || ve.See != "/v1/strategies" {
				t.Errorf("site %q see %q", ve.Site, ve.See)
			}
		})
	}
}

func TestRequirementRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ, strategy, embedder string
		caps                          core.Capabilities
		path, detail                  string
	}{
		{"summarize without llm configured", "episodic", `{"kind":"summarize","model":"m"}`, "", bare, "strategy.llm", "no LLM provider configured"},
		{"summarize names unknown llm", "episodic", `{"kind":"summarize","llm":"nope","model":"m"}`, "", full, "strategy.llm", "`nope`"},
		{"summarize without model", "episodic", `{"kind":"summarize","llm":"openai"}`, "", full, "strategy.model", "needs a `model`"},
		{"summarize blank model", "episodic", `{"kind":"summarize","llm":"openai","model":"  "}`, "", full, "strategy.model", "needs a `model`"},
		{"topK without embedder", "semantic", `{"kind":"topK"}`, "", bare, "strategy.embedder", "none configured"},
		{"topK names unknown embedder", "semantic", `{"kind":"topK","embedder":"ada"}`, "", full, "strategy.embedder", "`ada`"},
		{"topK without vector store", "causal", `{"kind":"topK"}`, "", core.Capabilities{Embedders: full.Embedders, Store: core.StoreInfo{Kind: "flat"}}, "strategy", "ranks vectors"},
		{"inside hybrid", "episodic", `{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"summarize","llm":"openai"}]}`, "", full, "strategy.strategies[1].model", "inside `hybrid`"},
		{"topK inside hybrid without embedder", "semantic", `{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"topK"}]}`, "", bare, "strategy.strategies[1].embedder", "inside `hybrid`"},
		{"extract llm without llm", "semantic", `{"kind":"extract","extractor":"llm","model":"m"}`, "", bare, "strategy.llm", "no LLM provider"},
		{"memory embedder unknown", "semantic", `{"kind":"topK"}`, "ada", full, "embedder", "`ada`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: tc.typ, Strategy: decode(t, tc.strategy), Embedder: tc.embedder}, tc.caps)
			ve := refusal(t, err)
			if ve.Code != core.CodeMissingRequirement || ve.Path != tc.path || !strings.Contains(ve.Detail, tc.detail) {
				t.Errorf("got %s at %q: %s; want missing-requirement at %q containing %q", ve.Code, ve.Path, ve.Detail, tc.path, tc.detail)
			}
		})
	}
}

func TestFieldRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ, strategy, path, code string
	}{
		{"window size zero", "episodic", `{"kind":"window","size":0}`, "strategy.size", core.CodeInvalidField},
		{"window size fractional", "episodic", `{"kind":"window","size":2.5}`, "strategy.size", core.CodeInvalidField},
		{"window size string", "episodic", `{"kind":"window","size":"20"}`, "strategy.size", core.CodeInvalidField},
		{"window size huge", "episodic", `{"kind":"window","size":1e300}`, "strategy.size", core.CodeInvalidField},
		{"decay negative half-life", "episodic", `{"kind":"decay","halfLifeMs":-1}`, "strategy.halfLifeMs", core.CodeInvalidField},
		{"summarize recent not below size", "episodic", `{"kind":"summarize","recent":10,"size":10,"llm":"openai","model":"m"}`, "strategy.recent", core.CodeInvalidField},
		{"summarize recent zero", "episodic", `{"kind":"summarize","recent":0,"llm":"openai","model":"m"}`, "strategy.recent", core.CodeInvalidField},
		{"topK zero", "semantic", `{"kind":"topK","topK":0}`, "strategy.topK", core.CodeInvalidField},
		{"threshold out of range", "semantic", `{"kind":"topK","threshold":1.5}`, "strategy.threshold", core.CodeInvalidField},
		{"unknown field", "episodic", `{"kind":"window","sise":20}`, "strategy.sise", core.CodeUnknownField},
		{"extractor enum", "semantic", `{"kind":"extract","extractor":"regex"}`, "strategy.extractor", core.CodeInvalidField},
		{"NUL in model", "episodic", "{\"kind\":\"summarize\",\"llm\":\"openai\",\"model\":\"a\\u0000b\"}", "strategy.model", core.CodeInvalidField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: tc.typ, Strategy: decode(t, tc.strategy)}, full)
			ve := refusal(t, err)
			if ve.Code != tc.code || ve.Path != tc.path {
				t.Errorf("got %s at %q (%s), want %s at %q", ve.Code, ve.Path, ve.Detail, tc.code, tc.path)
			}
			if ve.Fix == nil {
				t.Errorf("no fix")
			}
		})
	}
}

func TestMemoryFieldRules(t *testing.T) {
	t.Parallel()
	ttl := int64(0)
	tests := []struct {
		name string
		p    strategies.MemoryParams
		path string
	}{
		{"empty id", strategies.MemoryParams{Type: "episodic"}, "id"},
		{"id with slash", strategies.MemoryParams{ID: "a/b", Type: "episodic"}, "id"},
		{"unknown type", strategies.MemoryParams{ID: "m", Type: "vector"}, "type"},
		{"zero ttl", strategies.MemoryParams{ID: "m", Type: "episodic", TTLMs: &ttl}, "ttlMs"},
		{"bad tier", strategies.MemoryParams{ID: "m", Type: "episodic", Tier: "lukewarm"}, "tier"},
		{"projection on episodic", strategies.MemoryParams{ID: "m", Type: "episodic", Projection: "full"}, "projection"},
		{"corpus on episodic", strategies.MemoryParams{ID: "m", Type: "episodic", Corpus: true}, "corpus"},
		{"bad flavor", strategies.MemoryParams{ID: "m", Type: "episodic", Flavor: "x"}, "flavor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.p.Strategy == nil {
				tc.p.Strategy = decode(t, `{"kind":"window"}`)
			}
			ve := refusal(t, func() error { _, err := strategies.ValidateMemory(tc.p, full); return err }())
			if ve.Path != tc.path {
				t.Errorf("path %q (%s), want %q", ve.Path, ve.Detail, tc.path)
			}
		})
	}
}

func TestNormalisedStrategyRoundTrips(t *testing.T) {
	t.Parallel()
	m, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: "episodic",
		Strategy: decode(t, `{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"budget","maxEntries":3}]}`)}, full)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m.Strategy)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"hybrid","strategies":[{"kind":"window","size":20},{"kind":"budget","maxEntries":3,"reserveTokens":256,"minimumTokens":100}]}`
	if string(b) != want {
		t.Errorf("normalised = %s\nwant        %s", b, want)
	}
	var back core.Strategy
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(m.Strategy) {
		t.Errorf("round trip changed the strategy")
	}
	if _, err := strategies.ParseStored([]byte(`{"kind":"window","size":-1}`)); err == nil {
		t.Errorf("a corrupt stored strategy was accepted")
	}
}

// A hybrid's topK parts share the memory's one vector space: parts that use different
// embedders are refused when the memory is defined. A part that names none uses the memory's
// embedder, else the deployment's default, and agrees with a part that names that one.
func TestHybridTopKPartsShareOneEmbedder(t *testing.T) {
	t.Parallel()
	two := core.Capabilities{Embedders: []core.EmbedderInfo{
		{ID: "hash", Kind: "hash", Dimensions: 384, Default: true}, {ID: "ada", Kind: "openai", Dimensions: 1536}},
		Store: core.StoreInfo{Kind: "postgres", RanksVectors: true}}
	for _, tc := range []struct {
		strategy, memoryEmbedder string
		ok                       bool
	}{
		// The default is hash: a part without `embedder` and one naming hash agree.
		{`{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"hash"},{"kind":"topK"}]}`, "", true},
		{`{"kind":"hybrid","strategies":[{"kind":"topK"},{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"hash","topK":2}]}]}`, "", true},
		{`{"kind":"hybrid","strategies":[{"kind":"topK","topK":1},{"kind":"topK","topK":5}]}`, "", true},
		// A part naming ada and one using the default (hash) do not.
		{`{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"ada"},{"kind":"topK"}]}`, "", false},
		{`{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"hash"}]},{"kind":"topK","embedder":"ada"}]}`, "", false},
		// The memory's embedder comes before the default.
		{`{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"ada"},{"kind":"topK"}]}`, "ada", true},
		{`{"kind":"hybrid","strategies":[{"kind":"topK","embedder":"hash"},{"kind":"topK"}]}`, "ada", false},
	} {
		_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: "semantic", Embedder: tc.memoryEmbedder,
			Strategy: decode(t, tc.strategy)}, two)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s (memory embedder %q): refused: %v", tc.strategy, tc.memoryEmbedder, err)
		case !tc.ok && err == nil:
			t.Errorf("%s (memory embedder %q): accepted", tc.strategy, tc.memoryEmbedder)
		case !tc.ok:
			if ve := refusal(t, err); ve.Path != "strategy.strategies" || !strings.Contains(ve.Detail, "different embedders") {
				t.Errorf("%s: path %q detail %q", tc.strategy, ve.Path, ve.Detail)
			}
		}
	}
}

// TestRankingFields: `ranking` and `alpha` are validated like every field, with a refusal that
// names the field and a fix, and resolve with the embedder's defaults when absent.
func TestRankingFields(t *testing.T) {
	t.Parallel()
	define := func(strategy string) (core.Memory, error) {
		return strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: "semantic", Strategy: decode(t, strategy)}, full)
	}
	for _, c := range []struct{ strategy, path, detail, fix string }{
		{`{"kind":"topK","ranking":"bm25"}`, "strategy.ranking", "must be one of `vector`, `lexical`, `hybrid`; got \"bm25\"", ""},
		{`{"kind":"topK","alpha":0.4}`, "strategy.alpha", "does not set `ranking: \"hybrid\"`", `{"alpha":0.4,"kind":"topK","ranking":"hybrid"}`},
		{`{"kind":"topK","ranking":"lexical","alpha":0.4}`, "strategy.alpha", "with `ranking: \"lexical\"` it would weigh nothing", `{"alpha":0.4,"kind":"topK","ranking":"hybrid"}`},
		{`{"kind":"topK","ranking":"hybrid","alpha":1.5}`, "strategy.alpha", "must be a finite number from 0 to 1; got 1.5", ""},
		{`{"kind":"topK","ranking":3}`, "strategy.ranking", "must be one of", ""},
	} {
		_, err := define(c.strategy)
		ve := refusal(t, err)
		if ve.Code != core.CodeInvalidField || ve.Path != c.path || !strings.Contains(ve.Detail, c.detail) {
			t.Errorf("%s: %s at %s: %s; want %s naming %q", c.strategy, ve.Code, ve.Path, ve.Detail, c.path, c.detail)
		}
		if c.fix != "" && fixJSON(t, ve) != c.fix {
			t.Errorf("%s: fix %s, want %s", c.strategy, fixJSON(t, ve), c.fix)
		}
		if ve.Fix == nil {
			t.Errorf("%s: no fix", c.strategy)
		}
	}
	m, err := define(`{"kind":"topK","ranking":"hybrid","alpha":0.4,"threshold":0.2}`)
	if err != nil {
		t.Fatal(err)
	}
	set := strategies.ResolveTopK(m.Strategy, m, full)
	if set.Ranking != core.RankHybrid || set.RankingSource != strategies.SourceMemory || set.Alpha != 0.4 ||
		set.Threshold == nil || *set.Threshold != 0.2 || set.ThresholdSource != strategies.SourceMemory {
		t.Errorf("set fields: %+v", set)
	}
	// Unset: the embedder's defaults; none calibrated: a causal memory's seed 0.7, else none.
	caps := full
	caps.Embedders = slices.Clone(full.Embedders)
	caps.Embedders[0].Ranking = core.RankingDefaults{Ranking: core.RankHybrid, Alpha: 0.3,
		Thresholds: map[core.Ranking]float64{core.RankHybrid: 0.15, core.RankLexical: 0.1}}
	m, _ = define(`{"kind":"topK"}`)
	set = strategies.ResolveTopK(m.Strategy, m, caps)
	if set.Ranking != core.RankHybrid || set.RankingSource != strategies.SourceEmbedderDefault || set.Alpha != 0.3 ||
		set.Threshold == nil || *set.Threshold != 0.15 || set.ThresholdSource != strategies.SourceEmbedderDefault {
		t.Errorf("defaults: %+v", set)
	}
	m, _ = define(`{"kind":"topK","ranking":"vector"}`)
	if set = strategies.ResolveTopK(m.Strategy, m, caps); set.Threshold != nil {
		t.Errorf("a semantic vector ranking without a calibrated threshold: %+v", set)
	}
	m.Type = core.Causal
	if set = strategies.ResolveTopK(m.Strategy, m, caps); set.Threshold == nil || *set.Threshold != 0.7 || set.ThresholdSource != strategies.SourceSeedDefault {
		t.Errorf("a causal vector ranking without a calibrated threshold: %+v", set)
	}
}
