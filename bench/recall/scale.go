package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/bench/internal/debtext"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/store/pg"
)

// The scale mode (-scale): per-conversation recall as the entries table grows. The benchmark's
// own conversations are written once; before each size the table is filled with other tenants'
// conversations up to that many rows (benchkit.FillEntries, which vacuums and analyses), and
// at each size four sides run interleaved on the same queries (measure): the service over
// HTTP, the direct-SQL ranking (store.RankEntries), and the ranking statement alone under the
// store's planner settings and under the settings before the plan-cliff fix (force_generic_plan
// alone), each on a pool of its own so that each keeps the generic plan made under its own
// settings. The statistics are fresh at every size, so the last two measure what the fix costs
// where the old plan was right.

// oldPlanSettings is what the store ran before the plan-cliff fix: generic plans, with the
// planner free to pick a sequential or parallel scan.
const oldPlanSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// benchConv is one of the benchmark's own conversations.
type benchConv struct {
	id, ns string
	n      int // messages
}

// writeConversations writes n conversations of m messages each (consecutive real sentences,
// one turn write per conversation, cfg.workers writers), ids prefix-0000…, for memory mem.
func (b *bench) writeConversations(ctx context.Context, tc debtext.TextCorpus, mem core.Memory, prefix string, n, m int) ([]benchConv, error) {
	if m > len(tc.Sentences) {
		return nil, fmt.Errorf("conversations of %d messages need as many sentences; this system has %d", m, len(tc.Sentences))
	}
	convs := make([]benchConv, n)
	texts := make([][]string, n)
	for i := range convs {
		id := fmt.Sprintf("%s-%04d", prefix, i)
		convs[i] = benchConv{id: id, ns: core.Identity{Tenant: tenant, ConversationID: id}.Namespace(), n: m}
		texts[i] = messages(tc.Sentences, b.rng.IntN(len(tc.Sentences)-m+1), m, b.cfg.messageChars)
	}
	err := parallel(ctx, b.cfg.workers, n, func(ctx context.Context, i int) error {
		c := convs[i]
		vecs, err := b.hash.Embed(ctx, texts[i])
		if err != nil {
			return err
		}
		now := time.Now().UTC().Truncate(time.Microsecond)
		entries := make([]core.Entry, 0, m)
		for j, text := range texts[i] {
			turn, idx := j/2+1, j%2
			role := "user"
			if idx == 1 {
				role = "assistant"
			}
			value, _ := json.Marshal(core.Message{Role: role, Content: text})
			entries = append(entries, core.Entry{Tenant: tenant, MemoryID: mem.ID, Namespace: c.ns, ID: fmt.Sprintf("msg-%d-%d", turn, idx),
				Kind: core.KindMessage, Turn: turn, Index: idx, Value: value, Metadata: json.RawMessage(`{}`), Version: 1,
				CreatedAt: now, UpdatedAt: now, LastAccessedAt: now, Tier: mem.Tier, SourceTurn: turn,
				Embedding: vecs[j], EmbeddingModel: b.model, Lexical: core.LexicalOf(text)})
		}
		fps := []core.Fingerprint{{MemoryID: mem.ID, Model: b.model, Dims: dims}}
		_, err = b.store.WriteTurn(ctx, turns.TurnWrite{Tenant: tenant, Namespace: c.ns, Now: now,
			Scope:               turns.TurnScope{MemoryIDs: []string{mem.ID}, Kinds: turns.CountedKinds(true, false)},
			FingerprintMemories: []string{mem.ID},
			Decide:              turns.Decider(1, fps, func(int) ([]core.Entry, error) { return entries, nil })})
		if err != nil {
			return fmt.Errorf("write conversation %s: %w", c.id, err)
		}
		return nil
	})
	return convs, err
}

// queriesOver is k queries, each a held-out sentence in one of convs (query.conv indexes
// convs), embedded.
func (b *bench) queriesOver(ctx context.Context, tc debtext.TextCorpus, convs []benchConv, k int) ([]query, error) {
	qs := make([]query, k)
	for i := range qs {
		qs[i] = query{conv: b.rng.IntN(len(convs)), text: tc.Queries[b.rng.IntN(len(tc.Queries))]}
	}
	return qs, b.embedQueries(ctx, qs)
}

// rankQuery is the RankQuery the service builds for q in conversation namespace ns.
func (b *bench) rankQuery(q query, ns, memory string) recall.RankQuery {
	return recall.RankQuery{Tenant: tenant, Namespace: ns, MemoryID: memory, Kinds: []core.EntryKind{core.KindMessage},
		Vector: q.vec, Model: b.model, Limit: limit, Now: time.Now().UTC().Truncate(time.Millisecond),
		Ranking: b.ranking(), Alpha: b.alpha(), Terms: core.QueryTerms(q.text)}
}

// statementSide runs the ranking statement alone (pg.RankStatement) after settings, in one
// pipelined batch on pool, and reads its rows without decoding them.
func (b *bench) statementSide(pool *pgxpool.Pool, settings string, convs []benchConv, memory string) sideFunc {
	return func(ctx context.Context, q query, r *sideResult) (time.Duration, error) {
		sql, args := pg.RankStatement(b.rankQuery(q, convs[q.conv].ns, memory))
		t0 := time.Now()
		batch := &pgx.Batch{}
		batch.Queue(settings)
		batch.Queue(sql, args...)
		br := pool.SendBatch(ctx, batch)
		_, err := br.Exec()
		n := 0
		if err == nil {
			var rows pgx.Rows
			if rows, err = br.Query(); err == nil {
				for rows.Next() {
					n++
				}
				rows.Close()
				err = rows.Err()
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		elapsed := time.Since(t0)
		r.counts = append(r.counts, n)
		return elapsed, err
	}
}

// newPool opens a pool of its own on the benchmark's database (its connections keep their
// own prepared statements and generic plans).
func (b *bench) newPool(ctx context.Context, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(b.pool.Config().ConnString())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = conns
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error { return pgxvec.RegisterTypes(ctx, c) }
	return pgxpool.NewWithConfig(ctx, cfg)
}

// latencies is the p50 and p99 of lat.
func latencies(lat []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(lat)
	slices.Sort(s)
	return benchkit.Percentile(s, 0.5), benchkit.Percentile(s, 0.99)
}

// medianDur is the median of ds.
func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// planNodes is the scan and join lines of an EXPLAIN, trimmed.
func planNodes(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "->"))
		if strings.Contains(t, "Scan") || strings.HasPrefix(t, "Gather") || strings.HasPrefix(t, "Limit") || strings.HasPrefix(t, "Sort  ") ||
			strings.HasPrefix(t, "Execution Time") {
			out = append(out, vectorLiteral.ReplaceAllString(t, "'[…]'"))
		}
	}
	return out
}

// scaleCurve is the scale mode (see the top of this file).
func (b *bench) scaleCurve(ctx context.Context, tc debtext.TextCorpus, sizes []int64) error {
	cfg := b.cfg
	mem, err := b.defineMemory(ctx, `{"id":"conv","type":"semantic","strategy":{"kind":"topK","topK":10,"threshold":-1,"ranking":"`+cfg.ranking+`"}}`)
	if err != nil {
		return err
	}
	// The benchmark's own conversations are at most half the smallest size: the rest of the
	// table is other tenants'.
	n := min(cfg.convs, max(1, int(sizes[0]/2)/cfg.entries))
	t := time.Now()
	convs, err := b.writeConversations(ctx, tc, mem, "bench", n, cfg.entries)
	if err != nil {
		return err
	}
	fmt.Printf("== scale: per-conversation recall, %d conversations × %d messages (ranking %s) written in %s; the table filled with other tenants' conversations of 100 messages to each size\n",
		n, cfg.entries, cfg.ranking, since(t))
	qs, err := b.queriesOver(ctx, tc, convs, cfg.queries)
	if err != nil {
		return err
	}
	newPool, err := b.newPool(ctx, 1)
	if err != nil {
		return err
	}
	defer newPool.Close()
	oldPool, err := b.newPool(ctx, 1)
	if err != nil {
		return err
	}
	defer oldPool.Close()
	empty := newVectorSet(dims, 0)
	sides := []sideFunc{
		b.serviceSide(func(q query) string { return convs[q.conv].id }, mem.ID),
		b.storeSide(func(q query) string { return convs[q.conv].ns }, mem.ID, core.KindMessage, func(query) *vectorSet { return empty }),
		b.statementSide(newPool, pg.GenericPlanSettings, convs, mem.ID),
		b.statementSide(oldPool, oldPlanSettings, convs, mem.ID),
	}
	names := []string{"service", "direct SQL", "statement, plan settings now", "statement, force_generic_plan alone"}
	type point struct {
		rows int64
		p50  [4]time.Duration // median over repetitions, per side
		p99  [4]time.Duration
		plan []string
	}
	var curve []point
	for _, size := range sizes {
		t := time.Now()
		rows, err := benchkit.FillEntries(ctx, b.pool, size)
		if err != nil {
			return err
		}
		if _, err := b.pool.Exec(ctx, `CHECKPOINT`); err != nil {
			return err
		}
		var tableSize string
		_ = b.pool.QueryRow(ctx, `SELECT pg_size_pretty(pg_total_relation_size('entries'))`).Scan(&tableSize)
		fmt.Fprintf(os.Stderr, "  filled to %d rows (%s with indexes) in %s\n", rows, tableSize, since(t))
		p := point{rows: rows}
		var p50s, p99s [4][]time.Duration
		for rep := range cfg.reps {
			rs, err := b.measure(ctx, qs, sides...)
			if err != nil {
				return err
			}
			for s, r := range rs {
				if r.errs > 0 {
					return fmt.Errorf("%s at %d rows: %d errors (%s)", names[s], rows, r.errs, r.sample)
				}
				a, z := latencies(r.lat)
				p50s[s], p99s[s] = append(p50s[s], a), append(p99s[s], z)
			}
			fmt.Fprintf(os.Stderr, "  %d rows, rep %d: service p50 %.3f ms, direct %.3f, statement now %.3f, old %.3f\n", rows, rep+1,
				benchkit.Ms(p50s[0][rep]), benchkit.Ms(p50s[1][rep]), benchkit.Ms(p50s[2][rep]), benchkit.Ms(p50s[3][rep]))
		}
		for s := range sides {
			p.p50[s], p.p99[s] = medianDur(p50s[s]), medianDur(p99s[s])
		}
		lines, err := b.store.ExplainRank(ctx, b.rankQuery(qs[0], convs[qs[0].conv].ns, mem.ID))
		if err != nil {
			return err
		}
		p.plan = planNodes(lines)
		curve = append(curve, p)
	}

	fmt.Printf("\nper-conversation recall p50 / p99 in ms, median of %d repetition(s) of %d queries per side, the sides interleaved (%d queries apart)\n", cfg.reps, len(qs), pairLag)
	fmt.Printf("%10s %17s %17s %9s %10s %10s %17s %17s %9s\n", "rows", "service", "direct SQL", "svc/SQL", "svc÷first", "SQL÷first", "stmt now", "stmt old", "now/old")
	first := curve[0]
	for _, p := range curve {
		fmt.Printf("%10d %8.3f / %6.3f %8.3f / %6.3f %8.2f× %9.2f× %9.2f× %8.3f / %6.3f %8.3f / %6.3f %8.2f×\n", p.rows,
			benchkit.Ms(p.p50[0]), benchkit.Ms(p.p99[0]), benchkit.Ms(p.p50[1]), benchkit.Ms(p.p99[1]),
			float64(p.p50[0])/float64(p.p50[1]), float64(p.p50[0])/float64(first.p50[0]), float64(p.p50[1])/float64(first.p50[1]),
			benchkit.Ms(p.p50[2]), benchkit.Ms(p.p99[2]), benchkit.Ms(p.p50[3]), benchkit.Ms(p.p99[3]), float64(p.p50[2])/float64(p.p50[3]))
	}
	fmt.Println("\nthe plan of the ranking at each size (pg.Store.ExplainRank: the store's own statement and settings):")
	for _, p := range curve {
		fmt.Printf("  %d rows:\n", p.rows)
		for _, l := range p.plan {
			fmt.Println("    " + l)
		}
	}
	last := curve[len(curve)-1]
	ratio := float64(last.p50[0]) / float64(first.p50[0])
	b.check(fmt.Sprintf("service recall p50 at %d rows within 1.3× of %d rows", last.rows, first.rows), ratio <= 1.3,
		"%.2f× (%.3f → %.3f ms; direct SQL %.2f×)", ratio, benchkit.Ms(first.p50[0]), benchkit.Ms(last.p50[0]), float64(last.p50[1])/float64(first.p50[1]))
	return nil
}

// runMode runs the scale or the concurrent mode instead of the two regimes, and prints the
// targets' summary.
func (b *bench) runMode(ctx context.Context, tc debtext.TextCorpus, start time.Time) error {
	var err error
	if len(b.cfg.scale) > 0 {
		err = b.scaleCurve(ctx, tc, b.cfg.scale)
	} else {
		err = b.concurrentCells(ctx, tc)
	}
	if err != nil {
		return err
	}
	fmt.Println("\nsummary (targets from issue 25):")
	misses := 0
	for _, c := range b.checks {
		verdict := "PASS"
		if !c.ok {
			verdict, misses = "MISS", misses+1
		}
		fmt.Printf("  %s  %-72s %s\n", verdict, c.name, c.detail)
	}
	fmt.Printf("  %d of %d targets met; whole run %s\n", len(b.checks)-misses, len(b.checks), since(start))
	return nil
}
