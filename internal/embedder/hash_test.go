package embedder_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
)

func newHash(t testing.TB, dims int) *embedder.Hash {
	t.Helper()
	h, err := embedder.NewHash("hash", dims)
	if err != nil {
		t.Fatalf("NewHash(%d): %v", dims, err)
	}
	return h
}

func embedOne(t testing.TB, e core.Embedder, text string) []float32 {
	t.Helper()
	vs, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatalf("Embed(%q): %v", text, err)
	}
	if len(vs) != 1 {
		t.Fatalf("Embed(%q) returned %d vectors", text, len(vs))
	}
	return vs[0]
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestHashDeterministic(t *testing.T) {
	t.Parallel()
	texts := []string{"the cat sat on the mat", "Footprint remembers what agents said", "Ça coûte cher"}
	first, err := newHash(t, 384).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh embedder, one text at a time: batching and instance must
	// not matter.
	other := newHash(t, 384)
	for i, text := range texts {
		if got := embedOne(t, other, text); !equalVec(got, first[i]) {
			t.Errorf("text %d: vector differs between calls", i)
		}
	}
}

// TestHashGolden pins a few coordinates. Stored vectors depend on them: if
// this fails, the hashing changed and HashModel must get a new name.
func TestHashGolden(t *testing.T) {
	t.Parallel()
	h := newHash(t, 64)
	tests := []struct {
		text    string
		nonzero int
		coords  map[int]float64
	}{
		{"the cat sat on the mat", 29, map[int]float64{29: -0.591377020, 30: 0.295688510, 0: 0.147844255, 1: 0}},
		{"Footprint remembers", 36, map[int]float64{25: -0.485071242, 11: -0.363803446, 2: 0}},
		{"Ça coûte cher", -1, map[int]float64{30: -0.478091449, 47: -0.478091449, 10: -0.119522862}},
	}
	for _, tt := range tests {
		v := embedOne(t, h, tt.text)
		nz := 0
		for _, x := range v {
			if x != 0 {
				nz++
			}
		}
		if tt.nonzero >= 0 && nz != tt.nonzero {
			t.Errorf("%q: %d non-zero coordinates, golden %d", tt.text, nz, tt.nonzero)
		}
		for i, want := range tt.coords {
			if math.Abs(float64(v[i])-want) > 1e-6 {
				t.Errorf("%q: v[%d] = %.9f, golden %.9f", tt.text, i, v[i], want)
			}
		}
	}
}

func TestHashUnitNormAndDims(t *testing.T) {
	t.Parallel()
	texts := []string{"a", "x9", "the cat sat on the mat", strings.Repeat("lorem ipsum dolor ", 200), "日本語のテキスト", "naïve café"}
	for _, dims := range []int{embedder.MinHashDims, 100, 384, embedder.MaxHashDims} {
		h := newHash(t, dims)
		if got := h.Info().Dimensions; got != dims {
			t.Errorf("Info().Dimensions = %d, want %d", got, dims)
		}
		vs, err := h.Embed(context.Background(), texts)
		if err != nil {
			t.Fatalf("dims %d: %v", dims, err)
		}
		for i, v := range vs {
			if len(v) != dims {
				t.Errorf("dims %d text %d: len %d", dims, i, len(v))
			}
			if n := norm(v); math.Abs(n-1) > 1e-5 {
				t.Errorf("dims %d text %d: norm %v", dims, i, n)
			}
		}
	}
}

func TestNewHashValidates(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		id   string
		dims int
	}{{"hash", embedder.MinHashDims - 1}, {"hash", embedder.MaxHashDims + 1}, {"hash", 0}, {"", 384}, {"bad id", 384}} {
		if _, err := embedder.NewHash(tt.id, tt.dims); err == nil {
			t.Errorf("NewHash(%q, %d) accepted", tt.id, tt.dims)
		}
	}
}

func TestHashSimilarity(t *testing.T) {
	t.Parallel()
	h := newHash(t, 384)
	base := embedOne(t, h, "the cat sat on the mat")
	similar := embedOne(t, h, "a cat sat on a mat")
	unrelated := embedOne(t, h, "quarterly revenue grew")
	simCos, unrelCos := cosine(base, similar), cosine(base, unrelated)
	if simCos <= unrelCos {
		t.Fatalf("cos(similar) = %.3f, not above cos(unrelated) = %.3f", simCos, unrelCos)
	}
	if simCos < 0.5 || math.Abs(unrelCos) > 0.3 {
		t.Errorf("weak separation: similar %.3f, unrelated %.3f", simCos, unrelCos)
	}
	// Spellings count: an inflected form is closer than an unrelated word.
	if a, b := cosine(embedOne(t, h, "embedders"), embedOne(t, h, "embedder")), cosine(embedOne(t, h, "embedders"), embedOne(t, h, "revenue")); a <= b {
		t.Errorf("cos(embedders, embedder) = %.3f <= cos(embedders, revenue) = %.3f", a, b)
	}
}

// TestHashTokenisation checks case folding and that punctuation only
// separates words.
func TestHashTokenisation(t *testing.T) {
	t.Parallel()
	h := newHash(t, 128)
	for _, pair := range [][2]string{
		{"Hello, World!", "hello world"},
		{"CAFÉ Crème", "café crème"},
		{"  tabs\tand\nnewlines ", "tabs and newlines"},
	} {
		if !equalVec(embedOne(t, h, pair[0]), embedOne(t, h, pair[1])) {
			t.Errorf("%q and %q embed differently", pair[0], pair[1])
		}
	}
	// Word order matters a little (bigrams), so these differ.
	if equalVec(embedOne(t, h, "dog bites man"), embedOne(t, h, "man bites dog")) {
		t.Error("word order is ignored")
	}
}

func TestHashNoWords(t *testing.T) {
	t.Parallel()
	h := newHash(t, 384)
	for _, text := range []string{"", "   ", "!!! ... ---", "\t\n"} {
		_, err := h.Embed(context.Background(), []string{"fine", text})
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%q: err = %v, want ErrInvalid", text, err)
			continue
		}
		if !strings.Contains(err.Error(), "text 1 has no words to embed") {
			t.Errorf("%q: message %q does not name the text", text, err)
		}
	}
	vs, err := h.Embed(context.Background(), nil)
	if err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v", vs, err)
	}
}

func TestHashInfo(t *testing.T) {
	t.Parallel()
	info := newHash(t, 256).Info()
	if info.ID != "hash" || info.Kind != "hash" || info.Model != embedder.HashModel || info.Dimensions != 256 {
		t.Errorf("Info() = %+v", info)
	}
	if !strings.Contains(info.Description, "LEXICAL") || !strings.Contains(info.Description, "not semantic") {
		t.Errorf("description does not say it is lexical: %q", info.Description)
	}
}

// benchText is about 200 words of ordinary prose.
var benchText = strings.Repeat("Footprint keeps an explainable memory for language-model agents: "+
	"every recall says which entries matched, why they matched, and which strategy ranked them. "+
	"The built-in embedder hashes words, word pairs and character n-grams, so it runs offline "+
	"and gives the same vector on every machine, which makes tests and demos reproducible. ", 4)

func BenchmarkHashEmbed(b *testing.B) {
	h := newHash(b, 384)
	texts := []string{benchText}
	ctx := context.Background()
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(strings.Fields(benchText))), "words")
}

// BenchmarkLowerSplit is the floor BenchmarkHashEmbed is measured against:
// only lower-casing and splitting the same text into words.
func BenchmarkLowerSplit(b *testing.B) {
	notWord := func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		if len(strings.FieldsFunc(strings.ToLower(benchText), notWord)) == 0 {
			b.Fatal("no words")
		}
	}
}
