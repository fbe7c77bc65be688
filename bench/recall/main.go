// Command recall benchmarks semantic recall at scale, in one run, on a fresh
// database: the real service behind the real HTTP handler on a loopback
// listener, against (b) the same ranking SQL run directly through the
// Postgres store (store.RankEntries, no HTTP, no embedding, no receipt) and
// (c) an exact brute-force cosine scan in Go over the same vectors held in
// memory. The service and the direct SQL run interleaved, on the same queries,
// so that the gap between them is the service's cost, not the machine's drift.
// Two regimes:
//
//   - per conversation: 1,000 conversations × 100 messages, each ranked by
//     an exact scan of its b-tree-selected rows;
//   - corpus: ~100,000 document chunks in one corpus memory, ranked through
//     the HNSW index (one pass; an iterative scan when a filter leaves it short).
//
// All text is real: sentences and chunks of the man pages, licences,
// copyright, README and NEWS files this Debian system ships, embedded with
// the built-in hash embedder (384 dimensions). Queries are sentences of
// held-out documents, never stored.
//
//	go run ./bench/recall -db "$(scripts/test-postgres.sh start)" [-convs 1000] [-entries 100] [-message-chars 0] [-chunks 100000] [-queries 1000] [-duration 30s] [-keep] [-cpuprofile f] [-corpus-cpuprofile f]
//
// -db is an admin DSN: the command creates footprint_bench_<random> from it
// and drops it at exit.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/bench/internal/debtext"
	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/embedder"

	"github.com/footprint/footprint/internal/store/pg"
)

const (
	tenant       = core.DefaultTenant
	dims         = 384
	topK         = 10
	rejectWindow = 10 // the semantic topK default: the store is asked for topK + rejectWindow
	limit        = topK + rejectWindow
	minChunk     = 300
	maxChunk     = 1000 // core's chunking rule (maxChunkChars)
)

type config struct {
	adminDSN           string
	convs              int
	entries            int
	messageChars       int // a message joins consecutive sentences up to at least this many characters
	chunks             int
	queries            int
	warmup             int
	workers            int
	duration           time.Duration
	seed               uint64
	keep               bool
	ranking            string        // the memories' topK ranking: vector, lexical or hybrid
	profile            string        // CPU profile of the per-conversation service and direct sides
	corpusProfile      string        // CPU profile of the corpus service and direct sides
	tracing            bool          // also measure the per-conversation service traced (tracing.go)
	scale              []int64       // -scale: table sizes to measure per-conversation recall at (scale.go)
	concurrent         bool          // -concurrent: the closed-loop cells instead (concurrent.go)
	clients            int           // -clients of the concurrent cells
	reps               int           // -reps of the scale and concurrent modes
	cellDuration       time.Duration // -cell-duration of a concurrent cell
	receiptCompression string        // -receipt-compression: TOAST methods to A/B the receipts' body with (concurrent.go)
	citusDSN           string        // -citus: also measure per-conversation recall on this Citus cluster (citus.go)
}

func main() {
	var c config
	benchkit.AdminDSNFlag(&c.adminDSN)
	flag.IntVar(&c.convs, "convs", 1000, "conversations of the per-conversation regime")
	flag.IntVar(&c.entries, "entries", 100, "messages per conversation")
	flag.IntVar(&c.messageChars, "message-chars", 0, "each message joins consecutive sentences up to at least this many characters (0: one sentence; agents' answers are often 1,000 or more)")
	flag.IntVar(&c.chunks, "chunks", 100000, "document chunks of the corpus regime (0 skips it)")
	flag.IntVar(&c.queries, "queries", 1000, "measured queries per side and regime")
	flag.IntVar(&c.warmup, "warmup", 50, "warm-up queries per side before measuring (not reported)")
	flag.IntVar(&c.workers, "workers", 3, "concurrent writers while loading")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "cap on each measured side; fewer queries are measured when it runs out")
	flag.Uint64Var(&c.seed, "seed", 1, "seed for the choice of conversations, texts and queries")
	flag.StringVar(&c.ranking, "ranking", "vector", "the memories' topK ranking (vector, lexical or hybrid; the built-in embedder's default is hybrid); recall@10 against the exact vector answers is checked for vector only")
	flag.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the per-conversation service and direct sides (measured interleaved) to this file")
	flag.StringVar(&c.corpusProfile, "corpus-cpuprofile", "", "write a CPU profile of the corpus service and direct sides (measured interleaved) to this file")
	flag.BoolVar(&c.tracing, "tracing", false, "also measure what tracing costs per-conversation recall: the service untraced against the service traced at sampling 1.0, exporting OTLP/HTTP to an in-process receiver, interleaved (tracing.go)")
	benchkit.CitusDSNFlag(&c.citusDSN)
	flag.BoolVar(&c.keep, "keep", false, "keep the benchmark database at exit (for EXPLAIN and index experiments by hand)")
	var scale string
	flag.StringVar(&scale, "scale", "", "measure instead per-conversation recall as the entries table grows to each of these row counts (comma-separated, e.g. 10000,100000,1000000: other tenants' rows), service, direct SQL and the ranking statement under the plan settings now and before, interleaved, at each size (scale.go)")
	flag.BoolVar(&c.concurrent, "concurrent", false, "measure instead -clients closed-loop clients recalling in conversations of 100 and 1,000 messages, service against direct SQL (concurrent.go); -cpuprofile covers the service's 100-message cells")
	flag.IntVar(&c.clients, "clients", 16, "closed-loop clients of -concurrent")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of each -scale size and -concurrent cell (medians reported)")
	flag.DurationVar(&c.cellDuration, "cell-duration", 10*time.Second, "duration of each -concurrent cell")
	flag.StringVar(&c.receiptCompression, "receipt-compression", "", "with -concurrent, also run the 100-message service cells with the receipts' body compressed by each of these TOAST methods (comma-separated: pglz,lz4), interleaved")
	flag.Parse()
	benchkit.RequireAdminDSN("recall", c.adminDSN)
	if scale != "" {
		sizes, err := benchkit.ParseSizes(scale)
		if err != nil {
			benchkit.Usage("recall", "-scale: "+err.Error())
		}
		c.scale = sizes
	}
	if c.clients < 1 || c.reps < 1 || c.cellDuration <= 0 {
		benchkit.Usage("recall", "-clients and -reps must be ≥ 1, -cell-duration > 0")
	}
	if !slices.Contains(core.Rankings, core.Ranking(c.ranking)) {
		benchkit.Usage("recall", "-ranking must be vector, lexical or hybrid")
	}
	if c.convs < 1 || c.entries < 2 || c.messageChars < 0 || c.chunks < 0 || c.queries < 1 || c.workers < 1 || c.warmup < 0 {
		benchkit.Usage("recall", "-convs, -queries and -workers must be ≥ 1, -entries ≥ 2, -message-chars, -chunks and -warmup ≥ 0")
	}
	benchkit.Main("recall", func(ctx context.Context) error { return run(ctx, c) })
}

// bench is the wiring shared by both regimes.
type bench struct {
	cfg    config
	rng    *mrand.Rand
	store  *pg.Store
	pool   *pgxpool.Pool // EXPLAIN, VACUUM, CHECKPOINT and sizes only
	hash   *embedder.Hash
	svc    *app.App
	model  string
	server *benchkit.Server
	conn   *benchkit.Conn // the service side's keep-alive connection (one client)
	traced *benchkit.Conn // the same to the traced service (-tracing)
	citus  *citusSide     // the same service on a Citus cluster (-citus; citus.go)
	checks []check
}

type check struct {
	name, detail string
	ok           bool
}

func (b *bench) check(name string, ok bool, format string, args ...any) {
	b.checks = append(b.checks, check{name, fmt.Sprintf(format, args...), ok})
}

func run(ctx context.Context, cfg config) error {
	start := time.Now()
	b := &bench{cfg: cfg, rng: mrand.New(mrand.NewPCG(cfg.seed, 0x5eed))}

	t := time.Now()
	srcs := debtext.DebianSources()
	docs := debtext.LoadDocuments(srcs)
	tc := debtext.BuildTextCorpus(docs, b.rng)
	if len(tc.Sentences) < cfg.entries || len(tc.Queries) == 0 {
		return fmt.Errorf("not enough text on this system: %d sentences, %d query sentences", len(tc.Sentences), len(tc.Queries))
	}
	fmt.Printf("text: %d files read, %d distinct documents (%d held out for queries): %d sentences, %d query sentences, in %s\n",
		len(srcs), len(docs), tc.HeldOut, len(tc.Sentences), len(tc.Queries), since(t))

	dsn, drop, err := benchkit.CreateDatabase(ctx, cfg.adminDSN, "footprint_bench_", "recall")
	if err != nil {
		return err
	}
	if cfg.keep {
		fmt.Printf("keeping the database: %s\n", dsn)
	} else {
		defer drop()
	}
	store, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return err
	}
	pcfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return err
	}
	defer pool.Close()

	hash, err := embedder.NewHash("hash", dims)
	if err != nil {
		return err
	}
	server, err := benchkit.StartServer(store, hash, 8)
	if err != nil {
		return err
	}
	defer server.Close()
	b.store, b.pool, b.hash, b.svc, b.model = store, pool, hash, server.App, hash.Info().Model
	b.server = server
	if b.conn, err = server.Dial(); err != nil {
		return err
	}
	defer func() { _ = b.conn.Close() }()
	if cfg.tracing {
		stop, err := b.startTraced(ctx, dsn, hash)
		if err != nil {
			return err
		}
		defer stop()
	}
	if cfg.citusDSN != "" {
		stop, err := b.startCitus(ctx, hash)
		if err != nil {
			return err
		}
		defer stop()
	}

	var pgVersion, vecVersion string
	_ = pool.QueryRow(ctx, `SELECT current_setting('server_version')`).Scan(&pgVersion)
	_ = pool.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&vecVersion)
	// The service runs in this process: pace its collector as cmd/server does on the Postgres
	// store (every side shares the setting).
	gc := benchkit.PaceGCAsServer(os.Getenv)
	fmt.Printf("recall benchmark: %d CPUs, GOMAXPROCS %d, %s, Postgres %s, pgvector %s, database %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), gc, pgVersion, vecVersion, benchkit.DBName(dsn))
	fmt.Printf("embedder %s (%s, %d dims), ranking %s; topK %d, rejectWindow %d → the store ranks LIMIT %d; one client, queries one after another\n\n",
		hash.Info().ID, b.model, dims, cfg.ranking, topK, rejectWindow, limit)

	if len(cfg.scale) > 0 || cfg.concurrent {
		return b.runMode(ctx, tc, start)
	}
	convQ, err := b.conversations(ctx, tc)
	if err != nil {
		return err
	}
	var corpusQ []query
	if cfg.chunks > 0 {
		if corpusQ, err = b.corpus(ctx, tc); err != nil {
			return err
		}
	}
	if err := b.explain(ctx, convQ, corpusQ); err != nil {
		return err
	}

	fmt.Println("\nsummary (targets from issue 4, \"Scale, measured\"):")
	misses := 0
	for _, c := range b.checks {
		verdict := "PASS"
		if !c.ok {
			verdict, misses = "MISS", misses+1
		}
		fmt.Printf("  %s  %-58s %s\n", verdict, c.name, c.detail)
	}
	fmt.Printf("  %d of %d targets met; whole run %s\n", len(b.checks)-misses, len(b.checks), since(start))
	return nil
}

// settle brings the database to a steady state after a load, before anything is measured: a
// vacuumed table (hint bits set, and no autovacuum, which 100k inserts trigger, running into one
// side's measurement and not the others'), fresh statistics, and a checkpoint, so that the
// load's dirty pages (hundreds of MB after the corpus) are not written out by the checkpointer
// on this 2-core machine while the sides are timed.
func (b *bench) settle(ctx context.Context) error {
	if _, err := b.pool.Exec(ctx, `VACUUM (ANALYZE) entries`); err != nil {
		return err
	}
	_, err := b.pool.Exec(ctx, `CHECKPOINT`)
	return err
}

// defineMemory defines a memory through the API, as an agent would.
func (b *bench) defineMemory(ctx context.Context, def string) (core.Memory, error) {
	if err := b.server.DefineMemory(def); err != nil {
		return core.Memory{}, err
	}
	var id struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(def), &id)
	return b.store.GetMemory(ctx, tenant, id.ID)
}

// ranking is the memories' ranking; alpha the built-in embedder's hybrid weight.
func (b *bench) ranking() core.Ranking { return core.Ranking(b.cfg.ranking) }
func (b *bench) alpha() float64        { return b.hash.Info().Ranking.Alpha }

// query is one measured recall: where, what, and the query's vector (for
// the sides that do not embed it themselves).
type query struct {
	conv int // index into the conversations; -1 for the corpus
	text string
	vec  []float32
}

// sideResult is one side's measurements over the queries it ran.
type sideResult struct {
	lat    []time.Duration // per query, in query order
	top    [][]string      // the first topK ids returned, per query
	modes  map[string]int  // searchMode (evidence) or RankResult.Mode
	short  int             // answers with fewer than topK results
	counts []int           // candidates considered (service) or returned (store), per query
	errs   int
	sample string
	// maxScoreDiff is the largest |store score − exact Go score| seen.
	maxScoreDiff float64
	exact        [][]hit // the exact side's answers with scores: the truth
}

// sideFunc runs one query on one side, records what it found in r and returns the time it took.
type sideFunc func(ctx context.Context, q query, r *sideResult) (time.Duration, error)

// measure runs each side over the same queries, interleaved with a lag: at each step side s
// runs query t − s·pairLag, until the queries or the duration run out (every side then catches
// up to the first, so that all run the same queries). Both sides of a comparison thus see the
// same minutes of this machine, whose speed drifts by a third over a day: measured one after
// the other, the difference between two sides was as much drift as cost. The lag keeps a side
// from finding a query's pages in the CPU caches just after another side touched them (a
// corpus query touches about 5 MB of index), which running both back to back would. Warm-up
// first, not recorded.
func (b *bench) measure(ctx context.Context, qs []query, sides ...sideFunc) ([]*sideResult, error) {
	rs := make([]*sideResult, len(sides))
	for s := range rs {
		rs[s] = &sideResult{modes: map[string]int{}}
	}
	for i := range b.cfg.warmup {
		for _, f := range sides {
			scratch := &sideResult{modes: map[string]int{}}
			if _, err := f(ctx, qs[len(qs)-1-i%len(qs)], scratch); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	deadline := time.Now().Add(b.cfg.duration)
	n := len(qs) // how many queries the first side runs: all of them, or those it ran by the deadline
	for t := 0; t < n+(len(sides)-1)*pairLag; t++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if t < n && time.Now().After(deadline) {
			n = t
		}
		for s, f := range sides {
			i := t - s*pairLag
			if i < 0 || i >= n {
				continue
			}
			r := rs[s]
			d, err := f(ctx, qs[i], r)
			r.lat = append(r.lat, d)
			if err != nil {
				r.errs++
				if r.sample == "" {
					r.sample = err.Error()
				}
				r.top = append(r.top, nil)
				r.counts = append(r.counts, 0)
			}
		}
	}
	return rs, nil
}

// pairLag is how many queries apart two sides run the same query (see measure).
const pairLag = 50

// pairedGap is the median over queries of a's latency minus b's on the same query (measured
// pairLag queries apart by measure): the service's own cost, with the machine's drift and the
// differences between queries cancelled out.
func pairedGap(a, b *sideResult) time.Duration {
	n := min(len(a.lat), len(b.lat))
	d := make([]time.Duration, n)
	for i := range n {
		d[i] = a.lat[i] - b.lat[i]
	}
	slices.Sort(d)
	return benchkit.Percentile(d, 0.5)
}

// recallResponse is the part of the recall answer the benchmark reads.
type recallResponse struct {
	Memories []struct {
		MemoryID string `json:"memoryId"`
		Evidence struct {
			SearchMode      string `json:"searchMode"`
			ConsideredCount int    `json:"consideredCount"`
			Candidates      []struct {
				ID    string   `json:"id"`
				Score *float64 `json:"score"`
				Rank  int      `json:"rank"`
			} `json:"candidates"`
		} `json:"evidence"`
	} `json:"memories"`
}

// serviceSide posts the recall over HTTP (b.conn: one keep-alive connection,
// no http.Transport) and reads the whole answer; the clock stops when the
// body is read (decoding it is the benchmark's work).
func (b *bench) serviceSide(conversation func(q query) string, memory string) sideFunc {
	return b.serviceSideOn(b.conn, conversation, memory)
}

// serviceSideOn is serviceSide over conn.
func (b *bench) serviceSideOn(conn *benchkit.Conn, conversation func(q query) string, memory string) sideFunc {
	return func(ctx context.Context, q query, r *sideResult) (time.Duration, error) {
		t0 := time.Now()
		body, _ := json.Marshal(map[string]any{"query": q.text, "memories": []string{memory}})
		raw, err := conn.Post("/v1/conversations/"+url.PathEscape(conversation(q))+"/recall", body, http.StatusOK)
		elapsed := time.Since(t0)
		if err != nil {
			return 0, err
		}
		var out recallResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return 0, err
		}
		if len(out.Memories) != 1 {
			return 0, fmt.Errorf("want one memory in the answer, got %d", len(out.Memories))
		}
		ev := out.Memories[0].Evidence
		cands := slices.Clone(ev.Candidates)
		slices.SortStableFunc(cands, func(x, y struct {
			ID    string   `json:"id"`
			Score *float64 `json:"score"`
			Rank  int      `json:"rank"`
		}) int {
			return x.Rank - y.Rank
		})
		var ids []string
		for _, c := range cands[:min(topK, len(cands))] {
			ids = append(ids, c.ID)
		}
		r.top = append(r.top, ids)
		r.counts = append(r.counts, ev.ConsideredCount)
		r.modes[ev.SearchMode]++
		if len(cands) < topK {
			r.short++
		}

		return elapsed, nil
	}
}

// storeSide runs the service's ranking query directly: store.RankEntries
// with the RankQuery the service builds.
func (b *bench) storeSide(namespace func(q query) string, memory string, kind core.EntryKind, sets func(q query) *vectorSet) sideFunc {
	return b.storeSideOn(b.store, namespace, memory, kind, sets)
}

// storeSideOn is storeSide on store.
func (b *bench) storeSideOn(store *pg.Store, namespace func(q query) string, memory string, kind core.EntryKind, sets func(q query) *vectorSet) sideFunc {
	return func(ctx context.Context, q query, r *sideResult) (time.Duration, error) {
		t0 := time.Now()
		res, err := store.RankEntries(ctx, recall.RankQuery{Tenant: tenant, Namespace: namespace(q), MemoryID: memory,
			Kinds: []core.EntryKind{kind}, Vector: q.vec, Model: b.model, Limit: limit, Now: time.Now().UTC().Truncate(time.Millisecond),
			Ranking: b.ranking(), Alpha: b.alpha(), Terms: core.QueryTerms(q.text)})
		elapsed := time.Since(t0)
		if err != nil {
			return elapsed, err
		}
		var ids []string
		for i, s := range res.Ranked {
			if i < topK {
				ids = append(ids, s.Entry.ID)
			}
			if exact, ok := sets(q).scoreOf(s.Entry.ID, q.vec); ok {
				r.maxScoreDiff = max(r.maxScoreDiff, abs(exact-s.Score))
			}
		}
		r.top = append(r.top, ids)
		r.counts = append(r.counts, len(res.Ranked))
		r.modes[res.Mode]++
		if len(res.Ranked) < topK {
			r.short++
		}
		return elapsed, nil
	}
}

// exactSide is the brute-force scan in Go; its answers are the truth the
// other sides are scored against.
func exactSide(sets func(q query) *vectorSet) sideFunc {
	return func(_ context.Context, q query, r *sideResult) (time.Duration, error) {
		t0 := time.Now()
		best := sets(q).topK(q.vec, topK)
		elapsed := time.Since(t0)
		ids := make([]string, len(best))
		for i, h := range best {
			ids[i] = h.id
		}
		r.top = append(r.top, ids)
		r.counts = append(r.counts, sets(q).len())
		r.modes["exact"]++
		if len(best) < topK {
			r.short++
		}
		r.exact = append(r.exact, best)
		return elapsed, nil
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// messages returns n messages from consecutive sentences starting at at (wrapping around):
// one sentence each, or as many as it takes to reach minChars.
func messages(sentences []string, at, n, minChars int) []string {
	if minChars == 0 {
		return sentences[at : at+n]
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < minChars {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(sentences[at%len(sentences)])
			at++
		}
		out[i] = b.String()
	}
	return out
}

// conversations is regime 1: it writes convs × entries messages with their
// vectors, then measures recall in random conversations.
func (b *bench) conversations(ctx context.Context, tc debtext.TextCorpus) ([]query, error) {
	cfg := b.cfg
	def := `{"id":"conv","type":"semantic","strategy":{"kind":"topK","topK":10,"threshold":-1,"ranking":"` + cfg.ranking + `"}}`
	mem, err := b.defineMemory(ctx, def)
	if err != nil {
		return nil, err
	}
	if b.citus != nil {
		if err := b.citus.server.DefineMemory(def); err != nil {
			return nil, err
		}
	}
	type conv struct {
		id, ns string
		texts  []string
		set    *vectorSet
	}
	convs := make([]conv, cfg.convs)
	for i := range convs {
		// Consecutive sentences of the corpus side: a conversation keeps to a
		// topic or two, as real ones do.
		at := b.rng.IntN(len(tc.Sentences) - cfg.entries + 1)
		id := fmt.Sprintf("bench-%04d", i)
		convs[i] = conv{id: id, ns: core.Identity{Tenant: tenant, ConversationID: id}.Namespace(), texts: messages(tc.Sentences, at, cfg.entries, cfg.messageChars)}
	}

	t := time.Now()
	var written atomic.Int64
	err = parallel(ctx, cfg.workers, len(convs), func(ctx context.Context, i int) error {
		c := &convs[i]
		vecs, err := b.hash.Embed(ctx, c.texts)
		if err != nil {
			return err
		}
		c.set = newVectorSet(dims, len(vecs))
		now := time.Now().UTC().Truncate(time.Microsecond)
		var entries []core.Entry
		for j, text := range c.texts {
			turn, idx := j/2+1, j%2
			role := "user"
			if idx == 1 {
				role = "assistant"
			}
			value, _ := json.Marshal(core.Message{Role: role, Content: text})
			id := fmt.Sprintf("msg-%d-%d", turn, idx)
			entries = append(entries, core.Entry{Tenant: tenant, MemoryID: mem.ID, Namespace: c.ns, ID: id, Kind: core.KindMessage,
				Turn: turn, Index: idx, Value: value, Metadata: json.RawMessage(`{}`), Version: 1,
				CreatedAt: now, UpdatedAt: now, LastAccessedAt: now, Tier: mem.Tier, SourceTurn: turn,
				Embedding: vecs[j], EmbeddingModel: b.model, Lexical: core.LexicalOf(text)})
			c.set.add(id, vecs[j])
		}
		fps := []core.Fingerprint{{MemoryID: mem.ID, Model: b.model, Dims: dims}}
		stores := []*pg.Store{b.store}
		if b.citus != nil {
			stores = append(stores, b.citus.store) // the same conversation on Citus
		}
		for _, st := range stores {
			_, err = st.WriteTurn(ctx, turns.TurnWrite{Tenant: tenant, Namespace: c.ns, Now: now,
				Scope:               turns.TurnScope{MemoryIDs: []string{mem.ID}, Kinds: turns.CountedKinds(true, false)},
				FingerprintMemories: []string{mem.ID},
				Decide:              turns.Decider(1, fps, func(int) ([]core.Entry, error) { return entries, nil })})
			if err != nil {
				return fmt.Errorf("write conversation %s: %w", c.id, err)
			}
		}
		written.Add(int64(len(entries)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	load := time.Since(t)
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	if b.citus != nil {
		if _, err := b.citus.pool.Exec(ctx, `VACUUM (ANALYZE) entries`); err != nil {
			return nil, err
		}
	}
	shape := "one real sentence each"
	if cfg.messageChars > 0 {
		shape = fmt.Sprintf("consecutive real sentences, at least %d characters each", cfg.messageChars)
	}
	fmt.Printf("== per-conversation recall: %d conversations × %d messages (%s), memory %s\n", cfg.convs, cfg.entries, shape, mem.ID)
	fmt.Printf("loaded %d messages with %d-d vectors in %s (%.0f entries/s, store.WriteTurn, one turn-write per conversation, %d writers), then VACUUM (ANALYZE) and CHECKPOINT\n",
		written.Load(), dims, round(load), float64(written.Load())/load.Seconds(), cfg.workers)

	qs := make([]query, cfg.queries)
	for i := range qs {
		qs[i] = query{conv: b.rng.IntN(len(convs)), text: tc.Queries[b.rng.IntN(len(tc.Queries))]}
	}
	if err := b.embedQueries(ctx, qs); err != nil {
		return nil, err
	}
	setOf := func(q query) *vectorSet { return convs[q.conv].set }
	stop, err := benchkit.StartCPUProfile(b.cfg.profile)
	if err != nil {
		return nil, err
	}
	paired, err := b.measure(ctx, qs, b.serviceSide(func(q query) string { return convs[q.conv].id }, mem.ID),
		b.storeSide(func(q query) string { return convs[q.conv].ns }, mem.ID, core.KindMessage, setOf))
	stop()
	if err != nil {
		return nil, err
	}
	svc, direct := paired[0], paired[1]
	measured, err := b.measure(ctx, qs, exactSide(setOf))
	if err != nil {
		return nil, err
	}
	exact := measured[0]
	truth := exact.exact
	// The truth must cover every query the other sides ran, whatever the
	// duration cap did to the exact side's timing.
	for i := len(truth); i < len(svc.lat); i++ {
		truth = append(truth, setOf(qs[i]).topK(qs[i].vec, topK))
	}
	rows := b.report(qs, setOf, truth, svc, direct, exact)
	fmt.Printf("(candidates considered per query by the service: %s — every message of the conversation)\n", spread(svc.counts))
	if b.cfg.tracing {
		if err := b.tracingCost(ctx, qs, func(q query) string { return convs[q.conv].id }, mem.ID); err != nil {
			return nil, err
		}
	}
	if b.citus != nil {
		if err := b.citusCost(ctx, qs, func(q query) string { return convs[q.conv].id }, func(q query) string { return convs[q.conv].ns }, mem.ID, setOf); err != nil {
			return nil, err
		}
	}
	if err := b.breakdown(ctx, qs[:len(svc.lat)], mem.ID, func(q query) (string, string) { return convs[q.conv].id, convs[q.conv].ns }, core.KindMessage); err != nil {
		return nil, err
	}
	if err := b.sizes(ctx, qs, func(q query) string { return convs[q.conv].id }, mem.ID); err != nil {
		return nil, err
	}
	fmt.Println()

	b.check("per-conversation service p50 ≤ 1 ms", rows[0].p50 <= time.Millisecond, "%.3f ms", benchkit.Ms(rows[0].p50))
	b.check("per-conversation service p99 ≤ 3 ms", rows[0].p99 <= 3*time.Millisecond, "%.3f ms", benchkit.Ms(rows[0].p99))
	b.check("per-conversation recall@10 = 1.0 (service and direct SQL)", b.cfg.ranking != "vector" || rows[0].recall == 1 && rows[1].recall == 1 && svc.errs+direct.errs == 0,
		"service %.4f, direct %.4f", rows[0].recall, rows[1].recall)
	b.check("per-conversation searchMode exact, never short", svc.modes["exact"] == len(svc.lat) && svc.short+direct.short == 0,
		"modes %v, short %d/%d", svc.modes, svc.short, direct.short)
	b.check("per-conversation service p50 within 0.5 ms of direct SQL", rows[0].p50-rows[1].p50 <= 500*time.Microsecond,
		"%+.3f ms (%.3f vs %.3f; per query, paired: %+.3f)", benchkit.Ms(rows[0].p50-rows[1].p50), benchkit.Ms(rows[0].p50), benchkit.Ms(rows[1].p50), benchkit.Ms(pairedGap(svc, direct)))
	return qs, nil
}

// corpus is regime 2: ~chunks document chunks in one corpus memory, ranked
// through the HNSW index.
func (b *bench) corpus(ctx context.Context, tc debtext.TextCorpus) ([]query, error) {
	cfg := b.cfg
	mem, err := b.defineMemory(ctx, `{"id":"docs","type":"semantic","strategy":{"kind":"topK","topK":10,"threshold":-1,"ranking":"`+cfg.ranking+`"},"corpus":true}`)
	if err != nil {
		return nil, err
	}
	type doc struct {
		id     string
		chunks []core.Entry
		texts  []string
	}
	t := time.Now()
	var docs []doc
	seen := map[string]bool{}
	total, chars := 0, 0
	for _, d := range tc.Docs {
		if total >= cfg.chunks {
			break
		}
		dd := doc{id: d.ID}
		for n, text := range recall.ChunkText(d.Text, maxChunk) {
			if total >= cfg.chunks {
				break
			}
			if runeLen(text) < minChunk || seen[text] {
				continue
			}
			seen[text] = true
			value, _ := json.Marshal(map[string]any{"text": text, "docId": d.ID, "docUri": d.URI, "page": 0, "heading": "", "chunk": n})
			dd.chunks = append(dd.chunks, core.Entry{Tenant: tenant, MemoryID: mem.ID, Namespace: core.CorpusNamespace,
				ID: fmt.Sprintf("%s#%d", d.ID, n), Kind: core.KindDocument, Index: n, Value: value, Tier: mem.Tier})
			dd.texts = append(dd.texts, text)
			total++
			chars += len(text)
		}
		if len(dd.chunks) > 0 {
			docs = append(docs, dd)
		}
	}
	if total < cfg.chunks {
		fmt.Printf("note: this system's text gives only %d distinct chunks of %d–%d characters (asked for %d)\n", total, minChunk, maxChunk, cfg.chunks)
	}
	chunking := time.Since(t)

	// Embed in parallel, as many goroutines as CPUs.
	t = time.Now()
	if err := parallel(ctx, runtime.NumCPU(), len(docs), func(ctx context.Context, i int) error {
		vs, err := b.hash.Embed(ctx, docs[i].texts)
		if err != nil {
			return fmt.Errorf("embed %s: %w", docs[i].id, err)
		}
		for k, v := range vs {
			docs[i].chunks[k].Embedding, docs[i].chunks[k].EmbeddingModel = v, b.model
			docs[i].chunks[k].Lexical = core.LexicalOf(docs[i].texts[k])
		}
		return nil
	}); err != nil {
		return nil, err
	}
	embedding := time.Since(t)
	set := newVectorSet(dims, total)
	for _, d := range docs {
		for _, e := range d.chunks {
			set.add(e.ID, e.Embedding)
		}
	}

	// Insert through store.PutDocuments in batches of whole documents, the
	// HNSW index maintained on every insert (as the service does).
	type batch struct {
		ids    []string
		chunks []core.Entry
	}
	var batches []batch
	var cur batch
	for _, d := range docs {
		cur.ids = append(cur.ids, d.id)
		cur.chunks = append(cur.chunks, d.chunks...)
		if len(cur.chunks) >= 500 {
			batches = append(batches, cur)
			cur = batch{}
		}
	}
	if len(cur.chunks) > 0 {
		batches = append(batches, cur)
	}
	t = time.Now()
	var inserted atomic.Int64
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				n := inserted.Load()
				fmt.Fprintf(os.Stderr, "  corpus: %d/%d chunks inserted, %.0f/s\n", n, total, float64(n)/time.Since(t).Seconds())
			}
		}
	}()
	err = parallel(ctx, cfg.workers, len(batches), func(ctx context.Context, i int) error {
		if err := b.store.PutDocuments(ctx, tenant, mem.ID, batches[i].ids, batches[i].chunks, nil); err != nil {
			return err
		}
		inserted.Add(int64(len(batches[i].chunks)))
		return nil
	})
	close(done)
	if err != nil {
		return nil, err
	}
	insert := time.Since(t)
	t = time.Now()
	if err := b.settle(ctx); err != nil {
		return nil, err
	}
	analyze := time.Since(t)
	var indexSize, tableSize string
	_ = b.pool.QueryRow(ctx, `SELECT pg_size_pretty(pg_relation_size('entries_doc_hnsw_384')), pg_size_pretty(pg_total_relation_size('entries'))`).Scan(&indexSize, &tableSize)
	indexOptions := "options unknown"
	_ = b.pool.QueryRow(ctx, `SELECT array_to_string(reloptions, ', ') FROM pg_class WHERE relname = 'entries_doc_hnsw_384'`).Scan(&indexOptions)

	fmt.Printf("== corpus recall: %d chunks of %d–%d characters (mean %d) from %d documents, memory %s (corpus)\n",
		total, minChunk, maxChunk, chars/max(1, total), len(docs), mem.ID)
	fmt.Printf("chunking %s; embedding %s (%.1f µs/chunk on %d goroutines)\n",
		round(chunking), round(embedding), float64(embedding.Microseconds())/float64(max(1, total)), runtime.NumCPU())
	fmt.Printf("insert with HNSW maintained on every row (%s): %s for %d chunks (%.0f chunks/s, store.PutDocuments, %d batches, %d writers); VACUUM (ANALYZE) and CHECKPOINT %s\n",
		indexOptions, round(insert), total, float64(total)/insert.Seconds(), len(batches), cfg.workers, round(analyze))
	fmt.Printf("HNSW index entries_doc_hnsw_384: %s; entries table with its indexes and TOAST: %s\n", indexSize, tableSize)

	qs := make([]query, cfg.queries)
	for i := range qs {
		qs[i] = query{conv: -1, text: tc.Queries[b.rng.IntN(len(tc.Queries))]}
	}
	if err := b.embedQueries(ctx, qs); err != nil {
		return nil, err
	}
	setOf := func(query) *vectorSet { return set }
	stop, err := benchkit.StartCPUProfile(b.cfg.corpusProfile)
	if err != nil {
		return nil, err
	}
	paired, err := b.measure(ctx, qs, b.serviceSide(func(query) string { return "bench-corpus-reader" }, mem.ID),
		b.storeSide(func(query) string { return core.CorpusNamespace }, mem.ID, core.KindDocument, setOf))
	stop()
	if err != nil {
		return nil, err
	}
	svc, direct := paired[0], paired[1]
	// The brute force over 100k vectors is slow: measure it on fewer queries
	// within the duration if need be, then complete the truth untimed.
	measured, err := b.measure(ctx, qs, exactSide(setOf))
	if err != nil {
		return nil, err
	}
	exact := measured[0]
	truth := exact.exact
	if len(truth) < len(svc.lat) {
		fmt.Fprintf(os.Stderr, "  corpus: exact truth for the remaining %d queries (untimed)\n", len(svc.lat)-len(truth))
	}
	var mu sync.Mutex
	rest := make([][]hit, max(0, len(svc.lat)-len(truth)))
	base := len(truth)
	if err := parallel(ctx, runtime.NumCPU(), len(rest), func(_ context.Context, i int) error {
		h := set.topK(qs[base+i].vec, topK)
		mu.Lock()
		rest[i] = h
		mu.Unlock()
		return nil
	}); err != nil {
		return nil, err
	}
	truth = append(truth, rest...)
	rows := b.report(qs, setOf, truth, svc, direct, exact)
	fmt.Printf("(candidates per query returned by the store: %s of LIMIT %d; consideredCount in the evidence: %s)\n", spread(direct.counts), limit, spread(svc.counts))
	if err := b.breakdown(ctx, qs[:len(svc.lat)], mem.ID, func(query) (string, string) { return "bench-corpus-reader", core.CorpusNamespace }, core.KindDocument); err != nil {
		return nil, err
	}
	if err := b.sizes(ctx, qs, func(query) string { return "bench-corpus-reader" }, mem.ID); err != nil {
		return nil, err
	}
	if err := b.efSweep(ctx, qs, set, truth); err != nil {
		return nil, err
	}
	fmt.Println()

	b.check("corpus recall@10 ≥ 0.95 (service and direct SQL)", b.cfg.ranking != "vector" || rows[0].recall >= 0.95 && rows[1].recall >= 0.95 && svc.errs+direct.errs == 0,
		"service %.4f, direct %.4f", rows[0].recall, rows[1].recall)
	b.check("corpus service p99 ≤ 10 ms", rows[0].p99 <= 10*time.Millisecond, "%.3f ms (direct SQL %.3f ms)", benchkit.Ms(rows[0].p99), benchkit.Ms(rows[1].p99))
	b.check("corpus never short (< 10 results)", svc.short+direct.short == 0 && svc.errs+direct.errs == 0,
		"short: service %d, direct %d of %d queries", svc.short, direct.short, len(svc.lat))
	b.check("corpus searchMode ann (evidence)", svc.modes["ann"] == len(svc.lat)-svc.errs && direct.modes["ann"] == len(direct.lat)-direct.errs,
		"service %v, direct %v", svc.modes, direct.modes)
	b.check("corpus service p50 within 0.5 ms of direct SQL", rows[0].p50-rows[1].p50 <= 500*time.Microsecond,
		"%+.3f ms (%.3f vs %.3f; per query, paired: %+.3f)", benchkit.Ms(rows[0].p50-rows[1].p50), benchkit.Ms(rows[0].p50), benchkit.Ms(rows[1].p50), benchkit.Ms(pairedGap(svc, direct)))
	return qs, nil
}

func (b *bench) embedQueries(ctx context.Context, qs []query) error {
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.text
	}
	vs, err := b.hash.Embed(ctx, texts)
	if err != nil {
		return err
	}
	for i := range qs {
		qs[i].vec = vs[i]
	}
	return nil
}

type row struct {
	p50, p99, max time.Duration
	recall        float64
	perfect, n    int
}

// report prints one regime's table and returns its rows: service, direct, exact.
func (b *bench) report(qs []query, setOf func(query) *vectorSet, truth [][]hit, sides ...*sideResult) []row {
	names := []string{"(a) service via HTTP", "(b) RankEntries (pgx)", "(c) exact, Go brute force"}
	fmt.Printf("%-26s %6s %8s %8s %8s %10s %12s %6s %6s  %s\n", "side", "n", "p50 ms", "p99 ms", "max ms", "recall@10", "exact top-10", "short", "errors", "mode")
	var rows []row
	for s, r := range sides {
		lat := slices.Clone(r.lat)
		slices.Sort(lat)
		rw := row{p50: benchkit.Percentile(lat, 0.50), p99: benchkit.Percentile(lat, 0.99), n: len(r.lat)}
		if len(lat) > 0 {
			rw.max = lat[len(lat)-1]
		}
		hits, want := 0, 0
		for i := range r.top {
			if i >= len(truth) {
				break
			}
			h, w := recallAt(r.top[i], truth[i], topK, setOf(qs[i]), qs[i].vec)
			hits, want = hits+h, want+w
			if h == w {
				rw.perfect++
			}
		}
		if want > 0 {
			rw.recall = float64(hits) / float64(want)
		}
		modes := []string{}
		for m, n := range r.modes {
			modes = append(modes, fmt.Sprintf("%s×%d", m, n))
		}
		slices.Sort(modes)
		fmt.Printf("%-26s %6d %8.3f %8.3f %8.3f %10.4f %7d/%-4d %6d %6d  %s\n", names[s], rw.n, benchkit.Ms(rw.p50), benchkit.Ms(rw.p99), benchkit.Ms(rw.max),
			rw.recall, rw.perfect, len(r.top), r.short, r.errs, strings.Join(modes, " "))
		if r.sample != "" {
			fmt.Printf("    error: %s\n", r.sample)
		}
		rows = append(rows, rw)
	}
	if len(sides) > 1 {
		fmt.Printf("(service − direct SQL, the median of per-query differences, each query run on both, %d queries apart: %+.3f ms)\n", pairLag, benchkit.Ms(pairedGap(sides[0], sides[1])))
		fmt.Printf("(recall@10: share of the exact top-10 found, a score within %.0e of the exact 10th counting as a tie; largest |SQL score − Go score| %.1e)\n",
			tieEps, sides[1].maxScoreDiff)
	}
	return rows
}

// explain prints the plans of one per-conversation and one corpus query,
// with copies of internal/store/pg/recall.go's SQL and planner settings.
func (b *bench) explain(ctx context.Context, convQ, corpusQ []query) error {
	now := time.Now().UTC()
	show := func(title string, q recall.RankQuery) error {
		lines, err := b.store.ExplainRank(ctx, q)
		if err != nil {
			return err
		}
		fmt.Printf("== EXPLAIN (ANALYZE, BUFFERS, SETTINGS): %s — the store's own statement and settings (pg.Store.ExplainRank)\n", title)
		for _, l := range lines {
			fmt.Println("  ", vectorLiteral.ReplaceAllString(l, "'[… 384 values …]'"))
		}
		fmt.Println()
		return nil
	}
	if len(convQ) > 0 {
		q := convQ[0]
		ns := core.Identity{Tenant: tenant, ConversationID: fmt.Sprintf("bench-%04d", q.conv)}.Namespace()
		if err := show("per-conversation ranking (exact scan)", recall.RankQuery{Tenant: tenant, Namespace: ns, MemoryID: "conv",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: q.vec, Model: b.model, Limit: limit, Now: now}); err != nil {
			return err
		}
	}
	if len(corpusQ) > 0 {
		q := corpusQ[0]
		fmt.Printf("(corpus search settings, local to its batch: enable_sort off, jit off, hnsw.iterative_scan off (relaxed_order on a second pass only when the filter leaves the first short), hnsw.ef_search %d)\n", pg.AnnEfSearch(limit))
		if err := show("corpus ranking (HNSW, one pass)", recall.RankQuery{Tenant: tenant, Namespace: core.CorpusNamespace, MemoryID: "docs",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: q.vec, Model: b.model, Limit: limit, Now: now}); err != nil {
			return err
		}
	}
	return nil
}

// parallel runs f(0..n-1) on w goroutines and returns the first error.
func parallel(ctx context.Context, w, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(w, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(ctx, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

func spread(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if s[0] == s[len(s)-1] {
		return fmt.Sprint(s[0])
	}
	return fmt.Sprintf("%d–%d (median %d)", s[0], s[len(s)-1], s[len(s)/2])
}

func runeLen(s string) int { return len([]rune(s)) }

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func since(t time.Time) time.Duration { return round(time.Since(t)) }

var vectorLiteral = regexp.MustCompile(`'\[[-0-9.,e]+\]'`)

// breakdown says where a recall's time goes: the real handler called in-process (everything
// but the network), the service in-process (no HTTP; it writes the receipt after the recall,
// where the handler overlaps it with encoding the answer), its receipt (SaveRecall), the
// query's embedding, and the store's ranking (RankEntries).
func (b *bench) breakdown(ctx context.Context, qs []query, memory string, where func(query) (conv, ns string), kind core.EntryKind) error {
	qs = qs[:min(len(qs), 200)]
	var receipt []int
	handler := func(ctx context.Context, q query, _ *sideResult) (time.Duration, error) {
		conv, _ := where(q)
		body, _ := json.Marshal(map[string]any{"query": q.text, "memories": []string{memory}})
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/conversations/"+url.PathEscape(conv)+"/recall", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		t0 := time.Now()
		b.server.Handler.ServeHTTP(rec, req)
		d := time.Since(t0)
		if rec.Code != http.StatusOK {
			return d, fmt.Errorf("in-process recall: %d %s", rec.Code, rec.Body)
		}
		return d, nil
	}
	recallOnce := func(ctx context.Context, q query) (recall.RecallResult, time.Duration, error) {
		conv, _ := where(q)
		t0 := time.Now()
		res, err := b.svc.Recall.Recall(ctx, recall.RecallParams{Identity: core.Identity{Tenant: tenant, ConversationID: conv}, Query: q.text, Memories: []string{memory}})
		return res, time.Since(t0), err
	}
	service := func(ctx context.Context, q query, _ *sideResult) (time.Duration, error) {
		_, d, err := recallOnce(ctx, q)
		return d, err
	}
	save := func(ctx context.Context, q query, _ *sideResult) (time.Duration, error) {
		res, _, err := recallOnce(ctx, q) // a receipt of its own to store again, untimed
		if err != nil {
			return 0, err
		}
		res.RecallID += "x"
		encoded, _ := json.Marshal(res)
		receipt = append(receipt, len(encoded))
		t0 := time.Now()
		err = b.store.SaveRecall(ctx, tenant, res)
		return time.Since(t0), err
	}
	embedQuery := func(ctx context.Context, q query, _ *sideResult) (time.Duration, error) {
		t0 := time.Now()
		_, err := b.hash.Embed(ctx, []string{q.text})
		return time.Since(t0), err
	}
	rank := func(ctx context.Context, q query, _ *sideResult) (time.Duration, error) {
		_, ns := where(q)
		t0 := time.Now()
		_, err := b.store.RankEntries(ctx, recall.RankQuery{Tenant: tenant, Namespace: ns, MemoryID: memory, Kinds: []core.EntryKind{kind},
			Vector: q.vec, Model: b.model, Limit: limit, Now: time.Now().UTC().Truncate(time.Millisecond),
			Ranking: b.ranking(), Alpha: b.alpha(), Terms: core.QueryTerms(q.text)})
		return time.Since(t0), err
	}
	steps := []string{"handler in-process (ServeHTTP, no network)", "service in-process (svc.Recall)", "  SaveRecall (receipt INSERT)", "  embed query (hash)", "  RankEntries (one pipelined round trip)"}
	rs, err := b.measure(ctx, qs, handler, service, save, embedQuery, rank)
	if err != nil {
		return err
	}
	fmt.Printf("where the time goes (%d queries, each step on each, interleaved as the sides above; p50 / p99 ms; receipts %s bytes):\n", len(qs), spread(receipt))
	for i, name := range steps {
		if rs[i].errs > 0 {
			return fmt.Errorf("%s: %s", strings.TrimSpace(name), rs[i].sample)
		}
		s := slices.Clone(rs[i].lat)
		slices.Sort(s)
		fmt.Printf("  %-40s %7.3f / %7.3f\n", name, benchkit.Ms(benchkit.Percentile(s, 0.5)), benchkit.Ms(benchkit.Percentile(s, 0.99)))
	}
	return nil
}

// efSweep runs the corpus HNSW search alone (pg.Store.SearchCorpus: one pipelined round
// trip, no exact fallback) at several hnsw.ef_search values, for tuning: recall@10 against the
// exact answers, and latency.
func (b *bench) efSweep(ctx context.Context, qs []query, set *vectorSet, truth [][]hit) error {
	n := min(len(qs), len(truth), 300)
	fmt.Printf("hnsw.ef_search sweep (the search alone, %d queries, LIMIT %d; the store uses %d):\n", n, limit, pg.AnnEfSearch(limit))
	fmt.Printf("  %9s %10s %8s %8s %6s\n", "ef_search", "recall@10", "p50 ms", "p99 ms", "short")
	for _, ef := range []int{100, 150, 200, 250, 300} {
		var lat []time.Duration
		hits, want, short := 0, 0, 0
		for i := range n {
			q := qs[i]
			t0 := time.Now()
			res, err := b.store.SearchCorpus(ctx, recall.RankQuery{Tenant: tenant, Namespace: core.CorpusNamespace, MemoryID: "docs",
				Kinds: []core.EntryKind{core.KindDocument}, Vector: q.vec, Model: b.model, Limit: limit, Now: time.Now().UTC()}, ef)
			lat = append(lat, time.Since(t0))
			if err != nil {
				return err
			}
			ids := make([]string, len(res.Ranked))
			for j, sc := range res.Ranked {
				ids[j] = sc.Entry.ID
			}
			if len(ids) < topK {
				short++
			}
			h, w := recallAt(ids, truth[i], topK, set, q.vec)
			hits, want = hits+h, want+w
		}
		slices.Sort(lat)
		fmt.Printf("  %9d %10.4f %8.3f %8.3f %6d\n", ef, float64(hits)/float64(max(1, want)), benchkit.Ms(benchkit.Percentile(lat, 0.5)), benchkit.Ms(benchkit.Percentile(lat, 0.99)), short)
	}
	return nil
}
