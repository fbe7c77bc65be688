package main

import (
	"math"
	"slices"
)

// vectorSet holds vectors in one flat slice (cache-friendly for a scan),
// their ids and their norms, for exact cosine ranking in Go.
type vectorSet struct {
	dims  int
	flat  []float32
	norms []float64
	ids   []string
	index map[string]int
}

func newVectorSet(dims int, n int) *vectorSet {
	return &vectorSet{dims: dims, flat: make([]float32, 0, n*dims), index: make(map[string]int, n)}
}

func (s *vectorSet) add(id string, v []float32) {
	s.index[id] = len(s.ids)
	s.ids = append(s.ids, id)
	s.flat = append(s.flat, v...)
	s.norms = append(s.norms, math.Sqrt(dot64(v, v)))
}

func (s *vectorSet) len() int { return len(s.ids) }

func (s *vectorSet) vec(i int) []float32 { return s.flat[i*s.dims : (i+1)*s.dims] }

// score is the cosine similarity of entry i to q (qnorm: |q|), in float64,
// which is what pgvector's 1 - (a <=> b) computes.
func (s *vectorSet) score(i int, q []float32, qnorm float64) float64 {
	n := s.norms[i] * qnorm
	if n == 0 {
		return 0
	}
	return dot64(s.vec(i), q) / n
}

// scoreOf is score by id; ok false for an id not in the set.
func (s *vectorSet) scoreOf(id string, q []float32) (float64, bool) {
	i, ok := s.index[id]
	if !ok {
		return 0, false
	}
	return s.score(i, q, math.Sqrt(dot64(q, q))), true
}

type hit struct {
	id    string
	score float64
}

// topK scans every vector and keeps the k best, best first (ties by id, so
// the answer is deterministic).
func (s *vectorSet) topK(q []float32, k int) []hit {
	qnorm := math.Sqrt(dot64(q, q))
	best := make([]hit, 0, k+1)
	for i := range s.ids {
		sc := s.score(i, q, qnorm)
		if len(best) == k && sc <= best[k-1].score {
			continue
		}
		j := len(best)
		for j > 0 && best[j-1].score < sc {
			j--
		}
		best = slices.Insert(best, j, hit{s.ids[i], sc})
		if len(best) > k {
			best = best[:k]
		}
	}
	return best
}

func dot64(a, b []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return s0 + s1 + s2 + s3
}

// tieEps: two scores closer than this are a tie, so either entry is a
// correct member of the top k.
const tieEps = 1e-6

// recallAt compares the first k ids an indexed path returned with the exact
// top k: an id counts as a hit when its exact score is at least the exact
// k-th score (minus tieEps). It returns the hits (≤ k) and the number of
// positions the exact answer has (min(k, corpus size)).
func recallAt(got []string, exact []hit, k int, s *vectorSet, q []float32) (hits, want int) {
	want = min(k, len(exact))
	if want == 0 {
		return 0, 0
	}
	kth := exact[want-1].score
	seen := map[string]bool{}
	for _, id := range got[:min(k, len(got))] {
		if seen[id] {
			continue
		}
		seen[id] = true
		if sc, ok := s.scoreOf(id, q); ok && sc >= kth-tieEps {
			hits++
		}
	}
	return min(hits, want), want
}
