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

// bare is a deployment with nothing but a store that ranks vectors.
var bare = core.Capabilities{Store: core.StoreInfo{Kind: "memory", RanksVectors: true}}

// full adds an embedder and an LLM provider.
var full = core.Capabilities{
	Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Dimensions: 384, Default: true}},
	LLMs:      []core.LLMInfo{{ID: "openai", Model: "gpt-4o-mini"}},
	Store:     core.StoreInfo{Kind: "postgres", RanksVectors: true},
}

func TestCatalogueOrderAndTables(t *testing.T) {
	t.Parallel()
	want := []struct {
		kind  core.StrategyKind
		reqs  []core.Requirement
		types []core.MemoryType
	}{
		{core.Window, nil, []core.MemoryType{core.Episodic, core.Semantic, core.Narrative}},
		{core.Budget, nil, []core.MemoryType{core.Episodic}},
		{core.Summarize, []core.Requirement{core.ReqLLM, core.ReqModel}, []core.MemoryType{core.Episodic}},
		{core.TopK, []core.Requirement{core.ReqEmbedder, core.ReqVectorStore}, []core.MemoryType{core.Semantic, core.Causal}},
		{core.Extract, nil, []core.MemoryType{core.Semantic, core.Narrative}},
		{core.Decay, nil, []core.MemoryType{core.Episodic}},
		{core.Hybrid, nil, []core.MemoryType{core.Episodic, core.Semantic, core.Narrative}},
	}
	got := strategies.Catalogue(full)
	if len(got) != len(want) {
		t.Fatalf("catalogue has %d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind {
			t.Errorf("entry %d: kind %q, want %q", i, g.Kind, w.kind)
		}
		if !slices.Equal(g.Requirements, w.reqs) && (len(g.Requirements) != 0 || len(w.reqs) != 0) {
			t.Errorf("%s: requirements %v, want %v", w.kind, g.Requirements, w.reqs)
		}
		if g.Requirements == nil {
			t.Errorf("%s: requirements must be an empty list, not nil (it renders as null)", w.kind)
		}
		if !slices.Equal(g.Types, w.types) {
			t.Errorf("%s: types %v, want %v", w.kind, g.Types, w.types)
		}
		if g.Description == "" {
			t.Errorf("%s: empty description", w.kind)
		}
		if g.Params["type"] != "object" {
			t.Errorf("%s: params is not an object schema: %v", w.kind, g.Params)
		}
	}
}

func TestCatalogueExamplesAreAccepted(t *testing.T) {
	t.Parallel()
	for _, caps := range []core.Capabilities{full} {
		for _, info := range strategies.Catalogue(caps) {
			var strategy any
			if err := json.Unmarshal(info.Example, &strategy); err != nil {
				t.Fatalf("%s: example is not JSON: %v", info.Kind, err)
			}
			_, err := strategies.ValidateMemory(strategies.MemoryParams{ID: "m", Type: string(info.Types[0]), Strategy: strategy}, caps)
			if err != nil {
				t.Errorf("%s: the catalogue's own example is refused: %v", info.Kind, err)
			}
		}
	}
}

func TestOfferable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		caps    core.Capabilities
		missing map[core.StrategyKind][]core.Requirement
	}{
		{"bare deployment", bare, map[core.StrategyKind][]core.Requirement{
			core.Summarize: {core.ReqLLM},
			core.TopK:      {core.ReqEmbedder},
		}},
		{"embedder and llm", full, map[core.StrategyKind][]core.Requirement{}},
		{"store that cannot rank", core.Capabilities{Embedders: full.Embedders}, map[core.StrategyKind][]core.Requirement{
			core.Summarize: {core.ReqLLM},
			core.TopK:      {core.ReqVectorStore},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, info := range strategies.Catalogue(tc.caps) {
				want := tc.missing[info.Kind]
				if len(want) == 0 {
					if !info.Offerable || len(info.Missing) != 0 {
						t.Errorf("%s: offerable=%v missing=%v, want offerable", info.Kind, info.Offerable, info.Missing)
					}
					continue
				}
				if info.Offerable || !slices.Equal(info.Missing, want) {
					t.Errorf("%s: offerable=%v missing=%v, want missing %v", info.Kind, info.Offerable, info.Missing, want)
				}
			}
		})
	}
}

func TestLookupStrategy(t *testing.T) {
	t.Parallel()
	info, err := strategies.LookupStrategy("topK", full)
	if err != nil || info.Kind != core.TopK {
		t.Fatalf("LookupStrategy(topK) = %v, %v", info.Kind, err)
	}
	_, err = strategies.LookupStrategy("topk", full)
	var nf *core.NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("LookupStrategy(topk) error = %v, want *NotFoundError", err)
	}
	if strings.Join(nf.Known, ",") != "window,budget,summarize,topK,extract,decay,hybrid" {
		t.Errorf("known kinds = %v", nf.Known)
	}
}

func TestNamespace(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   core.Identity
		want string
	}{
		{core.Identity{Tenant: "acme", Principal: "user-42", ConversationID: "thread-7"}, "acme/user-42/thread-7"},
		{core.Identity{ConversationID: "c1"}, "_/_/c1"},
		{core.Identity{Tenant: "a/b", ConversationID: "c"}, "a%2Fb/_/c"},
		{core.Identity{Tenant: "_", ConversationID: "c"}, "%5F/_/c"},
		{core.Identity{Tenant: "50%", ConversationID: "c"}, "50%25/_/c"},
		{core.Identity{Tenant: "%2F", ConversationID: "c"}, "%252F/_/c"},
	}
	for _, tc := range tests {
		if got := tc.id.Namespace(); got != tc.want {
			t.Errorf("%+v.Namespace() = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// TestNamespaceInjective checks that distinct identities never collide over
// a set of adversarial segments.
func TestNamespaceInjective(t *testing.T) {
	t.Parallel()
	segs := []string{"", "_", "%5F", "/", "%2F", "%", "%25", "a/b", "a%2Fb", "a", "_/_", "a/", "/a"}
	seen := map[string]core.Identity{}
	for _, a := range segs {
		for _, b := range segs {
			for _, c := range segs {
				id := core.Identity{Tenant: a, Principal: b, ConversationID: c}
				ns := id.Namespace()
				if prev, dup := seen[ns]; dup {
					t.Fatalf("%+v and %+v share namespace %q", prev, id, ns)
				}
				seen[ns] = id
			}
		}
	}
}
