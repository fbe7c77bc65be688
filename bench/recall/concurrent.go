package main

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/bench/internal/debtext"
)

// The concurrent mode (-concurrent): closed-loop cells of -clients clients recalling in
// conversations of 100 and of 1,000 messages, the service over HTTP (each client its own
// keep-alive connection) against the direct-SQL ranking (store.RankEntries with the query the
// service builds, already embedded), the two cells alternating within each repetition so that
// both see the same minutes of the machine. -cpuprofile profiles the service's cells of the
// smallest conversations (service and load generator share this process: the profile's
// benchkit.Conn and JSON decoding are the load generator's).

// concCell is one closed-loop cell's outcome.
type concCell struct {
	n        int
	tput     float64 // recalls/s
	p50, p99 time.Duration
	errs     int
	sample   string
}

// concurrentCell runs clients closed-loop clients for d, each recalling random queries in
// random conversations of convs, on the service (service true) or the direct SQL.
func (b *bench) concurrentCell(ctx context.Context, service bool, convs []benchConv, qs []query, memory string, clients int, d time.Duration) (concCell, error) {
	type result struct {
		lat    []time.Duration
		errs   int
		sample string
	}
	results := make([]result, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(c), uint64(start.UnixNano())))
			res := &results[c]
			var conn *benchkit.Conn
			if service {
				var err error
				if conn, err = b.server.Dial(); err != nil {
					res.errs, res.sample = 1, err.Error()
					return
				}
				defer func() { _ = conn.Close() }()
			}
			for ctx.Err() == nil && time.Now().Before(deadline) {
				q := qs[rng.IntN(len(qs))]
				cv := convs[rng.IntN(len(convs))]
				t0 := time.Now()
				var err error
				if service {
					body, _ := json.Marshal(map[string]any{"query": q.text, "memories": []string{memory}})
					var raw []byte
					if raw, err = conn.Post("/v1/conversations/"+url.PathEscape(cv.id)+"/recall", body, 200); err == nil {
						var out recallResponse
						if err = json.Unmarshal(raw, &out); err == nil && len(out.Memories) != 1 {
							err = fmt.Errorf("want one memory in the answer, got %d", len(out.Memories))
						}
					}
				} else {
					_, err = b.store.RankEntries(ctx, b.rankQuery(q, cv.ns, memory))
				}
				res.lat = append(res.lat, time.Since(t0))
				if err != nil {
					res.errs++
					if res.sample == "" {
						res.sample = err.Error()
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		return concCell{}, ctx.Err()
	}
	var all []time.Duration
	var out concCell
	for _, r := range results {
		all = append(all, r.lat...)
		out.errs += r.errs
		if out.sample == "" {
			out.sample = r.sample
		}
	}
	out.n = len(all)
	out.tput = float64(len(all)) / elapsed.Seconds()
	out.p50, out.p99 = latencies(all)
	return out, nil
}

// concurrentCells is the concurrent mode (see the top of this file).
func (b *bench) concurrentCells(ctx context.Context, tc debtext.TextCorpus) error {
	cfg := b.cfg
	mem, err := b.defineMemory(ctx, `{"id":"conv","type":"semantic","strategy":{"kind":"topK","topK":10,"threshold":-1,"ranking":"`+cfg.ranking+`"}}`)
	if err != nil {
		return err
	}
	type group struct {
		messages int
		convs    []benchConv
		qs       []query
	}
	groups := []*group{{messages: 100}, {messages: 1000}}
	for i, g := range groups {
		// As many conversations as clients for the long ones, four times as many for the short.
		n := cfg.clients * 4
		if g.messages >= 1000 {
			n = cfg.clients
		}
		t := time.Now()
		if g.convs, err = b.writeConversations(ctx, tc, mem, fmt.Sprintf("conc%d", i), n, g.messages); err != nil {
			return err
		}
		if g.qs, err = b.queriesOver(ctx, tc, g.convs, cfg.queries); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  wrote %d conversations × %d messages in %s\n", n, g.messages, since(t))
	}
	if err := b.settle(ctx); err != nil {
		return err
	}
	fmt.Printf("== concurrent recall: %d clients closed-loop, ranking %s, cells of %s, %d repetition(s), service and direct SQL alternating\n",
		cfg.clients, cfg.ranking, cfg.cellDuration, cfg.reps)
	type outcome struct{ service, direct []concCell }
	results := make([]outcome, len(groups))
	var profiled time.Duration
	for i, g := range groups {
		// Warm-up: both sides, not reported.
		for _, svc := range []bool{true, false} {
			if _, err := b.concurrentCell(ctx, svc, g.convs, g.qs, mem.ID, cfg.clients, 2*time.Second); err != nil {
				return err
			}
		}
		for rep := range cfg.reps {
			order := []bool{true, false}
			if rep%2 == 1 {
				order = []bool{false, true}
			}
			for _, svc := range order {
				stop := func() {}
				if svc && i == 0 {
					if stop, err = benchkit.StartCPUProfile(cfg.profile); err != nil {
						return err
					}
				}
				t := time.Now()
				c, err := b.concurrentCell(ctx, svc, g.convs, g.qs, mem.ID, cfg.clients, cfg.cellDuration)
				if svc && i == 0 {
					profiled += time.Since(t)
				}
				stop()
				if err != nil {
					return err
				}
				if c.errs > 0 {
					return fmt.Errorf("%d errors in a cell (%s)", c.errs, c.sample)
				}
				if svc {
					results[i].service = append(results[i].service, c)
				} else {
					results[i].direct = append(results[i].direct, c)
				}
				fmt.Fprintf(os.Stderr, "  %d messages, rep %d, service=%v: %.0f recalls/s, p50 %.2f ms, p99 %.2f ms\n", g.messages, rep+1, svc, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99))
			}
		}
	}
	// Medians by throughput; the per-repetition ratio too (each pair ran minutes apart at most).
	med := func(cs []concCell) concCell {
		s := slices.Clone(cs)
		slices.SortFunc(s, func(a, b concCell) int {
			switch {
			case a.tput < b.tput:
				return -1
			case a.tput > b.tput:
				return 1
			}
			return 0
		})
		return s[len(s)/2]
	}
	fmt.Printf("\n%9s %-11s %10s %9s %9s %9s\n", "messages", "side", "recalls/s", "p50 ms", "p99 ms", "svc/SQL")
	var ratio100 float64
	for i, g := range groups {
		s, d := med(results[i].service), med(results[i].direct)
		var ratios []float64
		for r := range results[i].service {
			ratios = append(ratios, results[i].service[r].tput/results[i].direct[r].tput)
		}
		slices.Sort(ratios)
		rt := ratios[len(ratios)/2]
		if i == 0 {
			ratio100 = rt
		}
		fmt.Printf("%9d %-11s %10.0f %9.2f %9.2f %8.2f×\n", g.messages, "service", s.tput, benchkit.Ms(s.p50), benchkit.Ms(s.p99), rt)
		fmt.Printf("%9d %-11s %10.0f %9.2f %9.2f\n", g.messages, "direct SQL", d.tput, benchkit.Ms(d.p50), benchkit.Ms(d.p99))
	}
	fmt.Println("(svc/SQL: the median over repetitions of the service's throughput over the direct SQL's in the same repetition)")
	if cfg.profile != "" {
		fmt.Printf("CPU profile of the %d-message service cells (%s): %s\n", groups[0].messages, round(profiled), cfg.profile)
	}
	b.check(fmt.Sprintf("service throughput at %d messages, %d clients ≥ 0.6× direct SQL", groups[0].messages, cfg.clients), ratio100 >= 0.6, "%.2f×", ratio100)
	return nil
}
