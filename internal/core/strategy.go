package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Strategy is a validated strategy: its kind, every field of that kind with
// defaults applied, and for a hybrid its parts. Construct one through
// DefineMemory (or, for trusted stored JSON, json.Unmarshal); the zero value
// is not a valid strategy.
type Strategy struct {
	Kind StrategyKind
	// Parts are a hybrid's strategies, in the order given.
	Parts  []Strategy
	values map[string]any // field name → int64, float64, string or bool
}

// Int returns an integer field and whether it is set (explicitly or by
// default).
func (s Strategy) Int(name string) (int64, bool) {
	v, ok := s.values[name].(int64)
	return v, ok
}

// Float returns a number field (integers widen) and whether it is set.
func (s Strategy) Float(name string) (float64, bool) {
	switch v := s.values[name].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// Str returns a string field, or "" when unset.
func (s Strategy) Str(name string) string {
	v, _ := s.values[name].(string)
	return v
}

// MarshalJSON writes the strategy with `kind` first and the fields in
// catalogue order, so stored and returned definitions read the same way
// every time.
func (s Strategy) MarshalJSON() ([]byte, error) {
	return s.appendJSON(make([]byte, 0, 96))
}

// appendJSON appends the strategy's JSON to b. It runs for every memory of every recall (the
// answer and its receipt both carry the strategy), so field names and values are appended
// directly rather than through a json.Marshal call each.
func (s Strategy) appendJSON(b []byte) ([]byte, error) {
	d, ok := lookup(string(s.Kind))
	if !ok {
		return nil, fmt.Errorf("core: marshal strategy of unknown kind %q", s.Kind)
	}
	b = append(b, `{"kind":`...)
	b = appendQuoted(b, string(s.Kind))
	for _, f := range d.fields {
		v, ok := s.values[f.name]
		if !ok {
			continue
		}
		b = append(b, ',')
		b = appendQuoted(b, f.name)
		b = append(b, ':')
		switch v := v.(type) {
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case string:
			b = appendQuoted(b, v)
		case bool:
			b = strconv.AppendBool(b, v)
		default: // float64 (encoding/json's number formatting), or anything a field may hold later
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, enc...)
		}
	}
	if s.Kind == Hybrid {
		b = append(b, `,"strategies":[`...)
		for i, p := range s.Parts {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = p.appendJSON(b); err != nil {
				return nil, err
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendQuoted appends s as a JSON string, escaped as encoding/json escapes it (HTML
// characters included).
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= 0x80 {
			enc, _ := json.Marshal(s) // a string always marshals
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// UnmarshalJSON rehydrates a strategy from trusted stored JSON. It checks
// shape and fields (so a corrupt row is an error, not a panic later) but not
// type acceptance or deployment requirements, which were checked when the
// memory was defined.
func (s *Strategy) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	v := validator{site: "stored strategy"}
	if err := v.shape(raw, "strategy", 0); err != nil {
		return err
	}
	parsed, err := v.fields(raw, "strategy")
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// Equal reports whether two strategies are the same configuration.
func (s Strategy) Equal(o Strategy) bool {
	a, errA := s.MarshalJSON()
	b, errB := o.MarshalJSON()
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// validator runs the definition pipeline for one memory: shape, type
// dispatch, field rules, requirements — in that order, first refusal wins,
// because each later step reads what the earlier one guaranteed.
type validator struct {
	site string
	typ  MemoryType
	caps Capabilities
	// memoryEmbedder is the memory-level embedder, the fallback for topK.
	memoryEmbedder string
}

func (v *validator) refuse(code, path, fixKind string, detail string, extra map[string]any) *ValidationError {
	e := &ValidationError{
		Code:   code,
		Site:   v.site,
		Path:   path,
		Detail: detail,
		See:    "/v1/strategies",
		Extra:  extra,
	}
	if fixKind != "" {
		e.Fix = example(StrategyKind(fixKind), v.caps)
	}
	return e
}

const listingHint = " GET /v1/strategies describes all seven kinds: what each one does, which memory types accept it, and what it needs."

// shape is step 1: is this a strategy object at all? It reads nothing but
// `kind` and a hybrid's `strategies`, so it cannot trip over a wrong shape.
func (v *validator) shape(value any, path string, depth int) error {
	obj, ok := value.(map[string]any)
	if !ok {
		fixKind := string(Window)
		written := describeJSON(value)
		if s, isStr := value.(string); isStr {
			// A bare string is almost always a caller reaching for the
			// right kind with the wrong syntax: answer with THAT kind.
			if d, known := lookup(s); known {
				fixKind = string(d.kind)
			} else if k := closestKind(s); k != "" {
				fixKind = string(k)
			}
		}
		return v.refuse(CodeInvalidStrategy, path, fixKind,
			fmt.Sprintf("`%s` must be an object with a `kind`; got %s. A bare kind name is not a strategy: "+
				"the kind names the rule, and the object's other fields configure it.", path, written)+listingHint, nil)
	}
	kind, ok := obj["kind"].(string)
	if !ok || kind == "" {
		got := "no `kind`"
		if k, present := obj["kind"]; present {
			got = "`kind` " + describeJSON(k) + " (it must be a non-empty string)"
		}
		return v.refuse(CodeInvalidStrategy, path+".kind", string(Window),
			fmt.Sprintf("`%s` has %s — that field says which strategy this is, so there is nothing here to build.", path, got)+listingHint, nil)
	}
	if kind != string(Hybrid) {
		return nil
	}
	subs, isArr := obj["strategies"].([]any)
	if !isArr || len(subs) == 0 {
		written := "the array is empty"
		if !isArr {
			if _, present := obj["strategies"]; !present {
				written = "none was passed"
			} else {
				written = "`strategies` is not an array (got " + describeJSON(obj["strategies"]) + ")"
			}
		}
		return v.refuse(CodeInvalidStrategy, path+".strategies", string(Hybrid),
			fmt.Sprintf("the `hybrid` strategy needs a non-empty `strategies` array and %s — a hybrid is defined by "+
				"the strategies it composes, so an empty one has nothing to compose and no behaviour of its own. "+
				"Or drop `hybrid` and name the one rule you meant, e.g. {\"kind\":\"window\",\"size\":20}.", written)+listingHint, nil)
	}
	if len(subs) > maxHybridParts {
		return v.refuse(CodeInvalidStrategy, path+".strategies", string(Hybrid),
			fmt.Sprintf("a hybrid composes at most %d strategies; got %d.", maxHybridParts, len(subs)), nil)
	}
	if depth >= maxHybridDepth {
		return v.refuse(CodeInvalidStrategy, path, string(Hybrid),
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
		fixKind := string(Window)
		hint := ""
		if k := closestKind(kind); k != "" {
			fixKind = string(k)
			hint = fmt.Sprintf(" Did you mean `%s`? Kinds are case-sensitive.", k)
		}
		return v.refuse(CodeUnknownStrategy, path+".kind", fixKind,
			fmt.Sprintf("`%s` is not a strategy kind. The seven kinds are %s.%s", truncate(kind, 40), quoteList(kindNames()), hint)+listingHint,
			map[string]any{"kinds": kindNames()})
	}
	if !slices.Contains(d.types, v.typ) {
		accepted := AcceptedKinds(v.typ)
		fixKind := ""
		if len(accepted) > 0 {
			fixKind = string(accepted[0])
		}
		return v.refuse(CodeStrategyNotForType, path+".kind", fixKind,
			fmt.Sprintf("%s %s memory does not accept the `%s` strategy. %s memories accept %s; `%s` is accepted by %s — use type %s for it.",
				article(string(v.typ)), v.typ, kind, titleCase(string(v.typ)), quoteList(accepted), kind, quoteList(d.types), quoteList(d.types[:1]))+listingHint,
			map[string]any{"acceptedKinds": accepted, "acceptingTypes": d.types})
	}
	if d.kind == Hybrid {
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
func (v *validator) fields(value any, path string) (Strategy, error) {
	obj := value.(map[string]any)
	kind := obj["kind"].(string)
	d, ok := lookup(kind)
	if !ok {
		return Strategy{}, v.refuse(CodeUnknownStrategy, path+".kind", string(Window),
			fmt.Sprintf("`%s` is not a strategy kind", truncate(kind, 40)), map[string]any{"kinds": kindNames()})
	}
	s := Strategy{Kind: d.kind, values: map[string]any{}}
	// Unknown fields first, in a stable order, so the report is deterministic.
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k == "kind" || (d.kind == Hybrid && k == "strategies") || d.has(k) {
			continue
		}
		return Strategy{}, v.refuse(CodeUnknownField, path+"."+safeKey(k), kind,
			fmt.Sprintf("the `%s` strategy has no field `%s`; it takes %s. Remove it or fix its name.", kind, safeKey(k), d.fieldList()), nil)
	}
	for _, f := range d.fields {
		raw, present := obj[f.name]
		if !present || raw == nil {
			if f.def != nil {
				s.values[f.name] = f.def
			}
			continue
		}
		norm, reason := f.check(raw)
		if reason != "" {
			e := v.refuse(CodeInvalidField, path+"."+f.name, kind, fmt.Sprintf("`%s.%s` %s.", path, f.name, reason), nil)
			return Strategy{}, e
		}
		s.values[f.name] = norm
	}
	if err := v.crossFields(&s, path); err != nil {
		return Strategy{}, err
	}
	if d.kind == Hybrid {
		for i, sub := range obj["strategies"].([]any) {
			part, err := v.fields(sub, fmt.Sprintf("%s.strategies[%d]", path, i))
			if err != nil {
				return Strategy{}, err
			}
			s.Parts = append(s.Parts, part)
		}
		if err := v.oneVectorSpace(s, path); err != nil {
			return Strategy{}, err
		}
	}
	return s, nil
}

// oneVectorSpace refuses a hybrid whose topK parts (nested ones included) name different
// embedders: a memory stores one vector per entry, written by one embedder, so a second
// embedder's part could never compare anything.
func (v *validator) oneVectorSpace(s Strategy, path string) error {
	var names []string
	var walk func(Strategy)
	walk = func(x Strategy) {
		if x.Kind == TopK && !slices.Contains(names, x.Str("embedder")) {
			names = append(names, x.Str("embedder"))
		}
		for _, p := range x.Parts {
			walk(p)
		}
	}
	walk(s)
	if len(names) < 2 {
		return nil
	}
	for i, n := range names {
		if n == "" {
			names[i] = "(none: the memory's embedder)"
		} else {
			names[i] = "`" + n + "`"
		}
	}
	return v.refuse(CodeInvalidField, path+".strategies", string(Hybrid),
		fmt.Sprintf("the `topK` parts of `%s` name different embedders (%s); a memory holds one vector per entry, written by one embedder, so every `topK` part must name the same embedder or none. Set `embedder` on the memory instead.",
			path, strings.Join(names, ", ")), nil)
}

// crossFields checks rules that span fields of one strategy.
func (v *validator) crossFields(s *Strategy, path string) error {
	if s.Kind == Summarize {
		recent, _ := s.Int("recent")
		size, hasSize := s.Int("size")
		if !hasSize {
			size = 2 * recent
			s.values["size"] = size
		}
		if recent >= size {
			return v.refuse(CodeInvalidField, path+".recent", string(Summarize),
				fmt.Sprintf("`%s.recent` (%d) must be less than `size` (%d): the fold triggers at `size` entries and keeps the newest `recent` verbatim.", path, recent, size), nil)
		}
	}
	return nil
}

// requirements is step 4, the backstop: every declared requirement is
// supplied by this deployment or by the strategy's own fields. It runs last
// because the earlier steps' refusals say more; its job is that no declared
// requirement goes unchecked, hybrid parts included.
func (v *validator) requirements(s Strategy, path string, insideHybrid bool) error {
	d, _ := lookup(string(s.Kind))
	where := fmt.Sprintf("the `%s` strategy", s.Kind)
	if insideHybrid {
		where = fmt.Sprintf("the `%s` strategy inside `hybrid`", s.Kind)
	}
	declared := fmt.Sprintf(" Every strategy declares what it needs — GET /v1/strategies/%s reports requirements [%s] for this one, so a host can check before it offers the choice.",
		s.Kind, strings.Join(reqStrings(d.requirements), ", "))
	reqs := slices.Clone(d.requirements)
	if s.Kind == Extract && s.Str("extractor") == "llm" {
		reqs = append(reqs, ReqLLM, ReqModel)
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

func (v *validator) requirement(r Requirement, s Strategy, path, where, declared string) error {
	kind := string(s.Kind)
	missing := func(fieldPath, detail string) *ValidationError {
		fixKind := kind
		if !v.caps.supplies(r) {
			// Nothing of this kind can run here: offer the free rule this
			// type accepts instead, as the seed's "Or: use window" does.
			fixKind = string(v.freeAlternative(s.Kind))
		}
		return v.refuse(CodeMissingRequirement, fieldPath, fixKind, detail, map[string]any{"requirement": string(r)})
	}
	switch r {
	case ReqEmbedder:
		id := s.Str("embedder")
		fieldPath := path + ".embedder"
		if id == "" {
			id, fieldPath = v.memoryEmbedder, "embedder"
		}
		if id != "" {
			if _, ok := v.caps.Embedder(id); !ok {
				return missing(fieldPath, fmt.Sprintf("%s names the embedder `%s`, which this server does not have. Configured embedders: %s. Use one of them, or omit it for the server default.",
					where, id, orNone(v.caps.embedderIDs())))
			}
			return nil
		}
		if _, ok := v.caps.DefaultEmbedder(); !ok {
			return missing(path+".embedder", where+" needs an embedder and this server has none configured — somebody has to turn the query into a vector before a store can rank it. Configure one (FOOTPRINT_EMBEDDERS), or pick a strategy that ranks nothing: `window` or `budget`."+declared)
		}
	case ReqVectorStore:
		if !v.caps.Store.RanksVectors {
			return missing(path, fmt.Sprintf("%s needs a store that ranks vectors, and this server's `%s` store does not — nothing would ever rank the entries written to it. Or pick a strategy that ranks nothing: `window` (last N) or `budget` (fit-to-tokens).", where, v.caps.Store.Kind)+declared)
		}
	case ReqLLM:
		id := s.Str("llm")
		if id == "" {
			if len(v.caps.LLMs) == 0 {
				return missing(path+".llm", where+" needs an `llm` and this server has no LLM provider configured — nothing would write the summary. Configure one (FOOTPRINT_LLMS), or use {\"kind\":\"window\",\"size\":20}, which keeps the last N entries verbatim, needs nothing and costs nothing."+declared)
			}
			return missing(path+".llm", fmt.Sprintf("%s needs an `llm` — the id of a provider configured on this server (%s) — and none was passed.", where, quoteList(v.caps.llmIDs()))+declared)
		}
		if _, ok := v.caps.LLM(id); !ok {
			return missing(path+".llm", fmt.Sprintf("%s names the LLM provider `%s`, which this server does not have. Configured providers: %s.", where, id, orNone(v.caps.llmIDs()))+declared)
		}
	case ReqModel:
		if strings.TrimSpace(s.Str("model")) == "" {
			return missing(path+".model", where+" needs a `model` — the id its `llm` is called with — and none was passed. There is no fall back to the agent's own model: the same provider family would quietly bill your main model, and a different vendor would be sent a model id it has never heard of."+declared)
		}
	}
	return nil
}

// freeAlternative returns the first kind the memory type accepts that needs
// nothing from the deployment, or kind itself when there is none (causal).
func (v *validator) freeAlternative(kind StrategyKind) StrategyKind {
	for _, k := range AcceptedKinds(v.typ) {
		if d, _ := lookup(string(k)); len(d.requirements) == 0 && k != Hybrid {
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
	if d.kind == Hybrid {
		names = append(names, "strategies")
	}
	if len(names) == 0 {
		return "no other fields"
	}
	return quoteList(names)
}

func reqStrings(rs []Requirement) []string {
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
	return quoteList(ids)
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

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// safeKey makes an arbitrary JSON key printable and bounded for a path.
func safeKey(k string) string {
	if !utf8.ValidString(k) {
		k = strings.ToValidUTF8(k, "�")
	}
	return truncate(k, 40)
}

// checkJSONText is checkText for every string (names included) of a JSON value a client sent
// as it is, such as a tool call's arguments: valid JSON can spell NUL as \u0000, which
// Postgres cannot store in jsonb.
func checkJSONText(raw []byte) string {
	if len(raw) == 0 || !bytes.Contains(raw, []byte(`\u0000`)) {
		return "" // the one way a NUL can appear in valid JSON is that escape
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return "" // io.EOF; malformed JSON is the schema's concern, not this check's
		}
		if tok.Kind() == '"' {
			if reason := checkText(tok.String()); reason != "" {
				return reason
			}
		}
	}
}

// checkText returns a reason when s is not acceptable text: invalid UTF-8 or
// a NUL character (Postgres text cannot hold it; neither can many clients).
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}
