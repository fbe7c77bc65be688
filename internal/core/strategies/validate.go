package strategies

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// validator runs the definition pipeline for one memory: shape, type
// dispatch, field rules, requirements — in that order, first refusal wins,
// because each later step reads what the earlier one guaranteed.
type validator struct {
	site string
	typ  core.MemoryType
	caps core.Capabilities
	// memoryEmbedder is the memory-level embedder, the fallback for topK.
	memoryEmbedder string
}

func (v *validator) refuse(code, path, fixKind string, detail string, extra map[string]any) *core.ValidationError {
	e := &core.ValidationError{
		Code:   code,
		Site:   v.site,
		Path:   path,
		Detail: detail,
		See:    "/v1/strategies",
		Extra:  extra,
	}
	if fixKind != "" {
		e.Fix = example(core.StrategyKind(fixKind), v.caps)
	}
	return e
}

const listingHint = " GET /v1/strategies describes all seven kinds: what each one does, which memory types accept it, and what it needs."

// shape is step 1: is this a strategy object at all? It reads nothing but
// `kind` and a hybrid's `strategies`, so it cannot trip over a wrong shape.
func (v *validator) shape(value any, path string, depth int) error {
	obj, ok := value.(map[string]any)
	if !ok {
		fixKind := string(core.Window)
		written := core.DescribeJSON(value)
		if s, isStr := value.(string); isStr {
			// A bare string is almost always a caller reaching for the
			// right kind with the wrong syntax: answer with THAT kind.
			if d, known := lookup(s); known {
				fixKind = string(d.kind)
			} else if k := closestKind(s); k != "" {
				fixKind = string(k)
			}
		}
		return v.refuse(core.CodeInvalidStrategy, path, fixKind,
			fmt.Sprintf("`%s` must be an object with a `kind`; got %s. A bare kind name is not a strategy: "+
				"the kind names the rule, and the object's other fields configure it.", path, written)+listingHint, nil)
	}
	kind, ok := obj["kind"].(string)
	if !ok || kind == "" {
		got := "no `kind`"
		if k, present := obj["kind"]; present {
			got = "`kind` " + core.DescribeJSON(k) + " (it must be a non-empty string)"
		}
		return v.refuse(core.CodeInvalidStrategy, path+".kind", string(core.Window),
			fmt.Sprintf("`%s` has %s — that field says which strategy this is, so there is nothing here to build.", path, got)+listingHint, nil)
	}
	if kind != string(core.Hybrid) {
		return nil
	}
	subs, isArr := obj["strategies"].([]any)
	if !isArr || len(subs) == 0 {
		written := "the array is empty"
		if !isArr {
			if _, present := obj["strategies"]; !present {
				written = "none was passed"
			} else {
				written = "`strategies` is not an array (got " + core.DescribeJSON(obj["strategies"]) + ")"
			}
		}
		return v.refuse(core.CodeInvalidStrategy, path+".strategies", string(core.Hybrid),
			fmt.Sprintf("the `hybrid` strategy needs a non-empty `strategies` array and %s — a hybrid is defined by "+
				"the strategies it composes, so an empty one has nothing to compose and no behaviour of its own. "+
				"Or drop `hybrid` and name the one rule you meant, e.g. {\"kind\":\"window\",\"size\":20}.", written)+listingHint, nil)
	}
	if len(subs) > maxHybridParts {
		return v.refuse(core.CodeInvalidStrategy, path+".strategies", string(core.Hybrid),
			fmt.Sprintf("a hybrid composes at most %d strategies; got %d.", maxHybridParts, len(subs)), nil)
	}
	if depth >= maxHybridDepth {
		return v.refuse(core.CodeInvalidStrategy, path, string(core.Hybrid),
			fmt.Sprintf("hybrids nest at most %d deep; flatten the inner hybrid's strategies into this one.", maxHybridDepth), nil)
	}
	for i, sub := range subs {
		if err := v.shape(sub, fmt.Sprintf("%s.strategies[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// dispatch is step 2: is the kind real, and does this memory type accept
// it? The refusal names the kinds the type accepts and the types that accept
// the kind, which is the better message than any generic one.
func (v *validator) dispatch(value any, path string) error {
	obj := value.(map[string]any) // shape guaranteed it
	kind := obj["kind"].(string)
	d, ok := lookup(kind)
	if !ok {
		fixKind := string(core.Window)
		hint := ""
		if k := closestKind(kind); k != "" {
			fixKind = string(k)
			hint = fmt.Sprintf(" Did you mean `%s`? Kinds are case-sensitive.", k)
		}
		return v.refuse(core.CodeUnknownStrategy, path+".kind", fixKind,
			fmt.Sprintf("`%s` is not a strategy kind. The seven kinds are %s.%s", core.Truncate(kind, 40), core.QuoteList(kindNames()), hint)+listingHint,
			map[string]any{"kinds": kindNames()})
	}
	if !slices.Contains(d.types, v.typ) {
		accepted := AcceptedKinds(v.typ)
		fixKind := ""
		if len(accepted) > 0 {
			fixKind = string(accepted[0])
		}
		return v.refuse(core.CodeStrategyNotForType, path+".kind", fixKind,
			fmt.Sprintf("%s %s memory does not accept the `%s` strategy. %s memories accept %s; `%s` is accepted by %s — use type %s for it.",
				article(string(v.typ)), v.typ, kind, titleCase(string(v.typ)), core.QuoteList(accepted), kind, core.QuoteList(d.types), core.QuoteList(d.types[:1]))+listingHint,
			map[string]any{"acceptedKinds": accepted, "acceptingTypes": d.types})
	}
	if d.kind == core.Hybrid {
		for i, sub := range obj["strategies"].([]any) {
			if err := v.dispatch(sub, fmt.Sprintf("%s.strategies[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fields is step 3: each field of the kind is of the right type and in
// range; unknown fields are refused (a typo must not silently become a
// default); defaults are applied.
func (v *validator) fields(value any, path string) (core.Strategy, error) {
	obj := value.(map[string]any)
	kind := obj["kind"].(string)
	d, ok := lookup(kind)
	if !ok {
		return core.Strategy{}, v.refuse(core.CodeUnknownStrategy, path+".kind", string(core.Window),
			fmt.Sprintf("`%s` is not a strategy kind", core.Truncate(kind, 40)), map[string]any{"kinds": kindNames()})
	}
	values := map[string]any{}
	// Unknown fields first, in a stable order, so the report is deterministic.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "kind" || (d.kind == core.Hybrid && k == "strategies") || d.has(k) {
			continue
		}
		return core.Strategy{}, v.refuse(core.CodeUnknownField, path+"."+core.SafeKey(k), kind,
			fmt.Sprintf("the `%s` strategy has no field `%s`; it takes %s. Remove it or fix its name.", kind, core.SafeKey(k), d.fieldList()), nil)
	}
	for _, f := range d.fields {
		raw, present := obj[f.name]
		if !present || raw == nil {
			if f.def != nil {
				values[f.name] = f.def
			}
			continue
		}
		norm, reason := f.check(raw)
		if reason != "" {
			e := v.refuse(core.CodeInvalidField, path+"."+f.name, kind, fmt.Sprintf("`%s.%s` %s.", path, f.name, reason), nil)
			return core.Strategy{}, e
		}
		values[f.name] = norm
	}
	if err := v.crossFields(d.kind, values, path); err != nil {
		return core.Strategy{}, err
	}
	// The fields in catalogue order, so that the stored form reads the same way every time.
	var fields []core.StrategyField
	for _, f := range d.fields {
		if val, ok := values[f.name]; ok {
			fields = append(fields, core.StrategyField{Name: f.name, Value: val})
		}
	}
	var parts []core.Strategy
	if d.kind == core.Hybrid {
		for i, sub := range obj["strategies"].([]any) {
			part, err := v.fields(sub, fmt.Sprintf("%s.strategies[%d]", path, i))
			if err != nil {
				return core.Strategy{}, err
			}
			parts = append(parts, part)
		}
	}
	s := core.NewStrategy(d.kind, fields, parts)
	if d.kind == core.Hybrid {
		if err := v.oneVectorSpace(s, path); err != nil {
			return core.Strategy{}, err
		}
	}
	return s, nil
}

// oneVectorSpace refuses a hybrid whose topK parts (nested ones included) use different
// embedders: a memory stores one vector per entry, written by one embedder, so a second
// embedder's part could never compare anything. A part without `embedder` uses the memory's,
// else the deployment's default (as EmbedderFor resolves it when the memory is written and
// read), so it agrees with a part that names that embedder explicitly.
func (v *validator) oneVectorSpace(s core.Strategy, path string) error {
	def, hasDefault := v.caps.DefaultEmbedder()
	resolve := func(x core.Strategy) (id, shown string) {
		switch {
		case x.Str("embedder") != "":
			return x.Str("embedder"), "`" + x.Str("embedder") + "`"
		case v.memoryEmbedder != "":
			return v.memoryEmbedder, "`" + v.memoryEmbedder + "` (none named: the memory's)"
		case hasDefault:
			return def.ID, "`" + def.ID + "` (none named: the server default)"
		}
		return "", "(none named, and the server has no default)"
	}
	var ids, names []string
	var walk func(core.Strategy)
	walk = func(x core.Strategy) {
		if x.Kind == core.TopK {
			if id, shown := resolve(x); !slices.Contains(ids, id) {
				ids, names = append(ids, id), append(names, shown)
			}
		}
		for _, p := range x.Parts {
			walk(p)
		}
	}
	walk(s)
	if len(ids) < 2 {
		return nil
	}
	return v.refuse(core.CodeInvalidField, path+".strategies", string(core.Hybrid),
		fmt.Sprintf("the `topK` parts of `%s` use different embedders (%s); a memory holds one vector per entry, written by one embedder, so every `topK` part must use the same one (a part that names none uses the memory's `embedder`, else the server default). Set `embedder` on the memory instead.",
			path, strings.Join(names, ", ")), nil)
}

// crossFields checks rules that span fields of one strategy.
func (v *validator) crossFields(kind core.StrategyKind, values map[string]any, path string) error {
	if kind == core.TopK {
		if _, hasAlpha := values["alpha"]; hasAlpha && values["ranking"] != string(core.RankHybrid) {
			detail := fmt.Sprintf("`%s.alpha` weighs the vector score against the lexical one in a hybrid ranking, and this strategy does not set `ranking: \"hybrid\"`", path)
			if r, ok := values["ranking"].(string); ok {
				detail = fmt.Sprintf("`%s.alpha` weighs the vector score against the lexical one in a hybrid ranking; with `ranking: %q` it would weigh nothing", path, r)
			}
			return &core.ValidationError{Code: core.CodeInvalidField, Site: v.site, Path: path + ".alpha", See: "/v1/strategies/topK",
				Detail: detail + ". Set `ranking: \"hybrid\"` with it, or remove `alpha`.",
				Fix:    map[string]any{"kind": "topK", "ranking": "hybrid", "alpha": values["alpha"]}}
		}
	}
	if kind == core.Summarize {
		recent, _ := values["recent"].(int64)
		size, hasSize := values["size"].(int64)
		if !hasSize {
			size = 2 * recent
			values["size"] = size
		}
		if recent >= size {
			return v.refuse(core.CodeInvalidField, path+".recent", string(core.Summarize),
				fmt.Sprintf("`%s.recent` (%d) must be less than `size` (%d): the fold triggers at `size` entries and keeps the newest `recent` verbatim.", path, recent, size), nil)
		}
	}
	return nil
}

// requirements is step 4, the backstop: every declared requirement is
// supplied by this deployment or by the strategy's own fields. It runs last
// because the earlier steps' refusals say more; its job is that no declared
// requirement goes unchecked, hybrid parts included.
func (v *validator) requirements(s core.Strategy, path string, insideHybrid bool) error {
	d, _ := lookup(string(s.Kind))
	where := fmt.Sprintf("the `%s` strategy", s.Kind)
	if insideHybrid {
		where = fmt.Sprintf("the `%s` strategy inside `hybrid`", s.Kind)
	}
	declared := fmt.Sprintf(" Every strategy declares what it needs — GET /v1/strategies/%s reports requirements [%s] for this one, so a host can check before it offers the choice.",
		s.Kind, strings.Join(reqStrings(d.requirements), ", "))
	reqs := slices.Clone(d.requirements)
	if s.Kind == core.Extract && s.Str("extractor") == "llm" {
		reqs = append(reqs, core.ReqLLM, core.ReqModel)
	}
	for _, r := range reqs {
		if err := v.requirement(r, s, path, where, declared); err != nil {
			return err
		}
	}
	for i, p := range s.Parts {
		if err := v.requirements(p, fmt.Sprintf("%s.strategies[%d]", path, i), true); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) requirement(r core.Requirement, s core.Strategy, path, where, declared string) error {
	kind := string(s.Kind)
	missing := func(fieldPath, detail string) *core.ValidationError {
		fixKind := kind
		if !v.caps.Supplies(r) {
			// Nothing of this kind can run here: offer the free rule this
			// type accepts instead, as the seed's "Or: use window" does.
			fixKind = string(v.freeAlternative(s.Kind))
		}
		return v.refuse(core.CodeMissingRequirement, fieldPath, fixKind, detail, map[string]any{"requirement": string(r)})
	}
	switch r {
	case core.ReqEmbedder:
		id := s.Str("embedder")
		fieldPath := path + ".embedder"
		if id == "" {
			id, fieldPath = v.memoryEmbedder, "embedder"
		}
		if id != "" {
			if _, ok := v.caps.Embedder(id); !ok {
				return missing(fieldPath, fmt.Sprintf("%s names the embedder `%s`, which this server does not have. Configured embedders: %s. Use one of them, or omit it for the server default.",
					where, id, orNone(v.caps.EmbedderIDs())))
			}
			return nil
		}
		if _, ok := v.caps.DefaultEmbedder(); !ok {
			return missing(path+".embedder", where+" needs an embedder and this server has none configured — somebody has to turn the query into a vector before a store can rank it. Configure one (FOOTPRINT_EMBEDDERS), or pick a strategy that ranks nothing: `window` or `budget`."+declared)
		}
	case core.ReqVectorStore:
		if !v.caps.Store.RanksVectors {
			return missing(path, fmt.Sprintf("%s needs a store that ranks vectors, and this server's `%s` store does not — nothing would ever rank the entries written to it. Or pick a strategy that ranks nothing: `window` (last N) or `budget` (fit-to-tokens).", where, v.caps.Store.Kind)+declared)
		}
	case core.ReqLLM:
		id := s.Str("llm")
		if id == "" {
			if len(v.caps.LLMs) == 0 {
				return missing(path+".llm", where+" needs an `llm` and this server has no LLM provider configured — nothing would write the summary. Configure one (FOOTPRINT_LLMS), or use {\"kind\":\"window\",\"size\":20}, which keeps the last N entries verbatim, needs nothing and costs nothing."+declared)
			}
			return missing(path+".llm", fmt.Sprintf("%s needs an `llm` — the id of a provider configured on this server (%s) — and none was passed.", where, core.QuoteList(v.caps.LLMIDs()))+declared)
		}
		if _, ok := v.caps.LLM(id); !ok {
			return missing(path+".llm", fmt.Sprintf("%s names the LLM provider `%s`, which this server does not have. Configured providers: %s.", where, id, orNone(v.caps.LLMIDs()))+declared)
		}
	case core.ReqModel:
		if strings.TrimSpace(s.Str("model")) == "" {
			return missing(path+".model", where+" needs a `model` — the id its `llm` is called with — and none was passed. There is no fall back to the agent's own model: the same provider family would quietly bill your main model, and a different vendor would be sent a model id it has never heard of."+declared)
		}
	}
	return nil
}

// freeAlternative returns the first kind the memory type accepts that needs
// nothing from the deployment, or kind itself when there is none (causal).
func (v *validator) freeAlternative(kind core.StrategyKind) core.StrategyKind {
	for _, k := range AcceptedKinds(v.typ) {
		if d, _ := lookup(string(k)); len(d.requirements) == 0 && k != core.Hybrid {
			return k
		}
	}
	return kind
}

func (d *descriptor) has(name string) bool {
	for _, f := range d.fields {
		if f.name == name {
			return true
		}
	}
	return false
}

func (d *descriptor) fieldList() string {
	names := []string{}
	for _, f := range d.fields {
		names = append(names, f.name)
	}
	if d.kind == core.Hybrid {
		names = append(names, "strategies")
	}
	if len(names) == 0 {
		return "no other fields"
	}
	return core.QuoteList(names)
}

func reqStrings(rs []core.Requirement) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func orNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return core.QuoteList(ids)
}

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ParseStored rehydrates a strategy from JSON this service stored, in the
// catalogue's field order whatever order the JSON has (Postgres' jsonb keeps
// its own). It checks shape and fields, so that a corrupt row is an error
// rather than a surprise later, but not type acceptance or the deployment's
// requirements, which were checked when the memory was defined.
func ParseStored(raw []byte) (core.Strategy, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return core.Strategy{}, err
	}
	val := validator{site: "stored strategy"}
	if err := val.shape(v, "strategy", 0); err != nil {
		return core.Strategy{}, err
	}
	return val.fields(v, "strategy")
}
