package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

var _ recall.Store = (*Store)(nil)

// RankEntries scores every live entry of the memory with vectors of the query's space exactly,
// by the query's ranking, best first; entries of another vector space are reported, never
// scored. The lexical statistics are those of the same entries.
func (s *Store) RankEntries(ctx context.Context, q recall.RankQuery) (recall.RankResult, error) {
	if err := ctx.Err(); err != nil {
		return recall.RankResult{}, err
	}
	now := normalise(q.Now)
	res := recall.RankResult{Mode: "exact"}
	s.es.mu.RLock()
	fp, hasFP := s.es.fingerprints[nsKey{q.Tenant, q.Namespace}][q.MemoryID]
	otherSpace := hasFP && (fp.Model != q.Model || fp.Dims != len(q.Vector))
	if otherSpace {
		res.Stored = &core.Fingerprint{MemoryID: q.MemoryID, Model: fp.Model, Dims: fp.Dims}
	}
	var cands []core.Entry
	for _, e := range s.es.entries[nsKey{q.Tenant, q.Namespace}] {
		if !hasFP || e.MemoryID != q.MemoryID || !slices.Contains(q.Kinds, e.Kind) || !live(e, now) || len(e.Embedding) == 0 {
			continue
		}
		if otherSpace {
			res.Mismatched = append(res.Mismatched, copyEntry(e))
			continue
		}
		if len(e.Embedding) != len(q.Vector) || e.EmbeddingModel != q.Model {
			continue // cannot happen: writes are checked against the fingerprint
		}
		cands = append(cands, e)
	}
	s.es.mu.RUnlock()
	res.Total = len(cands)
	var lex core.LexicalScorer
	if recall.UsesLexical(q.Ranking) {
		lex = core.NewLexicalScorer(q.Terms, termStats(cands, q.Terms))
	}
	// Scores first, sorted as small values; only the best Limit entries are copied out.
	scored := make([]recall.Scored, len(cands))
	order := make([]int, len(cands))
	for i := range cands {
		e := &cands[i]
		sc := &scored[i]
		if recall.UsesVector(q.Ranking) {
			sc.Vector = cosine(q.Vector, e.Embedding)
		}
		if recall.UsesLexical(q.Ranking) {
			sc.Lexical = lex.Score(e.Lexical)
		}
		sc.Score = core.Fuse(q.Ranking, q.Alpha, sc.Vector, sc.Lexical)
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case scored[a].Score > scored[b].Score:
			return -1
		case scored[a].Score < scored[b].Score:
			return 1
		}
		// Equal scores: newest first, as listings (and the Postgres store) order entries.
		return core.CompareNewest(cands[a], cands[b])
	})
	order = order[:min(len(order), max(q.Limit, 0))]
	res.Ranked = make([]recall.Scored, len(order))
	for i, j := range order {
		res.Ranked[i] = scored[j]
		res.Ranked[i].Entry = copyEntry(cands[j])
	}
	slices.SortFunc(res.Mismatched, func(a, b core.Entry) int {
		if a.Turn != b.Turn {
			return b.Turn - a.Turn
		}
		return strings.Compare(b.ID, a.ID)
	})
	if len(res.Mismatched) > 50 {
		res.Mismatched = res.Mismatched[:50]
	}
	for i := range res.Mismatched {
		res.Mismatched[i].Embedding = nil
	}
	return res, nil
}

// termStats are the lexical statistics of entries for terms: the entries with lexical
// features, their total length, and how many hold each term.
func termStats(entries []core.Entry, terms []string) core.TermStats {
	st := core.TermStats{DF: make([]int, len(terms))}
	for _, e := range entries {
		if e.Lexical == nil {
			continue
		}
		st.Docs++
		st.Length += int64(e.Lexical.Length)
		for i, t := range terms {
			if e.Lexical.Freq(t) > 0 {
				st.DF[i]++
			}
		}
	}
	return st
}

// cosine is the cosine similarity of a and b (equal lengths), computed in
// float64 as pgvector does.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// SaveRecall stores a receipt (as JSON, like Postgres, so reads are fresh copies).
func (s *Store) SaveRecall(ctx context.Context, tenant string, r recall.RecallResult) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("marshal recall: %w", err)
	}
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	if s.es.recalls == nil {
		s.es.recalls = map[[2]string][]byte{}
	}
	s.es.recalls[[2]string{tenant, r.RecallID}] = b
	return nil
}

// GetRecall reads a receipt back, or ErrNotFound.
func (s *Store) GetRecall(ctx context.Context, tenant, id string) (recall.RecallResult, error) {
	if err := ctx.Err(); err != nil {
		return recall.RecallResult{}, err
	}
	s.es.mu.RLock()
	b, ok := s.es.recalls[[2]string{tenant, id}]
	s.es.mu.RUnlock()
	if !ok {
		return recall.RecallResult{}, &core.NotFoundError{What: "recall", ID: id}
	}
	var r recall.RecallResult
	if err := json.Unmarshal(b, &r); err != nil {
		return recall.RecallResult{}, fmt.Errorf("decode stored recall %q: %w", id, err)
	}
	return r, nil
}

// PutDocuments replaces the chunks of docIDs in a corpus memory.
func (s *Store) PutDocuments(ctx context.Context, tenant, memoryID string, docIDs []string, chunks []core.Entry, once *core.Once) error {
	return s.inOnce(ctx, tenant, once, func() error { return s.putDocuments(ctx, tenant, memoryID, docIDs, chunks) })
}

func (s *Store) putDocuments(ctx context.Context, tenant, memoryID string, docIDs []string, chunks []core.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k := nsKey{tenant, core.CorpusNamespace}
	staged := make([]core.Entry, 0, len(chunks))
	for _, e := range chunks {
		e.Namespace = core.CorpusNamespace
		c, err := copyIn(e, normalise(e.CreatedAt))
		if err != nil {
			return err
		}
		staged = append(staged, c)
	}
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	for _, e := range staged {
		if len(e.Embedding) == 0 {
			continue
		}
		f := core.Fingerprint{MemoryID: memoryID, Model: e.EmbeddingModel, Dims: len(e.Embedding)}
		if have, ok := s.es.fingerprints[k][memoryID]; ok {
			if mm := have.Against(f); mm != nil {
				return mm
			}
		}
		s.recordFingerprints(k, []core.Fingerprint{f})
		break
	}
	if s.es.entries == nil {
		s.es.entries = make(map[nsKey]map[entryKey]core.Entry)
	}
	byID := s.es.entries[k]
	if byID == nil {
		byID = make(map[entryKey]core.Entry)
		s.es.entries[k] = byID
	}
	for ek, e := range byID {
		if ek.memoryID != memoryID || e.Kind != core.KindDocument {
			continue
		}
		for _, id := range docIDs {
			if strings.HasPrefix(e.ID, id+"#") {
				delete(byID, ek)
				break
			}
		}
	}
	for _, e := range staged {
		byID[entryKey{e.MemoryID, e.ID}] = e
	}
	return nil
}
