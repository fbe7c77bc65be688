package server

import (
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestMayHoldLoneSurrogate holds the cheap scan limitBody runs on every body to the decoder
// that decides (jsontext, which refuses a lone surrogate escape as invalid text): over every
// string of up to four pieces drawn from escapes, backslashes and text, whenever the decoder
// refuses a lone surrogate the scan must have flagged the body. The scan may flag more (the
// decoder then clears it), but for these bodies, all valid JSON apart from the escapes, it
// must flag nothing else either: a false alarm would cost a second parse on the hot path.
func TestMayHoldLoneSurrogate(t *testing.T) {
	t.Parallel()
	pieces := []string{`\ud800`, `\uDBFF`, `\udc00`, `\uDFFF`, `\ud83d\ude00`, `\u0041`, `\\`, `\`, `u`, `d800`, `a`, `é`}
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		body := []byte(`{"k":["x","` + prefix + `"]}`)
		valid := jsontext.Value(body).IsValid()
		_, se := firstSyntaxError(body)
		lone := se != nil && strings.Contains(se.Err.Error(), "surrogate")
		if got := mayHoldLoneSurrogate(body); lone && !got {
			t.Errorf("%s: the decoder finds a lone surrogate, the scan does not", body)
		} else if got && valid {
			t.Errorf("%s: the scan flags valid JSON", body)
		}
		if p := loneSurrogateProblem(body); (p != nil) != lone {
			t.Errorf("%s: problem %v, want one: %v", body, p, lone)
		} else if p != nil && p.Path != "k[1]" {
			t.Errorf("%s: path %q, want k[1]", body, p.Path)
		}
		if depth == 4 {
			return
		}
		for _, p := range pieces {
			walk(prefix+p, depth+1)
		}
	}
	walk("", 0)
}

// TestMayHoldLoneSurrogateEdges covers bodies the exhaustive test does not build: an escape
// cut short at the end of the body, and escapes outside a string.
func TestMayHoldLoneSurrogateEdges(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		``:                     false,
		`\u`:                   false,
		`"\ud80`:               false,
		`"\ud800`:              true,
		`"\ud800\udc0`:         true,
		`"\ud800\udc00"`:       false,
		`"\\\ud800"`:           true,
		`"\\\\ud800"`:          false,
		`{"a":1}\udc00`:        true, // outside a string: the decoder then reports a syntax error instead
		`{"a":"\u00e9\u0041"}`: false,
	} {
		if got := mayHoldLoneSurrogate([]byte(body)); got != want {
			t.Errorf("%s: %v, want %v", body, got, want)
		}
	}
	if p := loneSurrogateProblem([]byte(`{"a":1}\udc00`)); p != nil {
		t.Errorf("a syntax error before any string answered as a lone surrogate: %+v", p)
	}
}
