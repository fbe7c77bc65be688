package core

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// referenceStrategyJSON is the encoding the strategy had before appendJSON: json.Marshal for
// every name and value.
func referenceStrategyJSON(t *testing.T, s Strategy) []byte {
	d, _ := lookup(string(s.Kind))
	var b bytes.Buffer
	q := func(v any) []byte {
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	b.WriteString(`{"kind":`)
	b.Write(q(string(s.Kind)))
	for _, f := range d.fields {
		if v, ok := s.values[f.name]; ok {
			b.WriteString(",")
			b.Write(q(f.name))
			b.WriteString(":")
			b.Write(q(v))
		}
	}
	if s.Kind == Hybrid {
		b.WriteString(`,"strategies":[`)
		for i, p := range s.Parts {
			if i > 0 {
				b.WriteString(",")
			}
			b.Write(referenceStrategyJSON(t, p))
		}
		b.WriteString("]")
	}
	b.WriteString("}")
	return b.Bytes()
}

func TestStrategyJSONIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	topK := Strategy{Kind: TopK, values: map[string]any{"topK": int64(3), "threshold": 0.55, "rejectWindow": int64(-0),
		"embedder": "a<b>&c\u00e9\"\\\n\u2028", "maxChars": int64(math.MaxInt64)}}
	decay := Strategy{Kind: Decay, values: map[string]any{"halfLifeMs": int64(86400000), "minScore": 1e-7}}
	window := Strategy{Kind: Window, values: map[string]any{"size": int64(5)}}
	extract := Strategy{Kind: Extract, values: map[string]any{"extractor": "pattern", "minConfidence": 1e21}}
	hybrid := Strategy{Kind: Hybrid, values: map[string]any{}, Parts: []Strategy{window, topK, {Kind: Hybrid, values: map[string]any{}, Parts: []Strategy{decay}}}}
	for _, s := range []Strategy{topK, decay, window, extract, hybrid} {
		got, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceStrategyJSON(t, s); !bytes.Equal(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
