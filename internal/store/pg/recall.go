package pg

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/jsonenc"
)

var _ recall.Store = (*Store)(nil)

// annDims are the dimensions that have an HNSW index for corpora (migration 00003).
var annDims = map[int]bool{384: true}

// maxMismatched bounds how many entries of another vector space are reported per ranking.
const maxMismatched = 50

// RankEntries ranks one memory's live entries by cosine similarity. Within a conversation it
// is an exact scan: the b-tree on (tenant, namespace, memory_id, kind, ...) selects the
// conversation's rows and every one is scored (Mode "exact"), in one pipelined round trip
// with the memory's vector fingerprint and the total count (a window count on the same scan).
// A corpus at an indexed dimension is searched through its HNSW index (Mode "ann", see
// searchCorpus), falling back to an exact scan when the index returns fewer than asked.
//
// Entries of another vector space can only exist when the memory's recorded fingerprint
// (embedding_fingerprints, checked on every write) differs from the query's: then every entry
// is of another space, and only then are they listed — never by scanning for them.
func (s *Store) RankEntries(ctx context.Context, q recall.RankQuery) (recall.RankResult, error) {
	kinds := kindNames(q.Kinds)
	dims := len(q.Vector)
	vec := pgvector.NewVector(q.Vector)
	switch {
	case !searchesIndex(q):
		// The common case, one conversation: the fingerprint and the exact ranking in one
		// pipelined round trip (one implicit transaction), no BEGIN/COMMIT.
		if res, done, err := s.rankConversation(ctx, q, kinds, vec); done || err != nil {
			return res, err
		}
	case recall.UsesLexical(q.Ranking):
		if res, done, err := s.rankCorpusLexical(ctx, q, kinds, vec); done || err != nil {
			return res, err
		}
	default:
		// Done unless the index came back short (a corpus smaller than the limit) or the
		// stored vectors are of another space: the exact path below handles both.
		res, sameSpace, err := s.searchCorpus(ctx, q, kinds, vec, AnnEfSearch(q.Limit))
		if err != nil || res.Mode == "exact" || sameSpace && len(res.Ranked) >= q.Limit {
			return res, err
		}
	}
	var res recall.RankResult
	err := s.tx(ctx, func(t pgx.Tx) error {
		res = recall.RankResult{Mode: "exact"}
		var fpModel string
		var fpDims int
		err := t.QueryRow(ctx, `SELECT model, dims FROM embedding_fingerprints
			WHERE tenant = $1 AND memory_id = $2 AND namespace = $3`, q.Tenant, q.MemoryID, q.Namespace).Scan(&fpModel, &fpDims)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil // no vector was ever stored here: nothing to rank
		case err != nil:
			return err
		case fpModel != q.Model || fpDims != dims:
			res.Stored = &core.Fingerprint{MemoryID: q.MemoryID, Model: fpModel, Dims: fpDims}
			mm, err := t.Query(ctx, `SELECT `+entrySelectColumns(false)+` FROM entries
				WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = ANY($4)
					AND (expires_at IS NULL OR expires_at > $5) AND embedding_dims IS NOT NULL
				ORDER BY turn DESC NULLS LAST, idx DESC NULLS LAST, id DESC
				LIMIT $6`, q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, maxMismatched)
			if err != nil {
				return err
			}
			defer mm.Close()
			for mm.Next() {
				e, err := scanEntry(mm)
				if err != nil {
					return err
				}
				res.Mismatched = append(res.Mismatched, e)
			}
			return mm.Err()
		}
		b := &pgx.Batch{}
		read := queueExact(b, q, kinds, vec)
		br := t.SendBatch(ctx, b)
		rows, err := br.Query()
		ranked, total, err := read(rows, err)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		res.Ranked, res.Total = ranked, total
		return err
	})
	if err != nil {
		return recall.RankResult{}, translate(err, "rank entries", "", "")
	}
	return res, nil
}

// genericPlanSQL makes the ranking statement after it in a pipelined batch run on its cached
// generic plan (set_config's is_local scopes it to the batch's implicit transaction, so pooled
// connections keep their defaults). Left to choose, Postgres re-planned every ranking: its
// generic estimate for "the rows of one namespace" is skewed by any large namespace in the
// table (a corpus of 100k chunks made it 4,578 rows against a real 100), so the generic plan
// always looked dearer than a custom one, and planning (0.26 ms) cost as much as running the
// statement (0.25 ms). The generic plan is as good: a b-tree scan bounded by the namespace for
// an exact ranking, the HNSW index for a corpus (TestRankingRunsGenericPlans).
//
// The plan of an exact ranking must never be a sequential scan, whatever the statistics say: a
// namespace is a small part of a table that holds every conversation of every tenant, but
// statistics taken while the table held few namespaces (a young deployment, a table that grew
// faster than autovacuum analyses it) estimate each at a large share of it, and the plan made
// from them, kept for the connection's life, scanned the whole table on every recall (62–76 ms
// against 2.5 ms, measured). enable_seqscan off leaves the b-tree scans of the namespace as the
// only plans, and a parallel plan is refused too (its workers' start-up cost 15 ms for 100 rows).
const genericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('max_parallel_workers_per_gather', '0', true)`

// annSettingsSQL scopes the corpus search's planner and pgvector settings to the implicit
// transaction of one pipelined batch, as genericPlanSQL does, and includes it: enable_sort off
// makes the HNSW ordered scan the only plan, so "ann" is what actually ran; jit off (a JIT
// compile costs more than the search); hnsw.ef_search is $1 and hnsw.iterative_scan $2 (scanOnce
// or scanIterative), iterative scans bounded by max_scan_tuples.
const annSettingsSQL = `SELECT set_config('enable_sort', 'off', true), set_config('jit', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('hnsw.iterative_scan', $2, true),
	set_config('hnsw.max_scan_tuples', '200000', true), set_config('hnsw.ef_search', $1::text, true)`

// The values of hnsw.iterative_scan a corpus search runs with (searchCorpus).
const (
	scanOnce      = "off"           // one pass over ef_search candidates
	scanIterative = "relaxed_order" // walk on until enough rows pass the filter
)

// searchesIndex reports whether q is searched through an HNSW index: a corpus at an indexed
// dimension. Everything else is ranked exactly.
func searchesIndex(q recall.RankQuery) bool {
	return q.Namespace == core.CorpusNamespace && annDims[len(q.Vector)]
}

// kindNames is kinds as the text[] the ranking queries take.
func kindNames(kinds []core.EntryKind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// searchCorpus searches a corpus through its HNSW index: first one pass over ef candidates
// with iterative scans off; only when the tenant/memory/model filter left that pass short (the
// index is shared by every corpus of the dimension) a second pass with iterative scans in
// relaxed order, which keeps walking the graph until enough rows pass the filter. Iterative
// scanning is not free even when it never resumes: pgvector keeps every discarded candidate for
// a later resumption, and on a 100k-chunk corpus the single pass was about 10% faster at the
// median and 15–20% at the 99th percentile (bench/recall's corpus, interleaved runs).
// sameSpace is false when the memory's fingerprint differs from the query's vector space;
// the result may still be short (a corpus smaller than the limit), for the caller to decide.
func (s *Store) searchCorpus(ctx context.Context, q recall.RankQuery, kinds []string, vec pgvector.Vector, ef int) (recall.RankResult, bool, error) {
	res, sameSpace, err := s.rankCorpus(ctx, q, kinds, vec, ef, scanOnce)
	if err != nil || !sameSpace || res.Mode != "ann" || len(res.Ranked) >= q.Limit {
		return res, sameSpace, err
	}
	return s.rankCorpus(ctx, q, kinds, vec, ef, scanIterative)
}

// rankCorpus is one HNSW pass over a corpus in one pipelined round trip: the settings (scan:
// scanOnce or scanIterative), the memory's fingerprint and the ANN query, in one transaction
// (queueSettings: implicit on one node, explicit on Citus). Mode is "exact" with nothing ranked
// when no vector was ever stored in the memory; sameSpace is false when the stored vectors are
// of another space than the query's.
func (s *Store) rankCorpus(ctx context.Context, q recall.RankQuery, kinds []string, vec pgvector.Vector, ef int, scan string) (recall.RankResult, bool, error) {
	dims := len(q.Vector)
	b := &pgx.Batch{}
	head := s.queueSettings(b, annSettingsSQL, []any{strconv.Itoa(ef), scan}, annSettingsCitus(ef, scan))
	queueFingerprint(b, q)
	b.Queue(annRankSQL(dims), q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model, q.Limit)
	s.queueSettingsEnd(b)
	var (
		ranked    []recall.Scored
		sameSpace = true
		noVectors bool
	)
	err := s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if err := readN(br, head); err != nil {
			return err
		}
		stored, same, err := readFingerprint(br, q)
		switch {
		case err != nil:
			return err
		case !stored:
			noVectors = true // no vector was ever stored here
			return br.Close()
		case !same:
			sameSpace = false
			return br.Close()
		}
		rows, err := br.Query()
		if ranked, _, err = scanScored(q, rows, err, false); err != nil {
			return err
		}
		return br.Close()
	})
	switch {
	case err != nil:
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	case noVectors:
		return recall.RankResult{Mode: "exact"}, true, nil
	case !sameSpace:
		return recall.RankResult{}, false, nil
	}
	// The index orders by half-precision distance and relaxed_order may return neighbours
	// slightly out of order: order them by the exact score. Counting a large corpus would cost
	// more than the search; an approximate search does not claim a complete candidate list
	// anyway (Total -1).
	// Equal scores go newest first, as the exact ranking and the in-memory store order them.
	sort.SliceStable(ranked, func(i, j int) bool {
		if ranked[i].Score != ranked[j].Score {
			return ranked[i].Score > ranked[j].Score
		}
		return core.CompareNewest(ranked[i].Entry, ranked[j].Entry) < 0
	})
	return recall.RankResult{Mode: "ann", Ranked: ranked, Total: -1}, true, nil
}

// queueFingerprint queues the read of q's memory's fingerprint in q's namespace: the model
// and dimensions its vectors were stored with (readFingerprint reads it).
func queueFingerprint(b *pgx.Batch, q recall.RankQuery) {
	b.Queue(`SELECT model, dims FROM embedding_fingerprints WHERE tenant = $1 AND memory_id = $2 AND namespace = $3`,
		q.Tenant, q.MemoryID, q.Namespace)
}

// readFingerprint reads queueFingerprint's row: stored is false when no vector was ever
// stored there, same whether they are in q's vector space (its model and dimensions).
func readFingerprint(br pgx.BatchResults, q recall.RankQuery) (stored, same bool, err error) {
	var model string
	var dims int
	err = br.QueryRow().Scan(&model, &dims)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, err
	}
	return true, model == q.Model && dims == len(q.Vector), nil
}

// rankConversation ranks exactly in one round trip: the settings (genericPlanSQL; on Citus
// exactSettingsCitus), the memory's fingerprint and the ranking. done is false when the
// memory's fingerprint differs from the query's space (the slow, rare path lists the
// mismatched entries).
func (s *Store) rankConversation(ctx context.Context, q recall.RankQuery, kinds []string, vec pgvector.Vector) (recall.RankResult, bool, error) {
	b := &pgx.Batch{}
	head := s.queueSettings(b, genericPlanSQL, nil, exactSettingsCitus)
	queueFingerprint(b, q)
	read := queueExact(b, q, kinds, vec)
	s.queueSettingsEnd(b)
	res := recall.RankResult{Mode: "exact"}
	sameSpace := true
	err := s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if err := readN(br, head); err != nil {
			return err
		}
		stored, same, err := readFingerprint(br, q)
		switch {
		case err != nil:
			return err
		case !stored:
			return br.Close() // no vector was ever stored here: nothing to rank
		case !same:
			sameSpace = false
			return br.Close()
		}
		rows, err := br.Query()
		if res.Ranked, res.Total, err = read(rows, err); err != nil {
			return err
		}
		return br.Close()
	})
	switch {
	case err != nil:
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	case !sameSpace:
		return recall.RankResult{}, false, nil
	}
	return res, true, nil
}

// annEfSearch is the HNSW candidate list for corpus queries. Measured with bench/recall on 100k
// chunks of real text embedded with the built-in 384-d lexical embedder, index halfvec m 32,
// ef_construction 256 (migration 00011), the search alone (p50 / p99 on this 2-core machine):
//
//	ef_search  recall@10  p50 ms  p99 ms
//	      100     0.912     5.3     7.6
//	      150     0.940     7.4    10.7
//	      200     0.962     8.5    12.2
//	      250     0.969    10.3    15.3
//	      300     0.976    13.1    27.9
//
// 200 is the first to find 95% of the exact top ten. Lexical vectors have many near-ties; a
// memory service that silently misses one relevant passage in twenty is worth less than a few
// milliseconds.
const annEfSearch = 200

// AnnEfSearch is the hnsw.ef_search a corpus search for limit results runs with: annEfSearch,
// or 5 × limit for large limits, at most 1,000 (pgvector's maximum).
func AnnEfSearch(limit int) int { return min(1000, max(annEfSearch, 5*limit)) }

// exactRankSQL scores every live entry of one memory in a namespace with the query's vector
// space, best first, and counts them in the same statement, so in the same snapshot: the count
// is a scalar subquery (an InitPlan, run once), not count(*) OVER (), whose window made
// Postgres materialise every candidate row before the top-N sort (0.30 ms against 0.15 ms for
// 100 entries). Embeddings are not returned: nobody reads them after ranking. Equal scores go
// newest first (core.CompareNewest), so both stores admit the same entry of a tie.
func exactRankSQL(dims int) string {
	where := exactWhere(dims)
	return `SELECT ` + rankedColumns + `, 1 - (embedding <=> $6) AS score, NULL::float8, NULL::float8,
			(SELECT count(*) FROM entries WHERE ` + where + `) AS total
		FROM entries
		WHERE ` + where + `
		ORDER BY embedding <=> $6, turn DESC NULLS LAST, idx DESC NULLS LAST, id DESC
		LIMIT $8`
}

func exactWhere(dims int) string {
	return `tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = ANY($4)
			AND (expires_at IS NULL OR expires_at > $5)
			AND embedding_dims = ` + strconv.Itoa(dims) + ` AND embedding_model = $7`
}

// exactRank is the exact vector ranking statement (exactRankSQL) and its arguments.
func exactRank(q recall.RankQuery, kinds []string, vec pgvector.Vector) (string, []any) {
	return exactRankSQL(len(q.Vector)), []any{q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model, q.Limit}
}

// exactLexicalSQL reads, for a lexical or hybrid ranking, every candidate row exactRankSQL
// would score, with what the score needs of it: its vector score (hybrid only; NULL for
// lexical, with $6 still typed) and its lexical features (terms, frequencies, length). The
// scoring itself (the conversation's statistics, core.LexicalScorer, core.Fuse, the order and
// the cut) is done in Go by rankExactLexical, with the code the in-memory store runs, so both
// stores compute the same score. Measured on bench/recall's conversations (100 rows, 100k in
// the table): a statement that computed the statistics and scores itself took 3.2 ms, one that
// looked each query term up with array_position 2–4 ms (the terms array is compressed in the
// row, and every call decompressed it again), this one about what the vector ranking takes.
// Every row is returned, its value included (a conversation holds tens to hundreds).
func exactLexicalSQL(dims int, hybrid bool) string {
	return cachedSQL(sqlKey{kind: "exact-lexical", n: dims, first: b2i(hybrid)}, func() string {
		vscore := `CASE WHEN $6::vector IS NULL THEN NULL END::float8`
		if hybrid {
			vscore = `1 - (embedding <=> $6)`
		}
		// The ORDER BY is entries_newest_idx's own: it makes the namespace's b-tree the plan
		// even for a generic plan's skewed estimate of how many rows one namespace holds.
		// The arrays go as text (terms are runs of letters and digits: a space separates them):
		// pgx decodes a text[] and a smallint[] element by element through reflection, which cost
		// more than the statement for a conversation's rows.
		return `SELECT ` + rankedColumns + `, ` + vscore + `, array_to_string(lex_terms, ' '), array_to_string(lex_freqs, ' '), lex_length
			FROM entries
			WHERE ` + exactWhere(dims) + `
			ORDER BY tenant, namespace, memory_id, kind, turn DESC NULLS LAST, idx DESC NULLS LAST`
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rankExactLexical ranks the rows of exactLexicalSQL: the statistics of those with terms, each
// row's lexical score (and with hybrid its fused one), best first, equal scores newest first,
// cut to q.Limit. Total is how many rows there were.
//
// A row's score needs only the frequencies of the query's terms and its length
// (core.LexicalScorer.ScoreFreqs), so each row's terms are searched for the query's in the
// text Postgres sends, without splitting them into strings, and the candidates are sorted by
// index: measured on bench/recall's conversations (100 rows, 5 query terms), splitting every
// row's terms, looking each query term up by binary search and sorting the candidates by
// value took most of the Go side's time.
func rankExactLexical(q recall.RankQuery, rows pgx.Rows, err error) ([]recall.Scored, int, error) {
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	nq := len(q.Terms)
	lookup := make(map[string]int, nq)
	for i, t := range q.Terms {
		lookup[t] = i
	}
	// A conversation holds tens to hundreds of rankable entries: room for a typical one.
	cands := make([]recall.Scored, 0, 128)
	freqs := make([]int32, 0, 128*nq) // nq per candidate, index-aligned with q.Terms
	length := make([]int, 0, 128)     // per candidate; 0: no lexical features
	var hits []termHit
	st := core.TermStats{DF: make([]int, nq)}
	var (
		id, kind              string
		turn, idx, sourceTurn *int
		sourceConv            *string
		updated               time.Time
		vscore                *float64
		termText, freqText    []byte
		n                     *int
	)
	for rows.Next() {
		var value []byte // a fresh slice per row: the entry keeps it
		if err := rows.Scan(&id, &kind, &turn, &idx, &value, &updated, &sourceTurn, &sourceConv, &vscore, &termText, &freqText, &n); err != nil {
			return nil, 0, err
		}
		cands = append(cands, recall.Scored{Vector: deref(vscore), Entry: core.Entry{
			Tenant: q.Tenant, Namespace: q.Namespace, MemoryID: q.MemoryID, EmbeddingModel: q.Model,
			ID: id, Kind: core.EntryKind(kind), Turn: deref(turn), Index: deref(idx), SourceTurn: deref(sourceTurn),
			SourceConversation: deref(sourceConv), Value: value, UpdatedAt: updated.UTC(),
		}})
		row := len(freqs)
		freqs = append(freqs, make([]int32, nq)...)
		l := 0
		if n != nil {
			var ok bool
			if hits, ok = queryTermFreqs(termText, freqText, lookup, hits[:0], freqs[row:]); ok {
				l = *n
				st.Docs++
				st.Length += int64(l)
				for _, h := range hits {
					st.DF[h.query]++
				}
			} else {
				clear(freqs[row:])
			}
		}
		length = append(length, l)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	scorer := core.NewLexicalScorer(q.Terms, st)
	order := make([]int, len(cands))
	for i := range cands {
		c := &cands[i]
		c.Lexical = scorer.ScoreFreqs(freqs[i*nq:(i+1)*nq], length[i])
		c.Score = core.Fuse(q.Ranking, q.Alpha, c.Vector, c.Lexical)
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		if a, b := cands[i].Score, cands[j].Score; a != b {
			return cmp.Compare(b, a)
		}
		return core.CompareNewest(cands[i].Entry, cands[j].Entry)
	})
	out := make([]recall.Scored, 0, min(len(cands), max(q.Limit, 0)))
	for _, i := range order[:min(len(order), max(q.Limit, 0))] {
		out = append(out, cands[i])
	}
	return out, len(cands), nil
}

// termHit is a query term found among a row's terms: its index in the query and the position
// of its frequency in the row's.
type termHit struct{ query, pos int }

// queryTermFreqs reads the frequencies of the query's terms (lookup: term to query index) out
// of a row's space-separated terms and frequencies (exactLexicalSQL) into freqs, and returns
// which terms it found. It reports false when the two lists do not agree.
func queryTermFreqs(terms, freqText []byte, lookup map[string]int, hits []termHit, freqs []int32) ([]termHit, bool) {
	pos := 0
	for len(terms) > 0 {
		t := terms
		if i := bytes.IndexByte(terms, ' '); i >= 0 {
			t, terms = terms[:i], terms[i+1:]
		} else {
			terms = nil
		}
		if q, ok := lookup[string(t)]; ok { // no allocation: the compiler looks the bytes up
			hits = append(hits, termHit{q, pos})
		}
		pos++
	}
	at, h := 0, 0
	for len(freqText) > 0 && h < len(hits) {
		f := freqText
		if i := bytes.IndexByte(freqText, ' '); i >= 0 {
			f, freqText = freqText[:i], freqText[i+1:]
		} else {
			freqText = nil
		}
		if at == hits[h].pos {
			v, err := strconv.ParseInt(string(f), 10, 32)
			if err != nil {
				return hits, false
			}
			freqs[hits[h].query] = int32(v)
			h++
		}
		at++
	}
	return hits, h == len(hits)
}

// queueExact queues q's exact ranking on b and returns how to read it.
func queueExact(b *pgx.Batch, q recall.RankQuery, kinds []string, vec pgvector.Vector) func(pgx.Rows, error) ([]recall.Scored, int, error) {
	if !recall.UsesLexical(q.Ranking) {
		sql, args := exactRank(q, kinds, vec)
		b.Queue(sql, args...)
		return func(rows pgx.Rows, err error) ([]recall.Scored, int, error) { return scanScored(q, rows, err, true) }
	}
	b.Queue(exactLexicalSQL(len(q.Vector), q.Ranking == core.RankHybrid), q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model)
	return func(rows pgx.Rows, err error) ([]recall.Scored, int, error) { return rankExactLexical(q, rows, err) }
}

// annRankSQL ranks a corpus through the HNSW index of its dimension: the ORDER BY spells the
// indexed expression (embedding::halfvec(dims)) and the WHERE implies the index predicate
// (kind = 'doc' AND embedding_dims = dims), or Postgres cannot use the index. The score is the
// exact one, from the stored single-precision vector: half precision only steers the graph
// walk. dims is an int from the query vector's length, never user text.
func annRankSQL(dims int) string {
	return fmt.Sprintf(`SELECT %s, 1 - (embedding::vector(%[2]d) <=> $6::vector(%[2]d)) AS score, NULL::float8, NULL::float8
		FROM entries
		WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'doc'
			AND embedding_dims = %[2]d AND embedding_model = $7
			AND (expires_at IS NULL OR expires_at > $5) AND kind = ANY($4)
		ORDER BY embedding::halfvec(%[2]d) <=> $6::halfvec(%[2]d)
		LIMIT $8`, rankedColumns, dims)
}

// rankedColumns are what a ranking returns of each entry: what a recall reads of it (see
// core.RankResult). Selecting every column (metadata, the other timestamps, counters, tier)
// cost 0.1 ms of a 0.5 ms ranking of 20 rows in a conversation of 100, for values nobody reads
// (measured on bench/recall's data, the statements run alternately from one pool).
const rankedColumns = `id, kind, turn, idx, value, updated_at, source_turn, source_conversation`

// scanScored reads ranking rows: rankedColumns, the score and, when withTotal (exactRankSQL),
// the count. The entries carry q's tenant, namespace, memory and model, which the ranking
// filters on.
func scanScored(q recall.RankQuery, rows pgx.Rows, err error, withTotal bool) ([]recall.Scored, int, error) {
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := make([]recall.Scored, 0, max(q.Limit, 0))
	var (
		total                 int64
		id, kind              string
		turn, idx, sourceTurn *int
		value                 []byte // not json.RawMessage: pgx would run that through json.Unmarshal
		updated               time.Time
		score                 float64
		sourceConv            *string
	)
	var vscore, lscore *float64
	dest := []any{&id, &kind, &turn, &idx, &value, &updated, &sourceTurn, &sourceConv, &score, &vscore, &lscore}
	if withTotal {
		dest = append(dest, &total)
	}
	for rows.Next() {
		value = nil // a fresh slice per row: the entry keeps it
		if err := rows.Scan(dest...); err != nil {
			return nil, 0, err
		}
		vector, lexical := deref(vscore), deref(lscore)
		if !recall.UsesLexical(q.Ranking) {
			vector = score // a vector ranking's score is its vector component
		}
		out = append(out, recall.Scored{Score: score, Vector: vector, Lexical: lexical, Entry: core.Entry{
			Tenant: q.Tenant, Namespace: q.Namespace, MemoryID: q.MemoryID, EmbeddingModel: q.Model,
			ID: id, Kind: core.EntryKind(kind), Turn: deref(turn), Index: deref(idx), SourceTurn: deref(sourceTurn),
			SourceConversation: deref(sourceConv), Value: value, UpdatedAt: updated.UTC(),
		}})
	}
	return out, int(total), rows.Err()
}

// saveReceiptSQL inserts a receipt and, in the same statement, lets its implicit transaction
// commit without waiting for the WAL to reach the disk (set_config's is_local scopes the
// setting to that transaction; as a subquery of the INSERT it costs no extra statement, which a
// SET before it did: 0.04 ms and more). A recall answers only once its receipt is committed,
// so the receipt is visible at once to every session; what the setting gives up is the
// receipt's survival of a crash of Postgres or of its machine in the next few hundred
// milliseconds (at most three wal_writer_delay, 0.6 s by default), never the consistency of the
// database, and never a turn (turn writes keep the server's setting). In exchange a recall does
// not wait for a WAL flush: on this machine's disk, with fsync on, the receipt took 0.36–0.47
// ms waiting for it and 0.21–0.25 ms without; on network storage a flush takes milliseconds.
const saveReceiptSQL = `INSERT INTO recalls (tenant, id, namespace, turn, run_id, query_hash, created_at, body, admitted)
	SELECT $1, $2, $3, $4::integer, $5, $6, $7::timestamptz, $8::bytea, $9::text[]
	FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit`

// SaveRecall stores a recall receipt: committed (visible) before it returns, durable shortly
// after (saveReceiptSQL).
func (s *Store) SaveRecall(ctx context.Context, tenant string, r recall.RecallResult) error {
	body, err := jsonenc.Marshal(r, false)
	if err != nil {
		return fmt.Errorf("marshal recall: %w", err)
	}
	// pgx copies the arguments into its send buffer: the body's buffer is free once Exec returns.
	defer body.Release()
	args := []any{tenant, r.RecallID, r.Identity.Namespace(), nullInt(r.Turn), nullString(r.RunID), r.QueryHash, r.CreatedAt, body.Bytes(),
		r.AdmittedIDs()}
	if s.distributed {
		err = s.saveReceiptDistributed(ctx, args)
	} else {
		_, err = s.pool.Exec(ctx, saveReceiptSQL, args...)
	}
	if err != nil {
		return translate(err, "save recall", "recall", r.RecallID)
	}
	return nil
}

// saveReceiptDistributedSQL is saveReceiptSQL as Citus routes it: INSERT ... VALUES goes to
// the shard's worker as it is, where INSERT ... SELECT was run by pulling the row through the
// coordinator (1.5–1.8 ms against 0.5–0.75 ms, measured); and the commit that must not wait
// for the WAL is the worker's, which only a propagated SET LOCAL reaches.
const saveReceiptDistributedSQL = `INSERT INTO recalls (tenant, id, namespace, turn, run_id, query_hash, created_at, body, admitted)
	VALUES ($1, $2, $3, $4::integer, $5, $6, $7::timestamptz, $8::bytea, $9::text[])`

// saveReceiptDistributed writes a receipt on a distributed database: BEGIN, SET LOCAL
// synchronous_commit = off (sent on to the worker), the INSERT and COMMIT, one round trip.
func (s *Store) saveReceiptDistributed(ctx context.Context, args []any) error {
	b := &pgx.Batch{}
	head := s.queueSettings(b, "", nil, receiptSettingsCitus)
	b.Queue(saveReceiptDistributedSQL, args...)
	s.queueSettingsEnd(b)
	return s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		if err := readN(br, head+1); err != nil {
			_ = br.Close()
			return err
		}
		return br.Close()
	})
}

// receiptSettingsCitus is what saveReceiptSQL's set_config does, for a distributed database.
var receiptSettingsCitus = []setting{{"synchronous_commit", "off"}}

// GetRecall reads a receipt back; ErrNotFound for an unknown id or another tenant's.
func (s *Store) GetRecall(ctx context.Context, tenant, id string) (recall.RecallResult, error) {
	var body []byte
	err := s.pool.QueryRow(ctx, `SELECT body FROM recalls WHERE tenant = $1 AND id = $2`, tenant, id).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return recall.RecallResult{}, &core.NotFoundError{What: "recall", ID: id}
	}
	if err != nil {
		return recall.RecallResult{}, translate(err, "get recall", "recall", id)
	}
	var r recall.RecallResult
	if err := json.Unmarshal(body, &r); err != nil {
		return recall.RecallResult{}, fmt.Errorf("decode stored recall %q: %w", id, err)
	}
	return r, nil
}

// PutDocuments replaces the chunks of the named documents in a corpus memory, in one
// transaction: every existing chunk `<docId>#<n>` of each document goes, then the new chunks
// are written. The corpus's vector fingerprint is recorded by the first write and checked by
// every later one (a *core.FingerprintMismatch), as turn writes do.
func (s *Store) PutDocuments(ctx context.Context, tenant, memoryID string, docIDs []string, chunks []core.Entry, once *core.Once) error {
	// The fingerprint is recorded or checked in its own short statement pair, before the long
	// (HNSW-maintaining) insert: a fingerprint never changes once recorded, so concurrent
	// indexers of one corpus need not queue behind each other's inserts. The first writes race
	// safely (ON CONFLICT DO NOTHING) and the re-read decides.
	for _, e := range chunks {
		if len(e.Embedding) == 0 {
			continue
		}
		if _, err := s.pool.Exec(ctx, `INSERT INTO embedding_fingerprints (tenant, memory_id, namespace, model, dims, created_at)
			VALUES ($1, $2, $3, $4, $5, now()) ON CONFLICT DO NOTHING`, tenant, memoryID, core.CorpusNamespace, e.EmbeddingModel, len(e.Embedding)); err != nil {
			return translate(err, "put documents", "", "")
		}
		have := core.Fingerprint{MemoryID: memoryID}
		if err := s.pool.QueryRow(ctx, `SELECT model, dims FROM embedding_fingerprints
			WHERE tenant = $1 AND memory_id = $2 AND namespace = $3`, tenant, memoryID, core.CorpusNamespace).Scan(&have.Model, &have.Dims); err != nil {
			return translate(err, "put documents", "", "")
		}
		if mm := have.Against(core.Fingerprint{MemoryID: memoryID, Model: e.EmbeddingModel, Dims: len(e.Embedding)}); mm != nil {
			return mm
		}
		break // one chunk's vector speaks for the batch: they share one embedder
	}
	err := s.inOnce(ctx, tenant, once, func(t pgx.Tx) error {
		// The replaced chunks go first, returning their terms, so that the corpus's statistics
		// take the difference: one upsert per term, in byte order, so that concurrent indexers of
		// one corpus lock the rows they share in the same order and cannot deadlock.
		b := &pgx.Batch{}
		for _, id := range docIDs {
			b.Queue(`DELETE FROM entries WHERE tenant = $1 AND memory_id = $2 AND namespace = $3
				AND kind = 'doc' AND starts_with(id, $4) RETURNING lex_terms, lex_length`, tenant, memoryID, core.CorpusNamespace, id+"#")
		}
		delta := lexicalDelta{df: map[string]int{}}
		br := t.SendBatch(ctx, b)
		for range docIDs {
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return err
			}
			for rows.Next() {
				var terms []string
				var length *int
				if err := rows.Scan(&terms, &length); err != nil {
					rows.Close()
					_ = br.Close()
					return err
				}
				delta.add(terms, deref(length), -1)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				_ = br.Close()
				return err
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		b = &pgx.Batch{}
		now := time.Now().UTC()
		for _, e := range chunks {
			e.Namespace = core.CorpusNamespace
			e = stamp(e, now)
			b.Queue(`INSERT INTO entries (`+entryInsertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
				$10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)`, entryArgs(e)...)
			if l := e.Lexical; l != nil && len(l.Terms) > 0 {
				delta.add(l.Terms, l.Length, 1)
			}
		}
		delta.queue(b, tenant, memoryID, core.CorpusNamespace)
		return t.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, core.ErrKeyReused) {
		return err
	}
	if err != nil {
		return translate(err, "put documents", "", "")
	}
	return nil
}

// Corpus lexical search (rankings lexical and hybrid on a corpus at an indexed dimension).
const (
	// exactCorpusDocs: a corpus of at most this many chunks with terms is ranked by the exact
	// scan (exactLexicalSQL), its statistics computed over its rows, as a conversation's: every
	// row comes back, its text included, which a few hundred chunks afford.
	exactCorpusDocs = 300
	// lexicalPostings bounds the candidate generator: the query's rarest terms are taken, rarest
	// first, while the chunks holding them (by the corpus's statistics) stay within this many;
	// the rarest is always taken. The candidates are then scored on every query term. A chunk
	// holding only the commoner terms ("the", "of") is not a candidate: its score is bounded
	// by those terms' small weights, and it would rarely make the top ten.
	lexicalPostings = 4000
	// maxLexicalCandidates bounds how many candidate chunks one search scores when even the
	// rarest query term is common.
	maxLexicalCandidates = 8000
)

// rankCorpusLexical ranks a corpus lexically, or by the hybrid of both scores, in two round
// trips: the fingerprint and the corpus's statistics for the query's terms (lexical_terms,
// lexical_totals, kept by PutDocuments), then the candidates. The lexical candidates come from
// the GIN index on lex_terms (lexicalCandidatesSQL); a hybrid adds the HNSW search's
// (annRankSQL, its chunks scored lexically too), and every candidate of either is scored on
// both, fused, and cut to the limit. A small corpus goes to the exact scan instead. done is
// false when the stored vectors are of another space (the caller lists them).
func (s *Store) rankCorpusLexical(ctx context.Context, q recall.RankQuery, kinds []string, vec pgvector.Vector) (recall.RankResult, bool, error) {
	b := &pgx.Batch{}
	queueFingerprint(b, q)
	b.Queue(`SELECT docs, length FROM lexical_totals WHERE tenant = $1 AND memory_id = $2 AND namespace = $3`,
		q.Tenant, q.MemoryID, q.Namespace)
	b.Queue(`SELECT coalesce(l.df, 0) FROM unnest($4::text[]) WITH ORDINALITY AS t(term, ord)
		LEFT JOIN lexical_terms l ON l.tenant = $1 AND l.memory_id = $2 AND l.namespace = $3 AND l.term = t.term
		ORDER BY t.ord`, q.Tenant, q.MemoryID, q.Namespace, q.Terms)
	br := s.pool.SendBatch(ctx, b)
	stored, same, err := readFingerprint(br, q)
	switch {
	case err != nil:
		_ = br.Close()
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	case !stored:
		_ = br.Close()
		return recall.RankResult{Mode: "exact"}, true, nil // no vector was ever stored here
	case !same:
		_ = br.Close()
		return recall.RankResult{}, false, nil
	}
	st := core.TermStats{DF: make([]int, 0, len(q.Terms))}
	if err := br.QueryRow().Scan(&st.Docs, &st.Length); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		_ = br.Close()
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	}
	rows, err := br.Query()
	if err == nil {
		for rows.Next() {
			var df int
			if err = rows.Scan(&df); err != nil {
				break
			}
			st.DF = append(st.DF, df)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	}
	if st.Docs <= s.exactCorpusDocs {
		return s.rankConversation(ctx, q, kinds, vec)
	}
	scorer := core.NewLexicalScorer(q.Terms, st)
	gen := generatingTerms(q.Terms, st.DF)
	hybrid := q.Ranking == core.RankHybrid
	// On Citus the hybrid search's settings must reach the worker: the batch is a transaction
	// that opens with their SET LOCALs (queueSettings), as rankCorpus's is.
	viaTx := hybrid && s.distributed
	b = &pgx.Batch{}
	head := 0
	if viaTx {
		head = s.queueSettings(b, "", nil, annLexicalSettingsCitus(AnnEfSearch(q.Limit)))
	}
	lexArgs := lexicalArgs(q.Terms, scorer)
	if len(gen) > 0 {
		b.Queue(lexicalCandidatesSQL(len(q.Vector), hybrid), append([]any{q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model,
			q.Limit, gen, maxLexicalCandidates}, lexArgs...)...)
	}
	if hybrid {
		if !s.distributed {
			b.Queue(annSettingsSQL, strconv.Itoa(AnnEfSearch(q.Limit)), scanOnce)
		}
		b.Queue(annLexicalSQL(len(q.Vector)), append([]any{q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model, q.Limit},
			lexArgs...)...)
	}
	if b.Len() == 0 {
		return recall.RankResult{Mode: "ann", Total: -1}, true, nil // no query term is in the corpus: nothing scores
	}
	if viaTx {
		s.queueSettingsEnd(b)
	}
	byID := map[string]int{}
	var ranked []recall.Scored
	run := func(c interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}) error {
		br := c.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		read := func() error {
			rows, err := br.Query()
			found, _, err := scanScored(q, rows, err, false)
			if err != nil {
				return err
			}
			for _, sc := range found {
				if _, dup := byID[sc.Entry.ID]; dup {
					continue
				}
				byID[sc.Entry.ID] = len(ranked)
				sc.Score = core.Fuse(q.Ranking, q.Alpha, sc.Vector, sc.Lexical)
				ranked = append(ranked, sc)
			}
			return nil
		}
		if err := readN(br, head); err != nil {
			return err
		}
		if len(gen) > 0 {
			if err := read(); err != nil {
				return err
			}
		}
		if hybrid {
			if !s.distributed {
				if _, err := br.Exec(); err != nil { // annSettingsSQL
					return err
				}
			}
			if err := read(); err != nil {
				return err
			}
		}
		return br.Close()
	}
	if viaTx {
		err = s.pipelinedTx(ctx, func(c *pgx.Conn) error { return run(c) })
	} else {
		err = run(s.pool)
	}
	if err != nil {
		return recall.RankResult{}, true, translate(err, "rank entries", "", "")
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		if ranked[i].Score != ranked[j].Score {
			return ranked[i].Score > ranked[j].Score
		}
		return core.CompareNewest(ranked[i].Entry, ranked[j].Entry) < 0
	})
	ranked = ranked[:min(len(ranked), max(q.Limit, 0))]
	return recall.RankResult{Mode: "ann", Ranked: ranked, Total: -1}, true, nil
}

// generatingTerms picks the query terms whose chunks are the lexical candidates: those the
// corpus holds, rarest first, while their chunks stay within lexicalPostings (the rarest always).
func generatingTerms(terms []string, df []int) []string {
	order := make([]int, 0, len(terms))
	for i := range terms {
		if i < len(df) && df[i] > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return df[order[a]] < df[order[b]] })
	var out []string
	postings := 0
	for _, i := range order {
		if len(out) > 0 && postings+df[i] > lexicalPostings {
			break
		}
		postings += df[i]
		out = append(out, terms[i])
	}
	return out
}

// lexicalScoreSQL is core.LexicalScorer.Score in SQL for the row in scope, with the corpus's
// statistics passed in from parameter $p on: the terms, their idf, k1, b, k1 + 1, the mean
// length and the maximum (lexicalArgs; see exactLexicalSQL on the arithmetic).
func lexicalScoreSQL(p int) string {
	n := func(i int) string { return "$" + strconv.Itoa(p+i) }
	return `(coalesce((SELECT sum(q.idf * f.tf * ` + n(4) + `::float8
		/ (f.tf + ` + n(2) + `::float8 * ((1 - ` + n(3) + `::float8) + ` + n(3) + `::float8 * lex_length / ` + n(5) + `::float8))
		ORDER BY q.ord)
	FROM unnest(` + n(0) + `::text[], ` + n(1) + `::float8[]) WITH ORDINALITY AS q(term, idf, ord),
	LATERAL (SELECT lex_freqs[array_position(lex_terms, q.term)]::float8 AS tf) f
	WHERE f.tf IS NOT NULL), 0) / ` + n(6) + `::float8)`
}

// lexicalArgs are lexicalScoreSQL's arguments.
func lexicalArgs(terms []string, sc core.LexicalScorer) []any {
	return []any{terms, sc.IDFs, core.BM25K1, core.BM25B, core.BM25K1 + 1, sc.AvgLen, sc.Max}
}

// lexicalCandidatesSQL returns a corpus's best chunks by lexical score among those holding
// any of the generating terms $9 (the GIN index entries_doc_lex finds them), at most $10 of
// them scored; with hybrid, each with its vector score too. $1..$8 as annRankSQL, then
// lexicalScoreSQL's from $11.
func lexicalCandidatesSQL(dims int, hybrid bool) string {
	vscore := `NULL::float8`
	if hybrid {
		vscore = `1 - (embedding <=> $6)`
	}
	return fmt.Sprintf(`WITH cand AS (
			SELECT %s, %s AS vscore, lex_terms, lex_freqs, lex_length
			FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'doc' AND kind = ANY($4)
				AND (expires_at IS NULL OR expires_at > $5) AND $6::vector IS NOT NULL
				AND embedding_dims = %d AND embedding_model = $7 AND lex_terms && $9::text[]
			LIMIT $10),
		scored AS (SELECT %s, vscore, %s AS lscore FROM cand)
		SELECT %s, lscore, vscore, lscore
		FROM scored
		ORDER BY lscore DESC, idx DESC NULLS LAST, id DESC
		LIMIT $8`, rankedColumns, vscore, dims, rankedColumns, lexicalScoreSQL(11), rankedColumns)
}

// annLexicalSQL is annRankSQL with each chunk's lexical score too (lexicalScoreSQL from $9).
func annLexicalSQL(dims int) string {
	return fmt.Sprintf(`SELECT %s, 1 - (embedding::vector(%[2]d) <=> $6::vector(%[2]d)) AS score,
			1 - (embedding::vector(%[2]d) <=> $6::vector(%[2]d)) AS vscore, %[3]s AS lscore
		FROM entries
		WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'doc'
			AND embedding_dims = %[2]d AND embedding_model = $7
			AND (expires_at IS NULL OR expires_at > $5) AND kind = ANY($4)
		ORDER BY embedding::halfvec(%[2]d) <=> $6::halfvec(%[2]d)
		LIMIT $8`, rankedColumns, dims, lexicalScoreSQL(9))
}

// lexicalDelta is a change to a corpus's statistics: entries with terms, their length, and per
// term the entries holding it.
type lexicalDelta struct {
	docs, length int64
	df           map[string]int
}

func (d *lexicalDelta) add(terms []string, length, sign int) {
	if len(terms) == 0 {
		return
	}
	d.docs += int64(sign)
	d.length += int64(sign * length)
	for _, t := range terms {
		d.df[t] += sign
	}
}

// queue adds the delta's upserts to b: the terms that changed in byte order, then the totals.
func (d *lexicalDelta) queue(b *pgx.Batch, tenant, memoryID, namespace string) {
	terms := make([]string, 0, len(d.df))
	for t, n := range d.df {
		if n != 0 {
			terms = append(terms, t)
		}
	}
	sort.Strings(terms)
	counts := make([]int32, len(terms))
	for i, t := range terms {
		counts[i] = int32(d.df[t])
	}
	if len(terms) > 0 {
		b.Queue(`INSERT INTO lexical_terms (tenant, memory_id, namespace, term, df)
			SELECT $1, $2, $3, t.term, t.n FROM unnest($4::text[], $5::int[]) WITH ORDINALITY AS t(term, n, ord) ORDER BY t.ord
			ON CONFLICT (tenant, memory_id, namespace, term) DO UPDATE SET df = lexical_terms.df + EXCLUDED.df`,
			tenant, memoryID, namespace, terms, counts)
	}
	if d.docs != 0 || d.length != 0 {
		b.Queue(`INSERT INTO lexical_totals (tenant, memory_id, namespace, docs, length) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (tenant, memory_id, namespace) DO UPDATE
			SET docs = lexical_totals.docs + EXCLUDED.docs, length = lexical_totals.length + EXCLUDED.length`,
			tenant, memoryID, namespace, d.docs, d.length)
	}
}

// BackfillLexical gives up to batch entries written before migration 00016 (a ranked kind with
// a vector and no terms yet) their lexical features, computed from their stored text as a write
// computes them (core.RankedText, core.LexicalOf), and adds the corpus chunks among them to
// their corpus's statistics, in one transaction; it returns how many entries it updated (0:
// none left). An entry whose text has no terms gets an empty term list, so it is not picked
// again. Rows locked by a concurrent write are skipped, to be done by a later call.
//
// On a distributed database a batch is one tenant's: Citus locks rows (FOR UPDATE) only in a
// statement routed to one shard, so the tenant is found first, by a statement over every shard
// that locks nothing.
func (s *Store) BackfillLexical(ctx context.Context, batch int) (int64, error) {
	var n int64
	err := s.tx(ctx, func(t pgx.Tx) error {
		const todoWhere = `lex_terms IS NULL AND embedding IS NOT NULL AND kind IN ('msg', 'snap', 'doc')`
		var (
			rows pgx.Rows
			err  error
		)
		if s.distributed {
			var tenant string
			switch err := t.QueryRow(ctx, `SELECT tenant FROM entries WHERE `+todoWhere+` LIMIT 1`).Scan(&tenant); {
			case errors.Is(err, pgx.ErrNoRows):
				return nil
			case err != nil:
				return err
			}
			rows, err = t.Query(ctx, `SELECT tenant, memory_id, namespace, id, kind, value FROM entries
				WHERE tenant = $2 AND `+todoWhere+` LIMIT $1 FOR UPDATE SKIP LOCKED`, batch, tenant)
		} else {
			rows, err = t.Query(ctx, `SELECT tenant, memory_id, namespace, id, kind, value FROM entries
				WHERE `+todoWhere+` LIMIT $1 FOR UPDATE SKIP LOCKED`, batch)
		}
		if err != nil {
			return err
		}
		type row struct {
			tenant, memory, namespace, id, kind string
			lex                                 *core.Lexical
		}
		var todo []row
		for rows.Next() {
			var r row
			var value []byte
			if err := rows.Scan(&r.tenant, &r.memory, &r.namespace, &r.id, &r.kind, &value); err != nil {
				rows.Close()
				return err
			}
			r.lex = core.LexicalOf(core.RankedText(core.EntryKind(r.kind), value))
			todo = append(todo, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		b := &pgx.Batch{}
		deltas := map[[3]string]*lexicalDelta{}
		for _, r := range todo {
			e := core.Entry{Lexical: r.lex}
			args := entryArgs(e)
			terms, freqs, length := args[entryInsertArity-3], args[entryInsertArity-2], args[entryInsertArity-1]
			if r.lex == nil {
				terms = []string{}
			}
			b.Queue(`UPDATE entries SET lex_terms = $5, lex_freqs = $6, lex_length = $7
				WHERE tenant = $1 AND memory_id = $2 AND namespace = $3 AND id = $4`, r.tenant, r.memory, r.namespace, r.id, terms, freqs, length)
			if r.kind == string(core.KindDocument) && r.lex != nil {
				k := [3]string{r.tenant, r.memory, r.namespace}
				if deltas[k] == nil {
					deltas[k] = &lexicalDelta{df: map[string]int{}}
				}
				deltas[k].add(r.lex.Terms, r.lex.Length, 1)
			}
		}
		keys := make([][3]string, 0, len(deltas))
		for k := range deltas {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && (keys[i][1] < keys[j][1] || keys[i][1] == keys[j][1] && keys[i][2] < keys[j][2])
		})
		for _, k := range keys {
			deltas[k].queue(b, k[0], k[1], k[2])
		}
		n = int64(len(todo))
		return t.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, translate(err, "backfill lexical features", "", "")
	}
	return n, nil
}
