package core

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lexical ranking: what a term is, what an entry keeps of its text for a lexical search, and
// the score. Both stores and every area use these, so that a term and a score mean the same
// thing everywhere.
//
// The score is BM25 (k1 1.2, b 0.75, the inverse document frequency that never goes negative,
// ln(1 + (N − df + 0.5)/(df + 0.5))) over the query's distinct terms, divided by the most the
// same query could score on this collection, Σ idf(t)·(k1 + 1) (a term's frequency factor
// tf·(k1+1)/(tf + k1·(1 − b + b·len/avgLen)) stays below k1 + 1; a term no entry holds counts
// in it as one entry held it). So the score lies in [0, 1):
// 0 when the entry holds none of the query's terms, near 1 only when it holds all of them many
// times. It is absolute in the sense a threshold needs: it depends on the query, the entry and
// the collection's statistics, never on which other entries happened to be candidates, so an
// unrelated query scores near 0 however it ranks.

// BM25 parameters: the textbook values.
const (
	BM25K1 = 1.2
	BM25B  = 0.75
)

// maxTermRunes bounds a term: a longer run of letters (a base64 blob, a hash) is cut, so that
// an index entry stays small; two such runs that agree on their first 64 characters count as
// one term.
const maxTermRunes = 64

// MaxTermFreq caps a term's stored frequency (Postgres keeps it as a smallint).
const MaxTermFreq = 32767

// Lexical is what an entry keeps of its text for lexical ranking: its distinct terms in byte
// order, how often each occurs, and its length in terms (occurrences, all counted).
type Lexical struct {
	Terms  []string
	Freqs  []int32
	Length int
}

// Freq returns how often term occurs (0 when it does not).
func (l *Lexical) Freq(term string) int {
	if l == nil {
		return 0
	}
	i, ok := slices.BinarySearch(l.Terms, term)
	if !ok {
		return 0
	}
	return int(l.Freqs[i])
}

// Terms splits text into its terms, in order, repeats included: maximal runs of letters,
// digits and combining marks (the built-in embedder's words), lower-cased, each cut to 64
// characters. Everything else separates terms. No stemming and no stop words: a term's weight
// comes from how rare it is in the collection, not from a list of one language's words. (A
// plural-folding stemmer, Harman's "S" rule, was measured by bench/quality: it lifted the
// lexical recall@10 of the conversations from 0.78 to 0.81 but took the corpus's from 0.41 to
// 0.40, below plain BM25's; it is not applied.)
func Terms(text string) []string {
	var out []string
	var b strings.Builder
	runes := 0
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
			runes = 0
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		var r rune
		if c < utf8.RuneSelf {
			r = rune(c)
			i++
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				r += 'a' - 'A'
			default:
				flush()
				continue
			}
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(text[i:])
			i += size
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
				flush()
				continue
			}
			r = unicode.ToLower(r)
		}
		if runes < maxTermRunes {
			b.WriteRune(r)
			runes++
		}
	}
	flush()
	return out
}

// LexicalOf is text's lexical features; nil when it has no terms.
func LexicalOf(text string) *Lexical {
	terms := Terms(text)
	if len(terms) == 0 {
		return nil
	}
	counts := make(map[string]int32, len(terms))
	for _, t := range terms {
		if counts[t] < MaxTermFreq {
			counts[t]++
		}
	}
	l := &Lexical{Terms: make([]string, 0, len(counts)), Length: len(terms)}
	for t := range counts {
		l.Terms = append(l.Terms, t)
	}
	slices.Sort(l.Terms)
	l.Freqs = make([]int32, len(l.Terms))
	for i, t := range l.Terms {
		l.Freqs[i] = counts[t]
	}
	return l
}

// QueryTerms are a query's distinct terms in byte order: each counts once, however often the
// query repeats it.
func QueryTerms(text string) []string {
	terms := Terms(text)
	slices.Sort(terms)
	return slices.Compact(terms)
}

// TermStats are a collection's statistics for a query: how many entries it holds, their total
// length in terms, and for each query term how many entries hold it.
type TermStats struct {
	Docs   int
	Length int64
	DF     []int // index-aligned with the query's terms
}

// IDF is BM25's inverse document frequency of a term held by df of n entries.
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// LexicalScorer scores entries against one query on one collection.
type LexicalScorer struct {
	Terms  []string
	IDFs   []float64
	AvgLen float64
	// Max is Σ idf·(k1 + 1): what the score is divided by.
	Max float64
}

// NewLexicalScorer prepares the scoring of terms (QueryTerms) with st.
func NewLexicalScorer(terms []string, st TermStats) LexicalScorer {
	s := LexicalScorer{Terms: terms, IDFs: make([]float64, len(terms))}
	if st.Docs > 0 {
		s.AvgLen = float64(st.Length) / float64(st.Docs)
	}
	for i := range terms {
		df := 0
		if i < len(st.DF) {
			df = st.DF[i]
		}
		s.IDFs[i] = IDF(st.Docs, df)
		// The maximum weighs a term no entry holds as one that a single entry holds: it can
		// raise no entry's score, and in a small collection (a causal memory's few snapshots)
		// the idf of an unseen term would otherwise outweigh every term that matched.
		s.Max += IDF(st.Docs, max(df, 1)) * (BM25K1 + 1)
	}
	return s
}

// Score is l's lexical score in [0, 1): its BM25 over the maximum (see the package comment).
// An entry without features scores 0.
func (s LexicalScorer) Score(l *Lexical) float64 {
	if l == nil || s.Max == 0 || s.AvgLen == 0 {
		return 0
	}
	norm := BM25K1 * (1 - BM25B + BM25B*float64(l.Length)/s.AvgLen)
	sum := 0.0
	for i, t := range s.Terms {
		tf := float64(l.Freq(t))
		if tf == 0 {
			continue
		}
		sum += s.IDFs[i] * tf * (BM25K1 + 1) / (tf + norm)
	}
	return sum / s.Max
}

// ScoreFreqs is Score for an entry of length terms whose frequencies of the query's terms are
// freqs (index-aligned with Terms), as a store reads them without the entry's other terms.
func (s LexicalScorer) ScoreFreqs(freqs []int32, length int) float64 {
	if length == 0 || s.Max == 0 || s.AvgLen == 0 {
		return 0
	}
	norm := BM25K1 * (1 - BM25B + BM25B*float64(length)/s.AvgLen)
	sum := 0.0
	for i := range s.Terms {
		if i >= len(freqs) || freqs[i] == 0 {
			continue
		}
		tf := float64(freqs[i])
		sum += s.IDFs[i] * tf * (BM25K1 + 1) / (tf + norm)
	}
	return sum / s.Max
}

// Ranking is how a topK read orders a memory's entries.
type Ranking string

// The rankings. Every score lies in [-1, 1] and keeps its meaning from one query to the next.
const (
	// RankVector orders by the cosine similarity of the entry's vector to the query's.
	RankVector Ranking = "vector"
	// RankLexical orders by the lexical score (LexicalScorer): BM25 over its maximum.
	RankLexical Ranking = "lexical"
	// RankHybrid orders by alpha·vector + (1 − alpha)·lexical: a weighted sum of two absolute
	// scores, never a fusion of ranks or a normalisation within the candidates, so a query that
	// matches nothing scores low whatever else it ranks.
	RankHybrid Ranking = "hybrid"
)

// Rankings lists them in catalogue order.
var Rankings = []Ranking{RankVector, RankLexical, RankHybrid}

// Fuse is the score a ranking orders by, from an entry's vector and lexical scores.
func Fuse(r Ranking, alpha, vector, lexical float64) float64 {
	switch r {
	case RankLexical:
		return lexical
	case RankHybrid:
		return alpha*vector + (1-alpha)*lexical
	default:
		return vector
	}
}

// RankingDefaults are what a topK read on one embedder uses when its strategy leaves the
// ranking, alpha or threshold unset, and where the thresholds come from.
type RankingDefaults struct {
	Ranking Ranking
	Alpha   float64
	// Thresholds holds a calibrated default threshold per ranking; a ranking without one has
	// no default threshold on this embedder.
	Thresholds map[Ranking]float64
	// Calibration says how the thresholds were chosen (a method and a command to rerun).
	Calibration string
}

// Clone returns a copy of l that shares nothing with it.
func (l *Lexical) Clone() *Lexical {
	if l == nil {
		return nil
	}
	return &Lexical{Terms: slices.Clone(l.Terms), Freqs: slices.Clone(l.Freqs), Length: l.Length}
}

// RankedText is the text an entry of a ranked kind is ranked by, read from its stored value:
// a message's content, a causal snapshot's question (what its vector embeds), a corpus chunk's
// text; "" for other kinds or a value that does not decode.
func RankedText(kind EntryKind, value []byte) string {
	var v struct {
		Content string `json:"content"`
		Query   string `json:"query"`
		Text    string `json:"text"`
	}
	if DecodeValue(value, &v) != nil {
		return ""
	}
	switch kind {
	case KindMessage:
		return v.Content
	case KindSnapshot:
		return v.Query
	case KindDocument:
		return v.Text
	}
	return ""
}

// LexicalBackfiller gives entries stored before lexical ranking existed their lexical
// features; it returns how many entries it updated, and is done when that is 0.
type LexicalBackfiller interface {
	BackfillLexical(ctx context.Context, batch int) (int64, error)
}
