package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/pg"
)

// citusReps is how many times -citus measures the sides over the queries.
const citusReps = 3

// citusSide is the same service on a fresh database of a Citus cluster (-citus), which the
// per-conversation regime loads with the same conversations as the single Postgres.
type citusSide struct {
	store  *pg.Store
	pool   *pgxpool.Pool
	server *benchkit.Server
	conn   *benchkit.Conn
	name   string // the database
}

// startCitus creates the Citus database (every tenant table distributed by the migrations) and
// serves the service on it a second time, in this process.
func (b *bench) startCitus(ctx context.Context, hash *embedder.Hash) (func(), error) {
	dsn, drop, err := benchkit.CreateCitusDatabase(ctx, b.cfg.citusDSN, "footprint_bench_", "recall")
	if err != nil {
		return nil, err
	}
	c := &citusSide{name: benchkit.DBName(dsn)}
	stop := func() {
		if c.conn != nil {
			_ = c.conn.Close()
		}
		if c.server != nil {
			c.server.Close()
		}
		if c.store != nil {
			c.store.Close()
		}
		if c.pool != nil {
			c.pool.Close()
		}
		if !b.cfg.keep {
			drop()
		}
	}
	if c.store, err = pg.Open(ctx, dsn, nil); err != nil {
		stop()
		return nil, fmt.Errorf("open the store on Citus: %w", err)
	}
	if !c.store.Distributed() {
		stop()
		return nil, fmt.Errorf("-citus: the store did not find its tables distributed in %s", c.name)
	}
	if c.pool, err = pgxpool.New(ctx, dsn); err != nil {
		stop()
		return nil, err
	}
	if c.server, err = benchkit.StartServer(c.store, hash, 8); err == nil {
		c.conn, err = c.server.Dial()
	}
	if err != nil {
		stop()
		return nil, err
	}
	b.citus = c
	return stop, nil
}

// citusCost measures per-conversation recall on the single Postgres and on Citus, each through
// the service (HTTP) and through the store's ranking directly, the four sides interleaved as
// measure interleaves them (the same query 50 queries apart), citusReps times with the order
// reversed every other run. It prints each run's p50 and p99 per side, the medians and the
// citus/single ratios; the direct sides say what the coordinator's routing adds to the ranking
// statement alone. Both services must return the same top ten for every query.
func (b *bench) citusCost(ctx context.Context, qs []query, conversation, namespace func(query) string, memory string, setOf func(query) *vectorSet) error {
	var workers, shards int
	if err := b.citus.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary'),
		(SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'entries'::regclass)`).Scan(&workers, &shards); err != nil {
		return err
	}
	fmt.Printf("\nCitus cost, per-conversation recall: single Postgres against Citus %s (%d workers, %d shards per table); %d queries per side, %d runs, four sides interleaved:\n",
		b.citus.name, workers, shards, len(qs), citusReps)
	names := []string{"service single", "service citus", "direct single", "direct citus"}
	fmt.Printf("  %3s", "run")
	for _, n := range names {
		fmt.Printf(" %22s", n+" p50/p99")
	}
	fmt.Printf("  %9s %9s\n", "svc ×", "direct ×")
	p := func(s *sideResult, q float64) time.Duration {
		l := slices.Clone(s.lat)
		slices.Sort(l)
		return benchkit.Percentile(l, q)
	}
	per := make([][]time.Duration, 2*len(names)) // p50s then p99s per side
	var svcRatios, directRatios []float64
	for r := range citusReps {
		sides := []sideFunc{
			b.serviceSideOn(b.conn, conversation, memory),
			b.serviceSideOn(b.citus.conn, conversation, memory),
			b.storeSideOn(b.store, namespace, memory, core.KindMessage, setOf),
			b.storeSideOn(b.citus.store, namespace, memory, core.KindMessage, setOf),
		}
		order := []int{0, 1, 2, 3}
		if r%2 == 1 {
			order = []int{1, 0, 3, 2}
		}
		run := make([]sideFunc, len(order))
		for i, o := range order {
			run[i] = sides[o]
		}
		res, err := b.measure(ctx, qs, run...)
		if err != nil {
			return err
		}
		got := make([]*sideResult, len(order))
		for i, o := range order {
			got[o] = res[i]
		}
		fmt.Printf("  %3d", r+1)
		for i, s := range got {
			if s.errs > 0 {
				return fmt.Errorf("citus cost: %s: %d errors (%s)", names[i], s.errs, s.sample)
			}
			p50, p99 := p(s, 0.5), p(s, 0.99)
			per[i], per[len(names)+i] = append(per[i], p50), append(per[len(names)+i], p99)
			fmt.Printf(" %10.3f / %9.3f", benchkit.Ms(p50), benchkit.Ms(p99))
		}
		svc, direct := float64(p(got[1], 0.5))/float64(p(got[0], 0.5)), float64(p(got[3], 0.5))/float64(p(got[2], 0.5))
		svcRatios, directRatios = append(svcRatios, svc), append(directRatios, direct)
		fmt.Printf("  %8.2f× %8.2f×\n", svc, direct)
		for i := range got[0].top {
			if i < len(got[1].top) && !slices.Equal(got[0].top[i], got[1].top[i]) {
				return fmt.Errorf("citus cost: query %d: the top ten differ between single Postgres and Citus: %v against %v", i, got[0].top[i], got[1].top[i])
			}
		}
	}
	med := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	medf := func(f []float64) float64 {
		f = slices.Clone(f)
		slices.Sort(f)
		return f[len(f)/2]
	}
	fmt.Printf("  med")
	for i := range names {
		fmt.Printf(" %10.3f / %9.3f", benchkit.Ms(med(per[i])), benchkit.Ms(med(per[len(names)+i])))
	}
	fmt.Printf("  %8.2f× %8.2f×  (median of the runs' p50 ratios)\n", medf(svcRatios), medf(directRatios))
	fmt.Printf("  citus − single at the median p50: service %+.3f ms, direct %+.3f ms; the top ten agree on every query\n",
		benchkit.Ms(med(per[1])-med(per[0])), benchkit.Ms(med(per[3])-med(per[2])))
	return nil
}
