package strategies

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// fieldType is the JSON type a strategy field takes.
type fieldType int

const (
	tInteger fieldType = iota
	tNumber
	tString
	tBool
)

// field is one strategy parameter: its type, default and bounds. The table
// of fields per kind is the single source of truth for validation, for the
// catalogue's params JSON Schema and for the normalised form stored.
type field struct {
	name     string
	typ      fieldType
	doc      string
	def      any // default applied when absent; nil: no default
	required bool
	min, max *float64
	enum     []string
	maxLen   int
	pattern  *regexp.Regexp
	// fix is a value that satisfies this field, shown in refusals.
	fix any
}

func ptr(f float64) *float64 { return &f }

// idPattern is the pattern memory, embedder and LLM ids must match.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

const (
	maxHybridParts = 8
	maxHybridDepth = 3
	maxCount       = 10_000
)

var (
	windowFields = []field{
		{name: "size", typ: tInteger, doc: "How many of the newest entries to keep.", def: int64(20), min: ptr(1), max: ptr(maxCount), fix: int64(20)},
	}
	budgetFields = []field{
		{name: "maxEntries", typ: tInteger, doc: "At most this many entries, however much budget is left. Absent: no count limit.", min: ptr(1), max: ptr(maxCount), fix: int64(20)},
		{name: "reserveTokens", typ: tInteger, doc: "Tokens kept free for the rest of the prompt.", def: int64(256), min: ptr(0), max: ptr(1_000_000), fix: int64(256)},
		{name: "minimumTokens", typ: tInteger, doc: "Below this budget nothing is injected (skip-no-budget).", def: int64(100), min: ptr(0), max: ptr(1_000_000), fix: int64(100)},
	}
	summarizeFields = []field{
		{name: "recent", typ: tInteger, doc: "The newest entries kept verbatim.", def: int64(6), min: ptr(1), max: ptr(maxCount), fix: int64(6)},
		{name: "size", typ: tInteger, doc: "Fold once at least this many entries are loaded. Absent: twice `recent`. Must be greater than `recent`.", min: ptr(2), max: ptr(maxCount), fix: int64(12)},
		{name: "llm", typ: tString, doc: "Id of an LLM provider configured on this server (see /v1/capabilities).", pattern: idPattern, maxLen: 64, fix: "my-llm"},
		{name: "model", typ: tString, doc: "The model id the summariser is called with. Never defaulted: name your cheap model.", maxLen: 200, fix: "gpt-4o-mini"},
		{name: "systemPrompt", typ: tString, doc: "Instructions for the summariser; a sensible default is used when absent.", maxLen: 8000, fix: "Summarise the conversation so far in a few sentences."},
	}
	topKFields = []field{
		{name: "topK", typ: tInteger, doc: "How many of the closest entries to admit at most. Absent: 3 (1 on causal memories).", min: ptr(1), max: ptr(100), fix: int64(3)},
		{name: "threshold", typ: tNumber, doc: "The score an entry must exceed to be admitted (strict), on the ranking's own score: cosine similarity for `vector`, the lexical score for `lexical`, the weighted sum for `hybrid`. Absent: the embedder's calibrated default for the ranking (`ranking.thresholds` in /v1/capabilities), else 0.7 on causal memories, else none.", min: ptr(-1), max: ptr(1), fix: 0.3},
		{name: "ranking", typ: tString, doc: "How entries are ordered: `vector` (cosine similarity of the vectors), `lexical` (BM25 with k1 1.2 and b 0.75 over the query's distinct terms, divided by the most that query could score, so in [0, 1)), or `hybrid` (alpha × vector + (1 − alpha) × lexical). Every score is absolute, never normalised within the candidates, so a threshold can turn away a query that matches nothing. Absent: the embedder's default (`ranking.default` in /v1/capabilities).", enum: rankingNames(), fix: "hybrid"},
		{name: "alpha", typ: tNumber, doc: "The vector score's weight in a `hybrid` ranking (the lexical score weighs 1 − alpha); only with `ranking: \"hybrid\"`. Absent: the embedder's default (`ranking.alpha` in /v1/capabilities).", min: ptr(0), max: ptr(1), fix: 0.5},
		{name: "embedder", typ: tString, doc: "Id of an embedder configured on this server. Absent: the memory's embedder, else the server default.", pattern: idPattern, maxLen: 64, fix: "hash"},
		{name: "rejectWindow", typ: tInteger, doc: "How many near-misses below the cut are kept in the evidence.", def: int64(10), min: ptr(0), max: ptr(100), fix: int64(10)},
		{name: "maxChars", typ: tInteger, doc: "Character budget for the recalled text. Absent: no limit.", min: ptr(1), max: ptr(1_000_000), fix: int64(4000)},
	}
	extractFields = []field{
		{name: "extractor", typ: tString, doc: "`pattern` (deterministic heuristics, free) or `llm` (needs `llm` and `model`).", def: "pattern", enum: []string{"pattern", "llm"}, fix: "pattern"},
		{name: "llm", typ: tString, doc: "Id of an LLM provider configured on this server; only with extractor llm.", pattern: idPattern, maxLen: 64, fix: "my-llm"},
		{name: "model", typ: tString, doc: "The model id the extractor is called with; only with extractor llm.", maxLen: 200, fix: "gpt-4o-mini"},
		{name: "minConfidence", typ: tNumber, doc: "Extracted items below this confidence are dropped.", def: 0.0, min: ptr(0), max: ptr(1), fix: 0.5},
		{name: "maxPerTurn", typ: tInteger, doc: "At most this many facts or beats per turn.", def: int64(10), min: ptr(1), max: ptr(100), fix: int64(10)},
	}
	decayFields = []field{
		{name: "halfLifeMs", typ: tNumber, doc: "Age (since last access) at which an entry's score halves.", def: 86_400_000.0, min: ptr(0), max: ptr(3.2e11), fix: 86_400_000.0},
		{name: "minScore", typ: tNumber, doc: "Entries scoring below this are dropped.", def: 0.1, min: ptr(0), max: ptr(1), fix: 0.1},
	}
)

func rankingNames() []string {
	out := make([]string, len(core.Rankings))
	for i, r := range core.Rankings {
		out[i] = string(r)
	}
	return out
}

func (f field) jsonType() string {
	switch f.typ {
	case tInteger:
		return "integer"
	case tNumber:
		return "number"
	case tBool:
		return "boolean"
	default:
		return "string"
	}
}

func (f field) schema() map[string]any {
	s := map[string]any{"type": f.jsonType(), "description": f.doc}
	if f.def != nil {
		s["default"] = f.def
	}
	if f.min != nil {
		s["minimum"] = *f.min
	}
	if f.max != nil {
		s["maximum"] = *f.max
	}
	if len(f.enum) > 0 {
		s["enum"] = f.enum
	}
	if f.maxLen > 0 {
		s["maxLength"] = f.maxLen
	}
	if f.pattern != nil {
		s["pattern"] = f.pattern.String()
	}
	return s
}

// describe says in words what the field accepts, for refusals.
func (f field) describe() string {
	var b strings.Builder
	switch f.typ {
	case tInteger:
		b.WriteString("a whole number")
	case tNumber:
		b.WriteString("a finite number")
	case tBool:
		b.WriteString("true or false")
	default:
		if len(f.enum) > 0 {
			b.WriteString("one of " + core.QuoteList(f.enum))
		} else {
			b.WriteString("a string")
		}
	}
	switch {
	case f.min != nil && f.max != nil:
		fmt.Fprintf(&b, " from %s to %s", num(*f.min), num(*f.max))
	case f.min != nil:
		fmt.Fprintf(&b, " of at least %s", num(*f.min))
	}
	if f.pattern != nil {
		fmt.Fprintf(&b, " matching %s", f.pattern.String())
	}
	if f.maxLen > 0 {
		fmt.Fprintf(&b, " of at most %d characters", f.maxLen)
	}
	return b.String()
}

func num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// toFloat reads a JSON number decoded by encoding/json (float64, or
// json.Number with UseNumber) or a Go integer.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// check validates one raw JSON value against the field and returns its
// normalised form (int64, float64, string or bool), or a reason in words.
func (f field) check(v any) (any, string) {
	switch f.typ {
	case tInteger, tNumber:
		x, ok := toFloat(v)
		if !ok {
			return nil, fmt.Sprintf("must be %s; got %s", f.describe(), core.DescribeJSON(v))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, "must be " + f.describe() + "; got a non-finite number"
		}
		if f.typ == tInteger && x != math.Trunc(x) {
			return nil, fmt.Sprintf("must be %s; got %s", f.describe(), num(x))
		}
		if (f.min != nil && x < *f.min) || (f.max != nil && x > *f.max) {
			return nil, fmt.Sprintf("must be %s; got %s", f.describe(), num(x))
		}
		if f.typ == tInteger {
			return int64(x), ""
		}
		return x, ""
	case tBool:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false; got " + core.DescribeJSON(v)
		}
		return b, ""
	default:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Sprintf("must be %s; got %s", f.describe(), core.DescribeJSON(v))
		}
		if reason := core.CheckText(s); reason != "" {
			return nil, reason
		}
		if f.maxLen > 0 && len([]rune(s)) > f.maxLen {
			return nil, fmt.Sprintf("must be at most %d characters; got %d", f.maxLen, len([]rune(s)))
		}
		if len(f.enum) > 0 && !containsStr(f.enum, s) {
			return nil, fmt.Sprintf("must be one of %s; got %q", core.QuoteList(f.enum), s)
		}
		if f.pattern != nil && !f.pattern.MatchString(s) {
			return nil, fmt.Sprintf("must match %s; got %q", f.pattern.String(), s)
		}
		return s, ""
	}
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
