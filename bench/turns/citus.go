package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/pg"
)

// citusCost (-citus) measures what a Citus coordinator's routing costs a turn write: the same
// service, in this process, on the single Postgres of -db ("single") and on a fresh database
// of the Citus cluster whose coordinator -citus names ("citus", every tenant table distributed
// by the migrations), each with its own store and conversations. For each scenario (distinct:
// -convs conversations round-robin; busy: one conversation) and client count, -reps pairs of
// cells whose order alternates; it prints every pair, each side's medians (throughput, p50,
// p99) and the citus/single ratios: the ratio of the medians and the median of the pairs'
// ratios. Every cell's conversations are checked to hold turns 1..N exactly once, on their side.
func (b *bench) citusCost(ctx context.Context, hash *embedder.Hash) error {
	dsn, drop, err := benchkit.CreateCitusDatabase(ctx, b.cfg.citusDSN, "footprint_bench_", "turns")
	if err != nil {
		return err
	}
	defer drop()
	store, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		return fmt.Errorf("open the store on Citus: %w", err)
	}
	defer store.Close()
	if !store.Distributed() {
		return fmt.Errorf("-citus: the store did not find its tables distributed in %s", benchkit.DBName(dsn))
	}
	if b.citusPool, err = pgxpool.New(ctx, dsn); err != nil {
		return err
	}
	defer b.citusPool.Close()
	if b.citus, err = benchkit.StartServer(store, hash, 4*slices.Max(b.cfg.clients)); err != nil {
		return err
	}
	defer b.citus.Close()
	for _, def := range []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`,
	} {
		if err := b.citus.DefineMemory(def); err != nil {
			return err
		}
	}
	var workers, shards int
	if err := b.citusPool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary'),
		(SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'entries'::regclass)`).Scan(&workers, &shards); err != nil {
		return err
	}
	fmt.Printf("citus cost: single Postgres %s against Citus %s (%d workers, %d shards per table), %s per cell, %d interleaved pair(s) per cell, warm-up %s per side; GOMAXPROCS %d\n\n",
		benchkit.DBName(b.cfg.adminDSN), benchkit.DBName(dsn), workers, shards, b.cfg.duration, b.cfg.reps, b.cfg.warmup, runtime.GOMAXPROCS(0))
	for _, side := range []string{"single", "citus"} {
		if _, err := b.closedLoop(ctx, "warmup", side, 16, b.cfg.convs, b.cfg.warmup, false); err != nil {
			return err
		}
	}
	type row struct {
		scenario       string
		clients        int
		single, citus  cell
		pairRatio      float64
		pairP50s       float64
		integrityFails int
	}
	var rows []row
	fmt.Printf("%-9s %7s %4s  %-7s %9s %8s %8s %7s  %s\n", "scenario", "clients", "pair", "side", "turns/s", "p50 ms", "p99 ms", "errors", "integrity")
	for _, sc := range []struct {
		name  string
		convs int
	}{{"distinct", b.cfg.convs}, {"busy", 1}} {
		for _, n := range b.cfg.clients {
			var single, citus []cell
			var ratios, p50s []float64
			for r := range b.cfg.reps {
				order := []string{"single", "citus"}
				if r%2 == 1 {
					order = []string{"citus", "single"}
				}
				got := map[string]cell{}
				for _, side := range order {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					c, err := b.closedLoop(ctx, sc.name, side, n, sc.convs, b.cfg.duration, false)
					if err != nil {
						return err
					}
					got[side] = c
					fmt.Printf("%-9s %7d %4d  %-7s %9.0f %8.2f %8.2f %7d  %s\n", sc.name, n, r+1, side, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99), c.errors, c.integrity)
				}
				single, citus = append(single, got["single"]), append(citus, got["citus"])
				ratios = append(ratios, got["citus"].tput/got["single"].tput)
				p50s = append(p50s, float64(got["citus"].p50)/float64(got["single"].p50))
			}
			slices.Sort(ratios)
			slices.Sort(p50s)
			rw := row{scenario: sc.name, clients: n, single: medianCell(single), citus: medianCell(citus),
				pairRatio: ratios[len(ratios)/2], pairP50s: p50s[len(p50s)/2]}
			for _, c := range append(single, citus...) {
				if c.integrity != "ok" || c.errors > 0 {
					rw.integrityFails++
				}
			}
			rows = append(rows, rw)
		}
	}
	fmt.Println("\nmedians per side (each figure its own median over the pairs) and citus/single:")
	fmt.Printf("%-9s %7s  %15s %15s  %15s %15s  %8s %8s  %s\n", "scenario", "clients", "single turns/s", "citus turns/s",
		"single p50/p99", "citus p50/p99", "tput ×", "p50 ×", "median pair ratio (tput, p50)")
	failed := false
	for _, r := range rows {
		fmt.Printf("%-9s %7d  %15.0f %15.0f  %6.2f / %6.2f %6.2f / %6.2f  %7.2f× %7.2f×  %.2f×, %.2f×\n", r.scenario, r.clients,
			r.single.tput, r.citus.tput, benchkit.Ms(r.single.p50), benchkit.Ms(r.single.p99), benchkit.Ms(r.citus.p50), benchkit.Ms(r.citus.p99),
			r.citus.tput/r.single.tput, float64(r.citus.p50)/float64(r.single.p50), r.pairRatio, r.pairP50s)
		if r.integrityFails > 0 {
			failed = true
		}
	}
	fmt.Println("(p50/p99 in ms; the coordinator and both workers share this machine's cores with the load generator and the service)")
	if failed {
		fmt.Println("\nintegrity: FAILED (see the cells above)")
		return fmt.Errorf("errors or integrity failures in %d cell(s)", len(rows))
	}
	fmt.Println("\nintegrity: ok on both sides (every conversation holds turns 1..N exactly once, N = its successful writes)")
	return nil
}

// medianCell is the median of each of a side's figures on its own.
func medianCell(cs []cell) cell {
	var m cell
	tputs := make([]float64, len(cs))
	p50s := make([]time.Duration, len(cs))
	p99s := make([]time.Duration, len(cs))
	for i, c := range cs {
		tputs[i], p50s[i], p99s[i] = c.tput, c.p50, c.p99
		m.errors += c.errors
	}
	slices.Sort(tputs)
	slices.Sort(p50s)
	slices.Sort(p99s)
	m.tput, m.p50, m.p99 = tputs[len(tputs)/2], p50s[len(p50s)/2], p99s[len(p99s)/2]
	return m
}
