package core_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/footprint/footprint/internal/core"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ text, want string }{
		{"Refunds, POLICIES & the boxes!", "[refunds policies the boxes]"}, // no stemming
		{"Ünïcode naïve café's 42nd", "[ünïcode naïve café s 42nd]"},       // an apostrophe separates
		{"  ... ", "[]"},
	} {
		if got := fmt.Sprint(core.Terms(c.text)); got != c.want {
			t.Errorf("Terms(%q) = %s, want %s", c.text, got, c.want)
		}
	}
	if got := fmt.Sprint(core.QueryTerms("b a B refunds refund")); got != "[a b refund refunds]" {
		t.Errorf("QueryTerms: %s, want the distinct terms in byte order", got)
	}
	l := core.LexicalOf("to be or not to be")
	if fmt.Sprint(l.Terms) != "[be not or to]" || fmt.Sprint(l.Freqs) != "[2 1 1 2]" || l.Length != 6 || l.Freq("to") != 2 || l.Freq("x") != 0 {
		t.Errorf("LexicalOf: %+v", l)
	}
	if core.LexicalOf("?!") != nil {
		t.Error("a text without words has features")
	}
}

// TestLexicalScorer: the score is BM25 over its maximum; a term no entry holds weighs in the
// maximum as a term one entry holds, so it lowers every score alike without swamping a small
// collection.
func TestLexicalScorer(t *testing.T) {
	t.Parallel()
	// Two entries of two terms each; the query "refund zebra": refund in one entry (idf ln 2),
	// zebra in none (weighed ln 2 in the maximum, as if one entry held it).
	st := core.TermStats{Docs: 2, Length: 4, DF: []int{1, 0}}
	sc := core.NewLexicalScorer([]string{"refund", "zebra"}, st)
	idf := math.Log(2)
	if math.Abs(sc.IDFs[0]-idf) > 1e-12 || math.Abs(sc.IDFs[1]-math.Log(1+2.5/0.5)) > 1e-12 || math.Abs(sc.Max-2*idf*2.2) > 1e-12 {
		t.Errorf("scorer: idf %v, max %v", sc.IDFs, sc.Max)
	}
	// "refund policy": tf 1, length 2 = the mean, so the frequency factor is 2.2/2.2 = 1.
	got := sc.Score(core.LexicalOf("refund policy"))
	if want := idf / (2 * idf * 2.2); math.Abs(got-want) > 1e-12 {
		t.Errorf("score %v, want %v (half the query, at tf 1)", got, want)
	}
	if sc.Score(core.LexicalOf("nothing here")) != 0 || sc.Score(nil) != 0 {
		t.Error("an entry with no query term scores above 0")
	}
	if s := sc.Score(core.LexicalOf("refund refund refund refund refund refund refund refund")); s <= got || s >= 1 {
		t.Errorf("a term repeated scores %v: more than once, below 1", s)
	}
	if (core.NewLexicalScorer([]string{"a"}, core.TermStats{})).Score(core.LexicalOf("a")) != 0 {
		t.Error("an empty collection scores")
	}
	for _, c := range []struct {
		r    core.Ranking
		want float64
	}{{core.RankVector, 0.8}, {core.RankLexical, 0.2}, {core.RankHybrid, 0.35000000000000003}} { // 0.25·0.8 + 0.75·0.2 in float64
		if got := core.Fuse(c.r, 0.25, 0.8, 0.2); got != c.want {
			t.Errorf("Fuse(%s) = %v, want %v", c.r, got, c.want)
		}
	}
}
