package main

import (
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

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
	// CPU per recall: this process's (the service, or the direct SQL's caller, and the load
	// generator) and the benchmark database's Postgres backends'.
	selfCPU, pgCPU time.Duration
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
	self0, pg0 := selfCPU(), b.backendCPU(ctx)
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
	self1, pg1 := selfCPU(), b.backendCPU(ctx)
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
	if n := time.Duration(max(len(all), 1)); pg0 != nil && pg1 != nil {
		var d time.Duration
		for pid, t := range pg1 {
			d += t - pg0[pid] // a backend opened during the cell counts from its start
		}
		out.pgCPU, out.selfCPU = d/n, (self1-self0)/n
	}
	return out, nil
}

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU is the CPU time so far of each Postgres backend connected to the benchmark's
// database (by pid, from /proc: Postgres runs on this machine), nil when it cannot be read.
func (b *bench) backendCPU(ctx context.Context) map[int]time.Duration {
	rows, err := b.pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil
		}
		// Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
		_, rest, _ := strings.Cut(string(data), ") ")
		f := strings.Fields(rest)
		if len(f) < 13 {
			return nil
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[int(pid)] = time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
	}
	return out
}

// medCPU is the median over cells of the Go and the Postgres CPU per recall.
func medCPU(cs []concCell) (self, pg time.Duration) {
	var a, b []time.Duration
	for _, c := range cs {
		a, b = append(a, c.selfCPU), append(b, c.pgCPU)
	}
	return medianDur(a), medianDur(b)
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
	alts := &compressionAB{cells: map[string][]concCell{}}
	if cfg.receiptCompression != "" {
		alts.methods = strings.Split(cfg.receiptCompression, ",")
	}
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
					path := cfg.profile
					if path != "" && rep > 0 {
						path = fmt.Sprintf("%s.%d", cfg.profile, rep+1)
					}
					if stop, err = benchkit.StartCPUProfile(path); err != nil {
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
				fmt.Fprintf(os.Stderr, "  %d messages, rep %d, service=%v: %.0f recalls/s, p50 %.2f ms, p99 %.2f ms, CPU per recall: Go %.3f ms, Postgres %.3f ms\n",
					g.messages, rep+1, svc, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99), benchkit.Ms(c.selfCPU), benchkit.Ms(c.pgCPU))
			}
			if i == 0 {
				if err := b.compressionCells(ctx, g.convs, g.qs, mem.ID, rep, alts); err != nil {
					return err
				}
			}
		}
	}
	alts.report()
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
	fmt.Printf("\n%9s %-11s %10s %9s %9s %9s %14s %14s\n", "messages", "side", "recalls/s", "p50 ms", "p99 ms", "svc/SQL", "Go CPU/recall", "PG CPU/recall")
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
		sg, sp := medCPU(results[i].service)
		dg, dp := medCPU(results[i].direct)
		fmt.Printf("%9d %-11s %10.0f %9.2f %9.2f %8.2f× %11.3f ms %11.3f ms\n", g.messages, "service", s.tput, benchkit.Ms(s.p50), benchkit.Ms(s.p99), rt, benchkit.Ms(sg), benchkit.Ms(sp))
		fmt.Printf("%9d %-11s %10.0f %9.2f %9.2f %9s %11.3f ms %11.3f ms\n", g.messages, "direct SQL", d.tput, benchkit.Ms(d.p50), benchkit.Ms(d.p99), "", benchkit.Ms(dg), benchkit.Ms(dp))
	}
	fmt.Println("(svc/SQL: the median over repetitions of the service's throughput over the direct SQL's in the same repetition;")
	fmt.Println(" CPU per recall, medians over repetitions: this process's (service or direct caller, and the load generator's client) and the benchmark database's Postgres backends')")
	if cfg.profile != "" {
		fmt.Printf("CPU profile of the %d-message service cells (%s): %s (first repetition), %s.2… (the others; go tool pprof merges the files it is given)\n",
			groups[0].messages, round(profiled), cfg.profile, cfg.profile)
	}
	// What each recall's receipt is on disk: its JSON body as sent, and as stored (TOAST).
	var receipts int64
	var raw, stored float64
	if err := b.pool.QueryRow(ctx, `SELECT count(*), coalesce(avg(octet_length(body)), 0), coalesce(avg(pg_column_size(body)), 0) FROM recalls`).
		Scan(&receipts, &raw, &stored); err != nil {
		return err
	}
	fmt.Printf("receipts written: %d, body %.0f bytes on average, %.0f stored\n", receipts, raw, stored)
	b.check(fmt.Sprintf("service throughput at %d messages, %d clients ≥ 0.6× direct SQL", groups[0].messages, cfg.clients), ratio100 >= 0.6, "%.2f×", ratio100)
	return nil
}

// compressionAB is -receipt-compression: extra service cells of the 100-message group with the
// receipts' body column set to each TOAST compression method in turn (a receipt's body is
// about 16 KB of JSON, compressed when stored), interleaved with the other cells.
type compressionAB struct {
	methods []string
	cells   map[string][]concCell
}

// compressionCells runs one service cell per method, the methods' order rotated by rep, and
// puts the column back to the database's default afterwards.
func (b *bench) compressionCells(ctx context.Context, convs []benchConv, qs []query, memory string, rep int, ab *compressionAB) error {
	n := len(ab.methods)
	for k := range n {
		m := ab.methods[(k+rep)%n]
		if _, err := b.pool.Exec(ctx, `ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION `+pgx.Identifier{m}.Sanitize()); err != nil {
			return err
		}
		c, err := b.concurrentCell(ctx, true, convs, qs, memory, b.cfg.clients, b.cfg.cellDuration)
		if err != nil {
			return err
		}
		ab.cells[m] = append(ab.cells[m], c)
		fmt.Fprintf(os.Stderr, "  receipts %s, rep %d: %.0f recalls/s, p50 %.2f ms, CPU per recall: Go %.3f ms, Postgres %.3f ms\n",
			m, rep+1, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.selfCPU), benchkit.Ms(c.pgCPU))
	}
	if n > 0 {
		_, err := b.pool.Exec(ctx, `ALTER TABLE recalls ALTER COLUMN body SET COMPRESSION DEFAULT`)
		return err
	}
	return nil
}

func (ab *compressionAB) report() {
	if len(ab.methods) == 0 {
		return
	}
	fmt.Printf("\nreceipt body compression, service cells of the 100-message conversations interleaved with the others (medians over repetitions):\n")
	fmt.Printf("%8s %10s %9s %9s %14s %14s\n", "method", "recalls/s", "p50 ms", "p99 ms", "Go CPU/recall", "PG CPU/recall")
	for _, m := range ab.methods {
		cs := ab.cells[m]
		var tp []float64
		var p50, p99 []time.Duration
		for _, c := range cs {
			tp, p50, p99 = append(tp, c.tput), append(p50, c.p50), append(p99, c.p99)
		}
		slices.Sort(tp)
		g, p := medCPU(cs)
		fmt.Printf("%8s %10.0f %9.2f %9.2f %11.3f ms %11.3f ms\n", m, tp[len(tp)/2], benchkit.Ms(medianDur(p50)), benchkit.Ms(medianDur(p99)), benchkit.Ms(g), benchkit.Ms(p))
	}
}
