package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/pg"
)

// tracingCost (-tracing) measures what tracing costs a turn write: the service as it runs with
// OTEL_TRACES_EXPORTER unset (no tracing: "service") against the same service traced as
// cmd/server traces it with OTEL_TRACES_EXPORTER=otlp at sampling 1.0 ("traced": every request,
// every statement through otelpgx, the group commits; exported by the batch span processor over
// OTLP/HTTP to an in-process receiver that discards what it reads), on the same database, each
// on its own store and conversations. Cells are distinct@16, run in pairs whose order alternates,
// -reps pairs; it prints every pair, the medians and the ratio.
func (b *bench) tracingCost(ctx context.Context, dsn string, hash *embedder.Hash) error {
	tracing, err := benchkit.StartTracing(ctx)
	if err != nil {
		return err
	}
	defer tracing.Close(context.WithoutCancel(ctx))
	tracedStore, err := pg.Open(ctx, dsn, nil, pg.WithTracerProvider(tracing.Provider))
	if err != nil {
		return err
	}
	defer tracedStore.Close()
	if b.traced, err = benchkit.StartTracedServer(tracedStore, hash, 4*16, tracing.Provider); err != nil {
		return err
	}
	defer b.traced.Close()

	const clients = 16
	fmt.Printf("tracing cost: distinct@%d (%d conversations), %s per cell, %d interleaved pair(s), warm-up %s per side; GOMAXPROCS %d\n",
		clients, b.cfg.convs, b.cfg.duration, b.cfg.reps, b.cfg.warmup, runtime.GOMAXPROCS(0))
	for _, side := range []string{"service", "traced"} {
		if _, err := b.closedLoop(ctx, "warmup", side, clients, b.cfg.convs, b.cfg.warmup, false); err != nil {
			return err
		}
	}
	var off, on []cell
	fmt.Printf("%4s  %-8s %9s %8s %8s %7s %7s %11s  %s\n", "pair", "side", "turns/s", "p50 ms", "p99 ms", "cpu go", "cpu pg", "go µs/turn", "integrity")
	for r := range b.cfg.reps {
		order := []string{"service", "traced"}
		if r%2 == 1 {
			order = []string{"traced", "service"}
		}
		for _, side := range order {
			prof := side == "traced" && r == 0 && b.cfg.cpuProfile != "" // -cpuprofile: the first traced cell
			c, err := b.closedLoop(ctx, "distinct", side, clients, b.cfg.convs, b.cfg.duration, prof)
			if err != nil {
				return err
			}
			if side == "service" {
				off = append(off, c)
			} else {
				on = append(on, c)
			}
			fmt.Printf("%4d  %-8s %9.0f %8.2f %8.2f %6.0f%% %6.0f%% %11.0f  %s\n", r+1, side, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99), c.cpuSelf, c.cpuOther, perTurn(c), c.integrity)
			if c.errors > 0 || c.integrity != "ok" {
				return fmt.Errorf("%s: %d errors, integrity %s", side, c.errors, c.integrity)
			}
		}
	}
	mOff, mOn := medianOf(off), medianOf(on)
	fmt.Printf("\nmedians: untraced %.0f turns/s (p50 %.2f ms), traced %.0f turns/s (p50 %.2f ms): traced/untraced %.3f× throughput, %.3f× p50\n",
		mOff.tput, benchkit.Ms(mOff.p50), mOn.tput, benchkit.Ms(mOn.p50), mOn.tput/mOff.tput, float64(mOn.p50)/float64(mOff.p50))
	var ratios, cpu []float64
	for i := range off {
		ratios = append(ratios, on[i].tput/off[i].tput)
		cpu = append(cpu, perTurn(on[i])/perTurn(off[i]))
	}
	slices.Sort(ratios)
	slices.Sort(cpu)
	fmt.Printf("per-pair CPU of this process per turn (traced/untraced), sorted: %.3f; median %.3f\n", cpu, cpu[len(cpu)/2])
	fmt.Printf("per-pair throughput ratios (traced/untraced), sorted: %.3f; median %.3f\n", ratios, ratios[len(ratios)/2])
	verdict := "MISS"
	if ratios[len(ratios)/2] >= 0.95 {
		verdict = "PASS"
	}
	fmt.Printf("%s  traced throughput within 5%% of untraced (median pair ratio ≥ 0.95)\n", verdict)
	// What was exported, after a flush.
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = tracing.Provider.ForceFlush(flush)
	fmt.Fprintf(os.Stdout, "exported: %s\n", tracing.Received())
	return nil
}

// perTurn is the CPU this process (load generator, HTTP, service, pgx, tracing) spent per turn,
// in µs: steadier than throughput on a machine that others share.
func perTurn(c cell) float64 { return c.cpuSelf / 100 * 1e6 / c.tput }

// medianOf is the median of each figure on its own.
func medianOf(cs []cell) cell {
	tputs := make([]float64, len(cs))
	p50s := make([]time.Duration, len(cs))
	for i, c := range cs {
		tputs[i], p50s[i] = c.tput, c.p50
	}
	slices.Sort(tputs)
	slices.Sort(p50s)
	return cell{tput: tputs[len(tputs)/2], p50: p50s[len(p50s)/2]}
}
