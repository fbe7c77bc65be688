package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/pg"
)

// tracingReps is how many times -tracing measures the two sides over the queries.
const tracingReps = 3

// startTraced (-tracing) serves the same service a second time, traced as cmd/server traces it
// with OTEL_TRACES_EXPORTER=otlp at sampling 1.0 (the request, one retrieval span per memory,
// every statement through otelpgx; exported by the batch span processor over OTLP/HTTP to an
// in-process receiver that discards what it reads), on a store of its own over the same
// database.
func (b *bench) startTraced(ctx context.Context, dsn string, hash *embedder.Hash) (func(), error) {
	tracing, err := benchkit.StartTracing(ctx)
	if err != nil {
		return nil, err
	}
	store, err := pg.Open(ctx, dsn, nil, pg.WithTracerProvider(tracing.Provider))
	if err != nil {
		tracing.Close(ctx)
		return nil, err
	}
	srv, err := benchkit.StartTracedServer(store, hash, 8, tracing.Provider)
	if err == nil {
		b.traced, err = srv.Dial()
	}
	stop := func() {
		if b.traced != nil {
			_ = b.traced.Close()
		}
		if srv != nil {
			srv.Close()
		}
		store.Close()
		fmt.Printf("tracing: exported %s\n", tracing.Received())
		tracing.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// tracingCost measures per-conversation recall untraced and traced, interleaved as measure
// interleaves its sides (the same query 50 queries apart), tracingReps times, and prints each
// run's p50, the medians, their ratio and the median per-query (paired) difference.
func (b *bench) tracingCost(ctx context.Context, qs []query, conversation func(query) string, memory string) error {
	fmt.Printf("\ntracing cost, per-conversation recall (%d queries per side, %d runs, sides interleaved; sampling 1.0, OTLP/HTTP to an in-process receiver):\n", len(qs), tracingReps)
	fmt.Printf("  %3s %12s %12s %8s %14s\n", "run", "untraced p50", "traced p50", "ratio", "paired +ms")
	var offs, ons, gaps []time.Duration
	for r := range tracingReps {
		sides := []sideFunc{b.serviceSideOn(b.conn, conversation, memory), b.serviceSideOn(b.traced, conversation, memory)}
		if r%2 == 1 {
			slices.Reverse(sides)
		}
		res, err := b.measure(ctx, qs, sides...)
		if err != nil {
			return err
		}
		off, on := res[0], res[1]
		if r%2 == 1 {
			off, on = res[1], res[0]
		}
		if off.errs+on.errs > 0 {
			return fmt.Errorf("tracing cost: %d errors untraced, %d traced (%s%s)", off.errs, on.errs, off.sample, on.sample)
		}
		p50 := func(s *sideResult) time.Duration {
			l := slices.Clone(s.lat)
			slices.Sort(l)
			return benchkit.Percentile(l, 0.5)
		}
		o, t := p50(off), p50(on)
		gap := pairedGap(on, off)
		offs, ons, gaps = append(offs, o), append(ons, t), append(gaps, gap)
		fmt.Printf("  %3d %12.3f %12.3f %7.3f× %+14.3f\n", r+1, benchkit.Ms(o), benchkit.Ms(t), float64(t)/float64(o), benchkit.Ms(gap))
	}
	med := func(d []time.Duration) time.Duration {
		d = slices.Clone(d)
		slices.Sort(d)
		return d[len(d)/2]
	}
	o, t := med(offs), med(ons)
	ratio := float64(t) / float64(o)
	fmt.Printf("  median: untraced p50 %.3f ms, traced p50 %.3f ms: %.3f× (paired +%.3f ms)\n", benchkit.Ms(o), benchkit.Ms(t), ratio, benchkit.Ms(med(gaps)))
	b.check("per-conversation recall p50 traced within 5% of untraced", ratio <= 1.05, "%.3f× (%.3f vs %.3f ms)", ratio, benchkit.Ms(t), benchkit.Ms(o))
	return nil
}
