package pg_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestCorpusRankUsesHNSW pins that corpus recall at 384 dimensions is served by the HNSW index
// (entries_doc_hnsw_384): if a change to the query or the index stops the planner from using
// it, this fails. The plan is taken with the store's own statement and settings (ExplainRank).
func TestCorpusRankUsesHNSW(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	vec := testVector
	putCorpus(t, s, 50, "footprint-hash-v1")
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	// The plan of the very statement RankEntries runs, under its own settings.
	lines, err := s.ExplainRank(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 10, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "Index Scan using entries_doc_hnsw_384") {
		t.Errorf("corpus ranking does not use the HNSW index:\n%s", plan)
	}
	// A conversation is never searched through it.
	lines, err = s.ExplainRank(ctx, recall.RankQuery{Tenant: "acme", Namespace: "acme/c1", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 10, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); strings.Contains(plan, "hnsw") {
		t.Errorf("conversation ranking uses the HNSW index:\n%s", plan)
	}
	res, err := s.RankEntries(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 5, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "ann" || len(res.Ranked) != 5 || res.Ranked[0].Entry.ID != "d#3" {
		t.Errorf("ann ranking: mode %s, %d results, first %v", res.Mode, len(res.Ranked), res.Ranked)
	}
}

// TestRankingRunsGenericPlans: both rankings run on their cached generic plans, planned once
// per connection rather than on every recall, and those plans are the right ones — the
// namespace's b-tree for a conversation, the HNSW index for a corpus — even with a large
// namespace in the table skewing the planner's estimates (which is what made Postgres re-plan).
//
// On Citus the coordinator plans the exact ranking afresh (custom plans: Citus cannot plan its
// count subquery generically), and the worker plans what it receives in any case.
func TestRankingRunsGenericPlans(t *testing.T) {
	pgtest.SkipOnCitus(t, "TestCitusRankingPlans (one task, through the shard's indexes)")
	t.Parallel()
	ctx := t.Context()
	s, err := pg.Open(ctx, pgtest.DSN(t), nil, pg.WithMaxConns(1)) // one session to inspect
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	vec := testVector
	putCorpus(t, s, 2000, "m")
	now := time.Now().UTC()
	for i := range 3 {
		if _, err := s.WriteTurn(ctx, snapWrite("acme/c1", i+1, 384, 0, now).Write()); err != nil {
			t.Fatal(err)
		}
	}
	pool := pg.Pool(s)
	if _, err := pool.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	conv := recall.RankQuery{Tenant: "acme", Namespace: "acme/c1", MemoryID: "why", Kinds: []core.EntryKind{core.KindSnapshot},
		Vector: vec(1), Model: "m", Limit: 5, Now: now}
	corpus := recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs", Kinds: []core.EntryKind{core.KindDocument},
		Vector: vec(3), Model: "m", Limit: 5, Now: now}
	for range 8 { // past the five custom plans Postgres tries before it would consider a generic one
		for _, q := range []recall.RankQuery{conv, corpus} {
			if res, err := s.RankEntries(ctx, q); err != nil || len(res.Ranked) == 0 {
				t.Fatalf("rank %s: %v, %d results", q.MemoryID, err, len(res.Ranked))
			}
		}
	}
	rows, err := pool.Query(ctx, `SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE 'SELECT id, kind%ORDER BY embedding%'`)
	if err != nil {
		t.Fatal(err)
	}
	type prepared struct {
		Name, SQL       string
		Generic, Custom int64
	}
	stmts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[prepared])
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 2 {
		t.Fatalf("want the two ranking statements prepared, got %d", len(stmts))
	}
	for _, st := range stmts {
		if st.Custom != 0 || st.Generic != 8 {
			t.Errorf("%s: %d generic and %d custom plans, want 8 generic (planned once):\n%s", st.Name, st.Generic, st.Custom, st.SQL)
		}
		// The generic plan itself, under the batch's settings: a conversation is read through a
		// b-tree bounded by its namespace (entries_newest_idx or the primary key, whichever the
		// statistics favour; never a scan of the table), a corpus through its HNSW index.
		corpus := strings.Contains(st.SQL, "::vector(384)")
		args := "'acme', 'acme/c1', 'why', '{snap}', now(), $v$" + vecText(vec(1)) + "$v$, 'm', 5"
		if corpus {
			args = "'acme', '', 'docs', '{doc}', now(), $v$" + vecText(vec(3)) + "$v$, 'm', 5"
		}
		var plan []string
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_sort = off"); err != nil {
				return err
			}
			r, err := tx.Query(ctx, "EXPLAIN EXECUTE "+st.Name+"("+args+")", pgx.QueryExecModeSimpleProtocol)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(r, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Join(plan, "\n")
		ok := !strings.Contains(p, "Seq Scan") && strings.Contains(p, "$1")
		if corpus {
			ok = ok && strings.Contains(p, "Index Scan using entries_doc_hnsw_384")
		} else {
			ok = ok && !strings.Contains(p, "hnsw") && slices.ContainsFunc(plan, func(l string) bool {
				return strings.Contains(l, "Index Cond") && strings.Contains(l, "namespace = $2")
			})
		}
		if !ok {
			t.Errorf("generic plan of the %s ranking:\n%s", map[bool]string{true: "corpus", false: "conversation"}[corpus], p)
		}
	}
}

// testVector is a 384-d vector with two non-zero components chosen by seed.
func testVector(seed int) []float32 {
	v := make([]float32, 384)
	v[seed%384], v[(seed*7)%384] = 1, 0.5
	return v
}

// putCorpus indexes one document of n chunks d#0..d#n-1 into tenant acme's corpus memory docs,
// chunk i with testVector(i) labelled model.
func putCorpus(t *testing.T, s *pg.Store, n int, model string) {
	t.Helper()
	chunks := make([]core.Entry, n)
	for i := range chunks {
		chunks[i] = core.Entry{Tenant: "acme", MemoryID: "docs", ID: fmt.Sprintf("d#%d", i), Kind: core.KindDocument,
			Index: i, Value: []byte(`{"text":"x"}`), Embedding: testVector(i), EmbeddingModel: model}
	}
	if err := s.PutDocuments(t.Context(), "acme", "docs", []string{"d"}, chunks, nil); err != nil {
		t.Fatal(err)
	}
}

// vecText is v in pgvector's text form.
func vecText(v []float32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestFilteredCorpusIsNeverShort: the corpus HNSW index is shared by every corpus of its
// dimension, so the single pass over ef_search candidates can hold none of a small corpus's
// chunks (here: its vectors are the farthest of all from the query). The search must then walk
// on (iterative scan) rather than answer short, and stay an ANN search in exact score order.
func TestFilteredCorpusIsNeverShort(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgtest.DSN(t))
	putCorpus(t, s, 2000, "m") // memory docs: the large neighbour in the same index
	query := testVector(3)
	chunks := make([]core.Entry, 40)
	for i := range chunks {
		v := make([]float32, len(query))
		for j, x := range query {
			v[j] = -x
		}
		v[(i+100)%len(v)] += 0.01 * float32(i+1)
		chunks[i] = core.Entry{Tenant: "acme", MemoryID: "small", ID: fmt.Sprintf("s#%d", i), Kind: core.KindDocument,
			Index: i, Value: []byte(`{"text":"x"}`), Embedding: v, EmbeddingModel: "m"}
	}
	if err := s.PutDocuments(ctx, "acme", "small", []string{"s"}, chunks, nil); err != nil {
		t.Fatal(err)
	}
	res, err := s.RankEntries(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "small",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: query, Model: "m", Limit: 20, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "ann" || len(res.Ranked) != 20 {
		t.Fatalf("mode %s, %d results; want ann, 20", res.Mode, len(res.Ranked))
	}
	for i, sc := range res.Ranked {
		if i > 0 && sc.Score > res.Ranked[i-1].Score {
			t.Errorf("rank %d (%s, %.6f) scores above rank %d (%.6f)", i, sc.Entry.ID, sc.Score, i-1, res.Ranked[i-1].Score)
		}
		if sc.Entry.MemoryID != "small" {
			t.Errorf("rank %d is %s of memory %s", i, sc.Entry.ID, sc.Entry.MemoryID)
		}
	}
}

// TestReceiptCommitsAsynchronously: the receipt's INSERT runs with synchronous_commit off for
// its own transaction only; the session (a pooled connection, shared with turn writes) keeps
// the server's setting.
func TestReceiptCommitsAsynchronously(t *testing.T) {
	pgtest.SkipOnCitus(t, `TestCitusSettingsReachTheWorker ("receipt": the worker's commit)`)
	t.Parallel()
	ctx := t.Context()
	conn := connect(t, pgtest.DSN(t)) // a database made from the migrated template
	// The test cluster runs with synchronous_commit off; a production server runs with it on.
	if _, err := conn.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	var before, during, after string
	if err := conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, pg.SaveReceiptSQL+` RETURNING current_setting('synchronous_commit')`,
		"t", "rcl_test", "t/_/c", nil, nil, "sha256:x", time.Now(), []byte(`{}`), []string{}).Scan(&during); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != "on" || during != "off" || after != "on" {
		t.Errorf("synchronous_commit: %s before, %s during the receipt's INSERT, %s after; want off during, unchanged after", before, during, after)
	}
}

// TestCorpusLexicalUsesGIN pins that a corpus's lexical search is served by the GIN index on
// its terms (entries_doc_lex) and re-scored, and that its answer is the exact one when every
// query term generates candidates: the same ranking as the exact scan of the same corpus.
func TestCorpusLexicalUsesGIN(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	viaIndex, err := pg.Open(ctx, dsn, nil, pg.ExactCorpusDocs(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(viaIndex.Close)
	exact := openStore(t, dsn)
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	chunks := make([]core.Entry, 300)
	for i := range chunks {
		text := fmt.Sprintf("%s %s %s chunk%d", words[i%8], words[i%5], words[i%3], i)
		chunks[i] = core.Entry{Tenant: "acme", MemoryID: "docs", ID: fmt.Sprintf("d#%d", i), Kind: core.KindDocument,
			Index: i, Value: []byte(`{"text":"x"}`), Embedding: testVector(i), EmbeddingModel: "footprint-hash-v1", Lexical: core.LexicalOf(text)}
	}
	if err := viaIndex.PutDocuments(ctx, "acme", "docs", []string{"d"}, chunks, nil); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []core.Ranking{core.RankLexical, core.RankHybrid} {
		q := recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs", Kinds: []core.EntryKind{core.KindDocument},
			Vector: testVector(7), Model: "footprint-hash-v1", Ranking: r, Alpha: 0.3, Terms: core.QueryTerms("golf hotel chunk7"),
			Limit: 10, Now: time.Now()}
		got, err := viaIndex.RankEntries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := exact.RankEntries(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Mode != "ann" || want.Mode != "exact" {
			t.Fatalf("%s: modes %s (index) and %s (exact scan)", r, got.Mode, want.Mode)
		}
		if len(got.Ranked) == 0 || got.Ranked[0].Entry.ID != "d#7" {
			t.Errorf("%s: the chunk holding every term is not first: %v", r, got.Ranked)
		}
		if r == core.RankLexical {
			for i := range want.Ranked {
				if i >= len(got.Ranked) || got.Ranked[i].Entry.ID != want.Ranked[i].Entry.ID ||
					got.Ranked[i].Lexical-want.Ranked[i].Lexical > 1e-9 || want.Ranked[i].Lexical-got.Ranked[i].Lexical > 1e-9 {
					t.Fatalf("index path and exact scan disagree at %d:\n index %v\n exact %v", i, got.Ranked, want.Ranked)
				}
			}
		}
	}
	// The statistics PutDocuments kept are the corpus's: "golf" is in 300/8 chunks, rounded up.
	var df, docs int
	if err := conn.QueryRow(ctx, `SELECT df FROM lexical_terms WHERE tenant = 'acme' AND memory_id = 'docs' AND term = 'golf'`).Scan(&df); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT docs FROM lexical_totals WHERE tenant = 'acme' AND memory_id = 'docs'`).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if df != 37 || docs != 300 {
		t.Errorf("statistics: df(golf) %d, docs %d; want 37 and 300", df, docs)
	}
	lines, err := viaIndex.ExplainLexicalCandidates(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: testVector(7), Model: "footprint-hash-v1", Ranking: core.RankLexical,
		Terms: []string{"chunk7"}, Limit: 10, Now: time.Now()}, core.TermStats{Docs: 300, Length: 1200, DF: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "Bitmap Index Scan on entries_doc_lex") {
		t.Errorf("the lexical candidates are not found through the GIN index:\n%s", plan)
	}
}

// TestBackfillLexical: entries stored without terms (before migration 00016) get them from
// their stored text, and a corpus's chunks join its statistics, so that they rank as if
// written now.
func TestBackfillLexical(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	chunks := []core.Entry{
		{Tenant: "acme", MemoryID: "docs", ID: "d#0", Kind: core.KindDocument, Value: []byte(`{"text":"golf hotel"}`), Embedding: testVector(0), EmbeddingModel: "m"},
		{Tenant: "acme", MemoryID: "docs", ID: "d#1", Kind: core.KindDocument, Index: 1, Value: []byte(`{"text":"golf"}`), Embedding: testVector(1), EmbeddingModel: "m"},
		{Tenant: "acme", MemoryID: "docs", ID: "d#2", Kind: core.KindDocument, Index: 2, Value: []byte(`{"text":"***"}`), Embedding: testVector(2), EmbeddingModel: "m"},
	}
	if err := s.PutDocuments(ctx, "acme", "docs", []string{"d"}, chunks, nil); err != nil { // no Lexical: as an old version wrote them
		t.Fatal(err)
	}
	total := int64(0)
	for {
		n, err := s.BackfillLexical(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if total += n; n == 0 {
			break
		}
	}
	if total != 3 {
		t.Errorf("backfilled %d entries, want 3", total)
	}
	conn := connect(t, dsn)
	var df, docs, length int
	if err := conn.QueryRow(ctx, `SELECT df FROM lexical_terms WHERE tenant = 'acme' AND memory_id = 'docs' AND term = 'golf'`).Scan(&df); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT docs, length FROM lexical_totals WHERE tenant = 'acme' AND memory_id = 'docs'`).Scan(&docs, &length); err != nil {
		t.Fatal(err)
	}
	if df != 2 || docs != 2 || length != 3 {
		t.Errorf("statistics after the backfill: df(golf) %d, docs %d, length %d; want 2, 2, 3", df, docs, length)
	}
	res, err := s.RankEntries(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs", Kinds: []core.EntryKind{core.KindDocument},
		Vector: testVector(5), Model: "m", Ranking: core.RankLexical, Terms: []string{"golf", "hotel"}, Limit: 3, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ranked) != 3 || res.Ranked[0].Entry.ID != "d#0" || res.Ranked[0].Lexical <= res.Ranked[1].Lexical || res.Ranked[2].Lexical != 0 {
		t.Errorf("ranking after the backfill: %+v", res.Ranked)
	}
}
