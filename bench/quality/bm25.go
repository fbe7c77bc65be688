package main

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// bm25Index is the benchmark's own BM25 (Robertson–Spärck Jones idf, k1 1.2, b 0.75, Lucene's
// ln(1 + (N − df + 0.5)/(df + 0.5))), written apart from the service's so that it is an
// independent reference: its own tokeniser (Unicode letters and digits, lower-cased, split on
// everything else), its own postings, no normalisation (rank order is all it is used for).
type bm25Index struct {
	docs     []string // ids
	lengths  []int
	postings map[string][]posting
	avgLen   float64
}

type posting struct {
	doc int
	tf  int
}

func tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
}

func newBM25(ids, texts []string) *bm25Index {
	ix := &bm25Index{docs: ids, lengths: make([]int, len(ids)), postings: map[string][]posting{}}
	total := 0
	for d, text := range texts {
		tf := map[string]int{}
		toks := tokens(text)
		for _, t := range toks {
			tf[t]++
		}
		ix.lengths[d] = len(toks)
		total += len(toks)
		for t, n := range tf {
			ix.postings[t] = append(ix.postings[t], posting{d, n})
		}
	}
	if len(ids) > 0 {
		ix.avgLen = float64(total) / float64(len(ids))
	}
	return ix
}

// search returns the ids of the best k documents for query, best first (equal scores: the
// later document first, as the service breaks ties newest first).
func (ix *bm25Index) search(query string, k int) []string {
	const k1, b = 1.2, 0.75
	seen := map[string]bool{}
	scores := map[int]float64{}
	n := float64(len(ix.docs))
	for _, t := range tokens(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(ix.lengths[p.doc])/ix.avgLen))
		}
	}
	type hit struct {
		doc   int
		score float64
	}
	hits := make([]hit, 0, len(scores))
	for d, s := range scores {
		hits = append(hits, hit{d, s})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].doc > hits[j].doc
	})
	out := make([]string, 0, k)
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, ix.docs[h.doc])
	}
	return out
}
