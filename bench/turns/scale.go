package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/footprint/footprint/bench/internal/benchkit"
)

// scaleCurve measures distinct@16 turn writes, service and baseline, as the entries table grows
// to each size (other tenants' rows, benchkit.FillEntries): the cost of a turn write must not
// grow with the data it does not touch. Sizes are row counts, ascending; the benchmark's own
// conversations are added as it writes.
func (b *bench) scaleCurve(ctx context.Context, sizes []int64) error {
	type point struct {
		rows              int64
		service, baseline cell
	}
	var curve []point
	fmt.Printf("scale: distinct@16, %d conversations, %s per cell, %d rep(s) (median by throughput)\n", b.cfg.convs, b.cfg.duration, b.cfg.reps)
	for _, size := range sizes {
		t0 := time.Now()
		rows, err := benchkit.FillEntries(ctx, b.pool, size)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  filled to %d rows in %s\n", rows, time.Since(t0).Round(time.Second))
		for _, side := range []string{"service", "baseline"} {
			if _, err := b.closedLoop(ctx, "warmup", side, 16, b.cfg.convs, b.cfg.warmup, false); err != nil {
				return err
			}
		}
		p := point{rows: rows}
		for _, side := range []string{"service", "baseline"} {
			var reps []cell
			for range b.cfg.reps {
				c, err := b.closedLoop(ctx, "distinct", side, 16, b.cfg.convs, b.cfg.duration, false)
				if err != nil {
					return err
				}
				reps = append(reps, c)
			}
			if side == "service" {
				p.service = median(reps)
			} else {
				p.baseline = median(reps)
			}
		}
		curve = append(curve, p)
		fmt.Fprintf(os.Stderr, "  %d rows: service %.0f turns/s, baseline %.0f\n", rows, p.service.tput, p.baseline.tput)
	}
	fmt.Printf("%12s %12s %9s %9s %12s %9s %9s\n", "rows", "svc turns/s", "svc p50", "svc p99", "base turns/s", "base p50", "svc/base")
	for _, p := range curve {
		fmt.Printf("%12d %12.0f %8.2fms %8.2fms %12.0f %8.2fms %8.2f×\n", p.rows, p.service.tput, benchkit.Ms(p.service.p50),
			benchkit.Ms(p.service.p99), p.baseline.tput, benchkit.Ms(p.baseline.p50), p.service.tput/max(p.baseline.tput, 1))
	}
	if len(curve) > 1 {
		first, last := curve[0], curve[len(curve)-1]
		ratio := first.service.tput / max(last.service.tput, 1)
		verdict := "MISS"
		if ratio <= 1.3 {
			verdict = "PASS"
		}
		fmt.Printf("\n  %s turns/s at %d rows within 1.3× of %d rows: %.2f× (%.0f → %.0f turns/s; baseline %.2f×)\n", verdict,
			last.rows, first.rows, ratio, first.service.tput, last.service.tput, first.baseline.tput/max(last.baseline.tput, 1))
	}
	return nil
}
