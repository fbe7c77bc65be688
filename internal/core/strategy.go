package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// StrategyKind names a memory strategy: the rule that decides what is
// written and how recall works.
type StrategyKind string

// The seven strategy kinds, cheapest first.
const (
	Window    StrategyKind = "window"
	Budget    StrategyKind = "budget"
	Summarize StrategyKind = "summarize"
	TopK      StrategyKind = "topK"
	Extract   StrategyKind = "extract"
	Decay     StrategyKind = "decay"
	Hybrid    StrategyKind = "hybrid"
)

// Requirement is something a strategy needs supplied before it can run.
type Requirement string

// The requirements a strategy can declare.
const (
	ReqEmbedder    Requirement = "embedder"
	ReqVectorStore Requirement = "vector-store"
	ReqLLM         Requirement = "llm"
	ReqModel       Requirement = "model"
)

// Strategy is a validated strategy: its kind, every field of that kind with
// defaults applied (in the catalogue's order), and for a hybrid its parts.
// The strategies package builds one from a definition (NewStrategy, after
// validation); a store rehydrates one from the JSON it wrote (UnmarshalJSON).
// The zero value is not a valid strategy.
type Strategy struct {
	Kind StrategyKind
	// Parts are a hybrid's strategies, in the order given.
	Parts  []Strategy
	fields []StrategyField
}

// StrategyField is one field of a strategy and its value: an int64, a
// float64, a string or a bool.
type StrategyField struct {
	Name  string
	Value any
}

// NewStrategy returns a strategy of kind with fields, in the order given
// (the catalogue's), and parts. It does not validate: the strategies package
// does, before it calls this.
func NewStrategy(kind StrategyKind, fields []StrategyField, parts []Strategy) Strategy {
	return Strategy{Kind: kind, Parts: parts, fields: fields}
}

// Fields returns the strategy's fields in order. Callers must not modify it.
func (s Strategy) Fields() []StrategyField { return s.fields }

func (s Strategy) value(name string) any {
	for _, f := range s.fields {
		if f.Name == name {
			return f.Value
		}
	}
	return nil
}

// Int returns an integer field and whether it is set (explicitly or by
// default).
func (s Strategy) Int(name string) (int64, bool) {
	v, ok := s.value(name).(int64)
	return v, ok
}

// Float returns a number field (integers widen) and whether it is set.
func (s Strategy) Float(name string) (float64, bool) {
	switch v := s.value(name).(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// Str returns a string field, or "" when unset.
func (s Strategy) Str(name string) string {
	v, _ := s.value(name).(string)
	return v
}

// Find returns the first strategy of kind in s: s itself or a hybrid's part,
// depth first.
func (s Strategy) Find(kind StrategyKind) (Strategy, bool) {
	if s.Kind == kind {
		return s, true
	}
	for _, p := range s.Parts {
		if f, ok := p.Find(kind); ok {
			return f, true
		}
	}
	return Strategy{}, false
}

// MarshalJSON writes the strategy with `kind` first and the fields in
// catalogue order, so stored and returned definitions read the same way
// every time.
func (s Strategy) MarshalJSON() ([]byte, error) {
	return s.AppendJSON(make([]byte, 0, 96))
}

// AppendJSON appends the strategy's JSON to b. It runs for every memory of every recall (the
// answer and its receipt both carry the strategy), so field names and values are appended
// directly rather than through a json.Marshal call each.
func (s Strategy) AppendJSON(b []byte) ([]byte, error) {
	if s.Kind == "" {
		return nil, errors.New("core: marshal a strategy without a kind")
	}
	b = append(b, `{"kind":`...)
	b = appendQuoted(b, string(s.Kind))
	for _, f := range s.fields {
		b = append(b, ',')
		b = appendQuoted(b, f.Name)
		b = append(b, ':')
		switch v := f.Value.(type) {
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
			if b, err = p.AppendJSON(b); err != nil {
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

// UnmarshalJSON rehydrates a strategy from JSON this service wrote (a stored
// definition, a recall receipt), keeping its fields in the order written.
// It checks the shape — an object with a `kind`, scalar fields, a hybrid's
// `strategies` — so that a corrupt row is an error rather than a surprise
// later, but not the catalogue's rules, which were checked when the memory
// was defined.
func (s *Strategy) UnmarshalJSON(b []byte) error {
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	parsed, err := decodeStrategy(dec, 0)
	if err != nil {
		return fmt.Errorf("core: stored strategy: %w", err)
	}
	*s = parsed
	return nil
}

// maxStoredStrategyDepth bounds the nesting a stored strategy may have (the
// catalogue allows 3 levels of hybrids).
const maxStoredStrategyDepth = 8

func decodeStrategy(dec *jsontext.Decoder, depth int) (Strategy, error) {
	if depth > maxStoredStrategyDepth {
		return Strategy{}, errors.New("nested too deep")
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return Strategy{}, err
	}
	if tok.Kind() != '{' {
		return Strategy{}, errors.New("not an object")
	}
	var s Strategy
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return Strategy{}, err
		}
		switch key := name.String(); key {
		case "kind":
			v, err := dec.ReadToken()
			if err != nil {
				return Strategy{}, err
			}
			if v.Kind() != '"' || v.String() == "" {
				return Strategy{}, errors.New("`kind` is not a non-empty string")
			}
			s.Kind = StrategyKind(v.String())
		case "strategies":
			if t, err := dec.ReadToken(); err != nil || t.Kind() != '[' {
				return Strategy{}, errors.New("`strategies` is not an array")
			}
			for dec.PeekKind() != ']' {
				p, err := decodeStrategy(dec, depth+1)
				if err != nil {
					return Strategy{}, err
				}
				s.Parts = append(s.Parts, p)
			}
			if _, err := dec.ReadToken(); err != nil {
				return Strategy{}, err
			}
		default:
			v, err := dec.ReadToken()
			if err != nil {
				return Strategy{}, err
			}
			var value any
			switch v.Kind() {
			case '"':
				value = v.String()
			case 't', 'f':
				value = v.Bool()
			case '0':
				raw := v.String()
				if !strings.ContainsAny(raw, ".eE") {
					if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
						value = n
						break
					}
				}
				f, err := strconv.ParseFloat(raw, 64)
				if err != nil {
					return Strategy{}, fmt.Errorf("field %q: %w", key, err)
				}
				value = f
			case 'n':
				continue
			default:
				return Strategy{}, fmt.Errorf("field %q is not a scalar", key)
			}
			s.fields = append(s.fields, StrategyField{Name: key, Value: value})
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return Strategy{}, err
	}
	if s.Kind == "" {
		return Strategy{}, errors.New("no `kind`")
	}
	return s, nil
}

// Equal reports whether two strategies are the same configuration.
func (s Strategy) Equal(o Strategy) bool {
	a, errA := s.MarshalJSON()
	b, errB := o.MarshalJSON()
	return errA == nil && errB == nil && bytes.Equal(a, b)
}
