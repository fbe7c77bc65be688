package turns_test

import (
	"math"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

func TestExtractFacts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want map[string]string
	}{
		{"My name is Ada and I live in Paris.", map[string]string{"name": "Ada", "location": "Paris"}},
		{"Please call me Bo. I work at Acme Corp", map[string]string{"name": "Bo", "employer": "Acme Corp"}},
		{"I prefer tea, but I don't like coffee", map[string]string{"likes:tea": "tea", "dislikes:coffee": "coffee"}},
		{"My favorite color is teal", map[string]string{"favorite:color": "teal"}},
		{"Remember that the invoice is due Friday", map[string]string{"note:the-invoice-is-due-friday": "the invoice is due Friday"}},
		{"My email is ada@example.com", map[string]string{"email": "ada@example.com"}},
		{"What is the weather?", map[string]string{}},
		{"My name is Ada. My name is Grace.", map[string]string{"name": "Grace"}},
	}
	for _, tc := range tests {
		got := map[string]string{}
		for _, f := range turns.ExtractFacts([]core.Message{{Role: "user", Content: tc.text}, {Role: "assistant", Content: "My name is Bot."}}, 0, 10) {
			got[f.Key] = f.Value
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q → %v, want %v", tc.text, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%q → %s=%q, want %q", tc.text, k, got[k], v)
			}
		}
	}
	if n := len(turns.ExtractFacts([]core.Message{{Role: "user", Content: "I like tea. I like jam. I like bread."}}, 0, 2)); n != 2 {
		t.Errorf("maxPerTurn 2 kept %d", n)
	}
	if n := len(turns.ExtractFacts([]core.Message{{Role: "user", Content: "I like tea"}}, 0.9, 10)); n != 0 {
		t.Errorf("minConfidence 0.9 kept a 0.7 fact")
	}
}

func TestNormalizeHostTurn(t *testing.T) {
	t.Parallel()
	f := func(x float64) *float64 { return &x }
	tests := []struct {
		in   *float64
		want int
	}{{nil, 1}, {f(math.NaN()), 1}, {f(math.Inf(1)), 1}, {f(0), 1}, {f(-4), 1}, {f(1), 1}, {f(5), 5}, {f(7.9), 7}, {f(1e300), math.MaxInt32 - 1}}
	for _, tc := range tests {
		if got := turns.NormalizeHostTurn(tc.in); got != tc.want {
			t.Errorf("NormalizeHostTurn(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
