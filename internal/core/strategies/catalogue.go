package strategies

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// descriptor is the frozen, deployment-independent half of a catalogue
// entry. The catalogue is data, not behaviour: it is what a host renders a
// picker from, and what the validation pipeline consults.
type descriptor struct {
	kind         core.StrategyKind
	description  string
	requirements []core.Requirement
	types        []core.MemoryType
	fields       []field
}

// descriptors holds the seven kinds in catalogue order (cheapest first).
// Never mutate it.
var descriptors = []descriptor{
	{
		kind: core.Window,
		description: "Keeps the last `size` entries — messages on an episodic memory, facts or beats on the " +
			"others. A pure rule: no LLM, no embeddings, nothing to configure but the number. The right " +
			"default for short-to-medium chats.",
		types:  []core.MemoryType{core.Episodic, core.Semantic, core.Narrative},
		fields: windowFields,
	},
	{
		kind: core.Budget,
		description: "Injects as many recent entries as fit a token budget, and none at all when the budget " +
			"is below the floor. Free — tokens are estimated (ceil(chars/4)), not counted by a tokenizer " +
			"call. The decision (pick / skip-empty / skip-no-budget) is recorded as evidence.",
		types:  []core.MemoryType{core.Episodic},
		fields: budgetFields,
	},
	{
		kind: core.Summarize,
		description: "Compresses what falls out of the verbatim tail: the most recent `recent` entries stay raw " +
			"and everything older is folded by ONE call to the named cheap model. The summary is written " +
			"back, so a span is paid for once rather than once per turn, and the originals are kept — " +
			"excluded from recall by the summary, not deleted. Costs a model call: name `llm` (a provider " +
			"configured on this server) and `model` explicitly.",
		requirements: []core.Requirement{core.ReqLLM, core.ReqModel},
		types:        []core.MemoryType{core.Episodic},
		fields:       summarizeFields,
	},
	{
		kind: core.TopK,
		description: "Ranks the stored entries against the query and returns the best ones above a threshold — " +
			"strictly: when nothing clears the threshold, nothing is injected. `ranking` chooses the score: " +
			"`vector` (cosine similarity of the embeddings), `lexical` (BM25 over the query's terms, divided by " +
			"the most that query could score) or `hybrid` (alpha × vector + (1 − alpha) × lexical); absent, the " +
			"embedder's default (`ranking` in /v1/capabilities: hybrid on the built-in embedder, vector on others), " +
			"as is the threshold. Every candidate considered is kept in the evidence with its score, the " +
			"components of it and its rank. Needs an embedder configured on this server (or client-supplied " +
			"vectors) and a store that ranks vectors.",
		requirements: []core.Requirement{core.ReqEmbedder, core.ReqVectorStore},
		types:        []core.MemoryType{core.Semantic, core.Causal},
		fields:       topKFields,
	},
	{
		kind: core.Extract,
		description: "Distills each turn into structured facts (semantic) or narrative beats (narrative) on the " +
			"write side. `extractor: \"pattern\"` is deterministic heuristics — free, no dependency, which " +
			"is why this strategy requires nothing. `extractor: \"llm\"` additionally needs an `llm` and a " +
			"`model`, and is refused without them.",
		types:  []core.MemoryType{core.Semantic, core.Narrative},
		fields: extractFields,
	},
	{
		kind: core.Decay,
		description: "Lets old memory fade: each loaded entry is scored 2^(-age/halfLife) from when it was " +
			"last accessed and dropped below `minScore`, so a long-running agent stops rehearsing last " +
			"month. Free — arithmetic on a timestamp, no LLM and no embeddings.",
		types:  []core.MemoryType{core.Episodic},
		fields: decayFields,
	},
	{
		kind: core.Hybrid,
		description: "Composes several strategies on one memory. It requires nothing of its own — each part " +
			"carries its own requirements, and every one of them is checked when the memory is defined, " +
			"so a hybrid cannot smuggle in a strategy this deployment cannot run.",
		types: []core.MemoryType{core.Episodic, core.Semantic, core.Narrative},
	},
}

// StrategyKinds lists the seven kinds in catalogue order.
func StrategyKinds() []core.StrategyKind {
	out := make([]core.StrategyKind, len(descriptors))
	for i, d := range descriptors {
		out[i] = d.kind
	}
	return out
}

func kindNames() []string {
	out := make([]string, len(descriptors))
	for i, d := range descriptors {
		out[i] = string(d.kind)
	}
	return out
}

func lookup(kind string) (*descriptor, bool) {
	for i := range descriptors {
		if string(descriptors[i].kind) == kind {
			return &descriptors[i], true
		}
	}
	return nil, false
}

// StrategyInfo is one catalogue entry as this deployment offers it.
type StrategyInfo struct {
	Kind         core.StrategyKind
	Description  string
	Requirements []core.Requirement
	Types        []core.MemoryType
	// Scopes are the memory scopes the strategy can run in (ScopesOf).
	Scopes []core.MemoryScope
	// Example is one working strategy for this kind on this deployment
	// (it names configured embedders and LLMs where it can).
	Example json.RawMessage
	// Params is a JSON Schema (draft 2020-12 vocabulary) of the kind's
	// fields with their types, defaults and bounds.
	Params map[string]any
	// Offerable is true when this deployment supplies every requirement;
	// Missing lists the ones it does not.
	Offerable bool
	Missing   []core.Requirement
}

// Catalogue returns the seven strategies in catalogue order, with Offerable
// and Missing computed from caps. The result is freshly allocated.
func Catalogue(caps core.Capabilities) []StrategyInfo {
	out := make([]StrategyInfo, len(descriptors))
	for i := range descriptors {
		out[i] = descriptors[i].info(caps)
	}
	return out
}

// LookupStrategy returns one catalogue entry, or a *NotFoundError (which
// lists the seven kinds) for a string that is not a strategy kind.
func LookupStrategy(kind string, caps core.Capabilities) (StrategyInfo, error) {
	d, ok := lookup(kind)
	if !ok {
		return StrategyInfo{}, &core.NotFoundError{What: "strategy", ID: kind, Known: kindNames()}
	}
	return d.info(caps), nil
}

func (d *descriptor) info(caps core.Capabilities) StrategyInfo {
	missing := []core.Requirement{}
	for _, r := range d.requirements {
		if !caps.Supplies(r) {
			missing = append(missing, r)
		}
	}
	return StrategyInfo{
		Kind:         d.kind,
		Description:  d.description,
		Requirements: slices.Clone(nonNil(d.requirements)),
		Types:        slices.Clone(d.types),
		Scopes:       scopesOf(d.types),
		Example:      example(d.kind, caps),
		Params:       d.paramsSchema(),
		Offerable:    len(missing) == 0,
		Missing:      missing,
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// AcceptedKinds returns the kinds a memory type accepts, in catalogue order.
func AcceptedKinds(t core.MemoryType) []core.StrategyKind {
	var out []core.StrategyKind
	for _, d := range descriptors {
		if slices.Contains(d.types, t) {
			out = append(out, d.kind)
		}
	}
	return out
}

// example returns one working strategy line for kind on this deployment —
// quoted verbatim into refusals as their fix, so a reader can copy it.
func example(kind core.StrategyKind, caps core.Capabilities) json.RawMessage {
	llmID, model := "my-llm", "gpt-4o-mini"
	if len(caps.LLMs) > 0 {
		llmID = caps.LLMs[0].ID
		if caps.LLMs[0].Model != "" {
			model = caps.LLMs[0].Model
		}
	}
	var s string
	switch kind {
	case core.Window:
		s = `{"kind":"window","size":20}`
	case core.Budget:
		s = `{"kind":"budget","maxEntries":20}`
	case core.Summarize:
		s = `{"kind":"summarize","recent":6,"llm":` + quote(llmID) + `,"model":` + quote(model) + `}`
	case core.TopK:
		if e, ok := caps.DefaultEmbedder(); ok {
			s = `{"kind":"topK","topK":3,"embedder":` + quote(e.ID) + `}`
		} else {
			s = `{"kind":"topK","topK":3}`
		}
	case core.Extract:
		s = `{"kind":"extract","extractor":"pattern"}`
	case core.Decay:
		s = `{"kind":"decay","halfLifeMs":86400000}`
	case core.Hybrid:
		s = `{"kind":"hybrid","strategies":[{"kind":"window","size":20}]}`
	}
	return json.RawMessage(s)
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// paramsSchema derives the kind's JSON Schema from the same field table the
// validator enforces, so the picker's form and the server cannot disagree.
func (d *descriptor) paramsSchema() map[string]any {
	props := map[string]any{
		"kind": map[string]any{"const": string(d.kind), "description": "The strategy kind."},
	}
	required := []string{"kind"}
	for _, f := range d.fields {
		props[f.name] = f.schema()
		if f.required {
			required = append(required, f.name)
		}
	}
	if d.kind == core.Hybrid {
		props["strategies"] = map[string]any{
			"type":        "array",
			"minItems":    1,
			"maxItems":    maxHybridParts,
			"description": "The strategies this hybrid composes; each is validated as if it stood alone.",
			"items":       map[string]any{"type": "object", "required": []string{"kind"}},
		}
		required = append(required, "strategies")
	}
	return map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// closestKind returns the kind a caller most plausibly meant by s (case and
// punctuation insensitive), or "" when nothing is close.
func closestKind(s string) core.StrategyKind {
	norm := func(x string) string {
		return strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || r == ' ' {
				return -1
			}
			return r
		}, strings.ToLower(x))
	}
	n := norm(s)
	for _, d := range descriptors {
		if norm(string(d.kind)) == n {
			return d.kind
		}
	}
	return ""
}

// TopKDefaults returns k and the reject window for a topK strategy.
func TopKDefaults(s core.Strategy, t core.MemoryType) (int, int) {
	k := 3
	if t == core.Causal {
		k = 1
	}
	if v, ok := s.Int("topK"); ok {
		k = int(v)
	}
	rw := 10
	if v, ok := s.Int("rejectWindow"); ok {
		rw = int(v)
	}
	return k, rw
}

// TopKSettings is how one topK read ranks and admits: every value resolved, and where the
// ranking and the threshold came from.
type TopKSettings struct {
	K, RejectWindow int
	Embedder        string
	Ranking         core.Ranking
	// RankingSource is SourceMemory (the strategy sets it) or SourceEmbedderDefault.
	RankingSource string
	Alpha         float64 // a hybrid's vector weight
	// Threshold is nil when none applies; ThresholdSource says which rule set it.
	Threshold       *float64
	ThresholdSource string
}

// Where a topK setting came from (the evidence's rankingSource and thresholdSource).
const (
	SourceMemory          = "memory"           // the memory's strategy sets it
	SourceEmbedderDefault = "embedder default" // the embedder's calibrated default (/v1/capabilities)
	SourceSeedDefault     = "seed default"     // 0.7 on a causal memory whose embedder has no calibrated default
)

// seedCausalThreshold is the seed's threshold for causal memories, set for semantic embedders.
const seedCausalThreshold = 0.7

// ResolveTopK resolves a topK strategy's settings on memory m: what the strategy sets, else
// the embedder's defaults (caps), else the seed's.
func ResolveTopK(s core.Strategy, m core.Memory, caps core.Capabilities) TopKSettings {
	k, rw := TopKDefaults(s, m.Type)
	out := TopKSettings{K: k, RejectWindow: rw, Embedder: EmbedderFor(s, m, caps)}
	defaults := core.RankingDefaults{Ranking: core.RankVector}
	if e, ok := caps.Embedder(out.Embedder); ok && e.Ranking.Ranking != "" {
		defaults = e.Ranking
	}
	out.Ranking, out.RankingSource = defaults.Ranking, SourceEmbedderDefault
	if r := s.Str("ranking"); r != "" {
		out.Ranking, out.RankingSource = core.Ranking(r), SourceMemory
	}
	out.Alpha = defaults.Alpha
	if a, ok := s.Float("alpha"); ok {
		out.Alpha = a
	}
	if t, ok := s.Float("threshold"); ok {
		out.Threshold, out.ThresholdSource = &t, SourceMemory
	} else if t, ok := defaults.Thresholds[out.Ranking]; ok {
		out.Threshold, out.ThresholdSource = &t, SourceEmbedderDefault
	} else if m.Type == core.Causal {
		t := seedCausalThreshold
		out.Threshold, out.ThresholdSource = &t, SourceSeedDefault
	}
	return out
}

// EmbedderFor resolves the embedder id: the strategy's, else the memory's,
// else the deployment default.
func EmbedderFor(s core.Strategy, m core.Memory, caps core.Capabilities) string {
	if id := s.Str("embedder"); id != "" {
		return id
	}
	if m.Embedder != "" {
		return m.Embedder
	}
	if e, ok := caps.DefaultEmbedder(); ok {
		return e.ID
	}
	return ""
}

// ScopeInfo describes one memory scope for the capabilities: what it keeps and which memory
// types accept it (validScope in define.go is the rule).
type ScopeInfo struct {
	Scope       core.MemoryScope
	Description string
	Types       []core.MemoryType
}

// Scopes describes the two memory scopes.
func Scopes() []ScopeInfo {
	return []ScopeInfo{
		{Scope: core.ScopeConversation, Types: slices.Clone(core.MemoryTypes),
			Description: "The default: a memory keeps each conversation's entries apart, in the conversation's namespace (tenant/principal/conversation)."},
		{Scope: core.ScopePrincipal, Types: principalTypes(),
			Description: "A memory keeps what every conversation of an end user (the principal) teaches it, in the principal's namespace (tenant/principal/_): written by turns of any of their conversations and recalled in any of them. Facts are upserted by key across conversations, the newest statement winning. Not for episodic memories (one conversation's messages in order) or corpora (shared by every principal already); turns and recalls must name a principal."},
	}
}

// principalTypes are the memory types that may be principal-scoped: every type but episodic.
func principalTypes() []core.MemoryType {
	var out []core.MemoryType
	for _, t := range core.MemoryTypes {
		if t != core.Episodic {
			out = append(out, t)
		}
	}
	return out
}

// scopesOf are the scopes a strategy accepted by types can run in: principal when one of
// them may be principal-scoped.
func scopesOf(types []core.MemoryType) []core.MemoryScope {
	out := []core.MemoryScope{core.ScopeConversation}
	for _, t := range types {
		if slices.Contains(principalTypes(), t) {
			return append(out, core.ScopePrincipal)
		}
	}
	return out
}
