// Command turns benchmarks turn writes: the real service behind the real HTTP
// handler on a loopback listener, against a baseline that performs the same
// SQL transaction directly through the Postgres store (no HTTP, no JSON
// decoding, no embedding), in the same run, on a fresh database.
//
//	go run ./bench/turns -db "$(scripts/test-postgres.sh start)" [-duration 5s] [-reps 1] [-rate 0]
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
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/embedder"

	"github.com/footprint/footprint/internal/store/pg"
)

const (
	tenant = core.DefaultTenant
	dims   = 384

	userText = "My order A-1043 arrived with a cracked screen and the charger is missing as well. " +
		"I bought it for my daughter's birthday next week, so can you send a replacement quickly or should I ask for a refund?"
	assistantText = "I'm sorry about that. I've opened replacement RMA-5521 for order A-1043; a prepaid return label " +
		"is on its way to your email and the new unit, charger included, ships as soon as the warehouse scans it."
)

type config struct {
	adminDSN    string
	citusDSN    string // -citus: measure the service on this Citus cluster against -db (citus.go)
	duration    time.Duration
	warmup      time.Duration
	reps        int
	rate        int
	clients     []int
	convs       int
	cpuProfile  string
	profileCell string
	tracing     bool
	scale       []int64 // -scale: table sizes to measure at (scale.go)
}

func main() {
	var c config
	var clients, scale string
	benchkit.AdminDSNFlag(&c.adminDSN)
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "duration of each measured cell")
	flag.DurationVar(&c.warmup, "warmup", time.Second, "warm-up per side before measuring (not reported)")
	flag.IntVar(&c.reps, "reps", 1, "repetitions per cell; the table shows the median (by throughput)")
	flag.IntVar(&c.rate, "rate", 0, "open-loop rate in turns/s; 0: 70% of the measured service distinct@16 throughput")
	flag.StringVar(&clients, "clients", "1,16,32", "closed-loop client counts")
	flag.IntVar(&c.convs, "convs", 64, "conversations of the distinct scenario")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of one service cell (see -profile-cell) to this file")
	flag.StringVar(&c.profileCell, "profile-cell", "distinct/16", "the service cell -cpuprofile covers: scenario/clients")
	flag.StringVar(&scale, "scale", "", "measure instead distinct@16 as the entries table grows to each of these row counts (comma-separated, e.g. 10000,100000,1000000: other tenants' rows), with the same-run baseline at each size (scale.go)")
	benchkit.CitusDSNFlag(&c.citusDSN)
	flag.BoolVar(&c.tracing, "tracing", false, "measure instead what tracing costs: the service untraced against the service traced at sampling 1.0, exporting OTLP/HTTP to an in-process receiver, distinct@16, -reps interleaved pairs (tracing.go)")
	flag.Parse()
	benchkit.RequireAdminDSN("turns", c.adminDSN)
	for _, s := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			benchkit.Usage("turns", fmt.Sprintf("bad -clients %q", clients))
		}
		c.clients = append(c.clients, n)
	}
	if c.reps < 1 || c.convs < 1 {
		benchkit.Usage("turns", "-reps and -convs must be ≥ 1")
	}
	if scale != "" {
		sizes, err := benchkit.ParseSizes(scale)
		if err != nil {
			benchkit.Usage("turns", "-scale: "+err.Error())
		}
		c.scale = sizes
	}
	benchkit.Main("turns", func(ctx context.Context) error { return run(ctx, c) })
}

// bench is the wiring shared by every cell.
type bench struct {
	cfg    config
	store  *pg.Store
	pool   *pgxpool.Pool // for integrity checks only
	server *benchkit.Server
	traced *benchkit.Server // the same service, traced (-tracing; tracing.go)
	// the same service on a Citus cluster (-citus; citus.go), and a pool on its coordinator
	citus     *benchkit.Server
	citusPool *pgxpool.Pool
	body      []byte

	// baseline's precomputed parts
	memoryIDs    []string
	mems         map[string]core.Memory
	fingerprints []core.Fingerprint
	vector       []float32
	model        string
	msgValues    [2]json.RawMessage
	snapValue    json.RawMessage

	seq atomic.Int64 // makes conversation ids unique per cell
}

func run(ctx context.Context, cfg config) error {
	dsn, drop, err := benchkit.CreateDatabase(ctx, cfg.adminDSN, "footprint_bench_", "turns")
	if err != nil {
		return err
	}
	defer drop()

	store, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()

	hash, err := embedder.NewHash("hash", dims)
	if err != nil {
		return err
	}
	server, err := benchkit.StartServer(store, hash, 4*slices.Max(cfg.clients))
	if err != nil {
		return err
	}
	defer server.Close()
	b := &bench{
		cfg:    cfg,
		store:  store,
		pool:   pool,
		server: server,
	}
	if err := b.setup(ctx, hash); err != nil {
		return err
	}

	// The service runs in this process: pace its collector as cmd/server does on the Postgres
	// store (both sides share the setting).
	gc := benchkit.PaceGCAsServer(os.Getenv)
	fmt.Printf("turns benchmark: %d CPUs, GOMAXPROCS %d, %s, %s per cell, %d rep(s), warm-up %s, database %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), gc, cfg.duration, cfg.reps, cfg.warmup, benchkit.DBName(dsn))
	fmt.Printf("each turn: 2 messages (%d + %d chars) → msg-N-0, msg-N-1 (chat, episodic) + snap-N with a %d-d vector (why, causal)\n\n",
		len(userText), len(assistantText), dims)

	if cfg.tracing {
		return b.tracingCost(ctx, dsn, hash)
	}
	if cfg.citusDSN != "" {
		return b.citusCost(ctx, hash)
	}
	if len(cfg.scale) > 0 {
		return b.scaleCurve(ctx, cfg.scale)
	}
	// Warm up both sides (connections, plans, caches); not reported.
	for _, side := range []string{"service", "baseline"} {
		if _, err := b.closedLoop(ctx, "warmup", side, 16, cfg.convs, cfg.warmup, false); err != nil {
			return err
		}
	}

	type key struct {
		scenario string
		clients  int
		side     string
	}
	results := map[key]cell{}
	var rows []key
	for _, sc := range []struct {
		name  string
		convs int
	}{{"distinct", cfg.convs}, {"busy", 1}} {
		for _, n := range cfg.clients {
			for _, side := range []string{"service", "baseline"} {
				var reps []cell
				for r := 0; r < cfg.reps; r++ {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					prof := side == "service" && r == 0 && cfg.cpuProfile != "" && cfg.profileCell == fmt.Sprintf("%s/%d", sc.name, n)
					c, err := b.closedLoop(ctx, sc.name, side, n, sc.convs, cfg.duration, prof)
					if err != nil {
						return err
					}
					reps = append(reps, c)
				}
				k := key{sc.name, n, side}
				results[k] = median(reps)
				rows = append(rows, k)
				c := results[k]
				fmt.Fprintf(os.Stderr, "  %-8s %3d %-8s %8.0f turns/s  p50 %6.2f ms  p99 %6.2f ms  errors %d  integrity: %s\n",
					sc.name, n, side, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99), c.errors, c.integrity)
			}
		}
	}

	fmt.Println("closed loop (each client sends its next turn when the previous one returns):")
	fmt.Printf("%-9s %7s  %-8s %9s %8s %8s %7s %7s %7s  %s\n",
		"scenario", "clients", "side", "turns/s", "p50 ms", "p99 ms", "errors", "cpu go", "cpu pg", "svc/base")
	allOK := true
	for _, k := range rows {
		c := results[k]
		ratio := ""
		if k.side == "baseline" {
			if s, ok := results[key{k.scenario, k.clients, "service"}]; ok && c.tput > 0 {
				ratio = fmt.Sprintf("%.2f×", s.tput/c.tput)
			}
		}
		fmt.Printf("%-9s %7d  %-8s %9.0f %8.2f %8.2f %7d %6.0f%% %6.0f%%  %s\n",
			k.scenario, k.clients, k.side, c.tput, benchkit.Ms(c.p50), benchkit.Ms(c.p99), c.errors, c.cpuSelf, c.cpuOther, ratio)
		if c.integrity != "ok" {
			allOK = false
		}
	}
	fmt.Println("(cpu go: this process — load generator, HTTP, service, pgx; cpu pg: the rest of the machine, mostly Postgres; 100% = one core)")

	// Open loop at ~70% of the service's distinct@16 throughput.
	rate := cfg.rate
	ref, haveRef := results[key{"distinct", 16, "service"}]
	if rate <= 0 {
		if !haveRef {
			ref = results[rows[0]]
		}
		rate = max(1, int(0.7*ref.tput))
	}
	fmt.Printf("\nopen loop (vegeta, constant %d turns/s for %s, %d conversations round-robin):\n", rate, cfg.duration, cfg.convs)
	fmt.Printf("%-8s %9s %9s %8s %8s %8s %8s %7s  %s\n", "side", "sent/s", "ok/s", "p50 ms", "p99 ms", "max ms", "success", "errors", "integrity")
	for _, side := range []string{"service", "baseline"} {
		o, err := b.openLoop(ctx, side, rate, cfg.convs, cfg.duration)
		if err != nil {
			return err
		}
		fmt.Printf("%-8s %9.0f %9.0f %8.2f %8.2f %8.2f %7.2f%% %7d  %s\n",
			side, o.rate, o.tput, benchkit.Ms(o.p50), benchkit.Ms(o.p99), benchkit.Ms(o.max), 100*o.success, o.errors, o.integrity)
		for _, e := range o.samples {
			fmt.Printf("    error: %s\n", e)
		}
		if o.integrity != "ok" {
			allOK = false
		}
		if side == "service" && o.errors > 0 {
			allOK = false
		}
	}

	fmt.Println("\ntargets (service side):")
	check := func(name string, ok bool, detail string) {
		verdict := "MISS"
		if ok {
			verdict = "PASS"
		}
		fmt.Printf("  %-4s %-52s %s\n", verdict, name, detail)
	}
	if s, ok := results[key{"distinct", 16, "service"}]; ok {
		base := results[key{"distinct", 16, "baseline"}]
		ratio := 0.0
		if base.tput > 0 {
			ratio = s.tput / base.tput
		}
		check("distinct@16 ≥ 4,000 turns/s", s.tput >= 4000 && s.errors == 0, fmt.Sprintf("%.0f turns/s", s.tput))
		check("distinct@16 p99 ≤ 10 ms", s.p99 <= 10*time.Millisecond, fmt.Sprintf("%.2f ms", benchkit.Ms(s.p99)))
		check("distinct@16 ≥ 0.7× baseline", ratio >= 0.7, fmt.Sprintf("%.2f× (baseline %.0f turns/s)", ratio, base.tput))
	}
	if s, ok := results[key{"busy", 16, "service"}]; ok {
		check("busy@16 ≥ 1,500 turns/s", s.tput >= 1500 && s.errors == 0, fmt.Sprintf("%.0f turns/s", s.tput))
		check("busy@16 p99 ≤ 20 ms", s.p99 <= 20*time.Millisecond, fmt.Sprintf("%.2f ms", benchkit.Ms(s.p99)))
	}
	for _, sc := range []string{"distinct", "busy"} {
		if s, ok := results[key{sc, 1, "service"}]; ok {
			check(fmt.Sprintf("single-client p50 ≤ 1 ms (%s@1)", sc), s.p50 <= time.Millisecond, fmt.Sprintf("%.2f ms", benchkit.Ms(s.p50)))
		}
	}
	errorsTotal := 0
	for _, c := range results {
		errorsTotal += c.errors
	}
	check("no errors, no conflict visible to a client", errorsTotal == 0, fmt.Sprintf("%d error(s) in closed-loop cells", errorsTotal))
	if allOK {
		fmt.Println("\nintegrity: ok (every conversation holds turns 1..N exactly once, N = its successful writes)")
	} else {
		fmt.Println("\nintegrity: FAILED (see the cells above)")
	}
	return nil
}

// setup defines the two memories through the API and precomputes the
// baseline's entries from what the service would write.
func (b *bench) setup(ctx context.Context, hash *embedder.Hash) error {
	for _, def := range []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`,
	} {
		if err := b.server.DefineMemory(def); err != nil {
			return err
		}
	}
	mems, err := b.store.ListMemories(ctx, tenant, "", 200)
	if err != nil {
		return err
	}
	b.mems = map[string]core.Memory{}
	for _, m := range mems {
		b.memoryIDs = append(b.memoryIDs, m.ID)
		b.mems[m.ID] = m
	}
	vs, err := hash.Embed(ctx, []string{userText})
	if err != nil {
		return err
	}
	b.vector, b.model = vs[0], hash.Info().Model
	b.fingerprints = []core.Fingerprint{{MemoryID: "why", Model: b.model, Dims: len(b.vector)}}
	msgs := []core.Message{{Role: "user", Content: userText}, {Role: "assistant", Content: assistantText}}
	for i, m := range msgs {
		b.msgValues[i], _ = json.Marshal(m)
	}
	b.snapValue, _ = json.Marshal(core.Snapshot{Query: userText, FinalContent: assistantText,
		Decisions: []core.Decision{}, ToolCalls: []core.ToolCall{}})
	b.body, _ = json.Marshal(map[string]any{"messages": msgs})
	return nil
}

// baselineWrite is the service's store transaction for one turn, built
// directly: same entries, values, vector, fingerprints and turn resolution.
func (b *bench) baselineWrite(ctx context.Context, conv string) error {
	namespace := core.Identity{Tenant: tenant, ConversationID: conv}.Namespace()
	now := time.Now().UTC().Truncate(time.Microsecond)
	chat, why := b.mems["chat"], b.mems["why"]
	entry := func(m core.Memory, id string, kind core.EntryKind, turn, idx int, value json.RawMessage) core.Entry {
		e := core.Entry{
			Tenant: tenant, MemoryID: m.ID, Namespace: namespace,
			ID: id, Kind: kind, Turn: turn, Index: idx, Value: value, Metadata: json.RawMessage(`{}`),
			Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now,
			Tier: m.Tier, SourceTurn: turn,
		}
		if m.TTLMs > 0 {
			e.ExpiresAt = now.Add(time.Duration(m.TTLMs) * time.Millisecond)
		}
		return e
	}
	fpMemories := make([]string, len(b.fingerprints))
	for i, f := range b.fingerprints {
		fpMemories[i] = f.MemoryID
	}
	_, err := b.store.WriteTurn(ctx, turns.TurnWrite{
		Tenant:              tenant,
		Namespace:           namespace,
		Scope:               turns.TurnScope{MemoryIDs: b.memoryIDs, Kinds: turns.CountedKinds(true, false)},
		FingerprintMemories: fpMemories,
		Now:                 now,
		Decide: turns.Decider(1, b.fingerprints, func(turn int) ([]core.Entry, error) {
			snap := entry(why, "snap-"+strconv.Itoa(turn), core.KindSnapshot, turn, 0, b.snapValue)
			snap.Embedding, snap.EmbeddingModel = b.vector, b.model
			return []core.Entry{
				entry(chat, "msg-"+strconv.Itoa(turn)+"-0", core.KindMessage, turn, 0, b.msgValues[0]),
				entry(chat, "msg-"+strconv.Itoa(turn)+"-1", core.KindMessage, turn, 1, b.msgValues[1]),
				snap,
			}, nil
		}),
	})
	return err
}

// serviceWrite posts one turn over HTTP on the client's own keep-alive connection and reads
// the whole answer.
func (b *bench) serviceWrite(c *benchkit.Conn, conv string) error {
	_, err := c.Post("/v1/conversations/"+url.PathEscape(conv)+"/turns", b.body, 0)
	return err
}

// cell is one measured (scenario, clients, side).
type cell struct {
	tput              float64
	p50, p99          time.Duration
	errors            int
	samples           []string
	integrity         string
	cpuSelf, cpuOther float64
}

func median(cs []cell) cell {
	s := slices.Clone(cs)
	slices.SortFunc(s, func(a, b cell) int {
		switch {
		case a.tput < b.tput:
			return -1
		case a.tput > b.tput:
			return 1
		}
		return 0
	})
	m := s[len(s)/2]
	// Errors and integrity failures of any repetition are never hidden.
	m.errors = 0
	for _, c := range cs {
		m.errors += c.errors
		if c.integrity != "ok" {
			m.integrity = c.integrity
		}
	}
	return m
}

// closedLoop runs n clients for d; client i writes to conversation
// (next round-robin index) of nconv fresh conversations.
func (b *bench) closedLoop(ctx context.Context, scenario, side string, n, nconv int, d time.Duration, profile bool) (cell, error) {
	convs := b.conversations(scenario, side, nconv)
	counts := make([]atomic.Int64, nconv)
	var next atomic.Uint64
	lat := make([][]time.Duration, n)
	errs := make([]int, n)
	var sampleMu sync.Mutex
	var samples []string

	if profile {
		stop, err := benchkit.StartCPUProfile(b.cfg.cpuProfile)
		if err != nil {
			return cell{}, err
		}
		defer stop()
	}
	conns := make([]*benchkit.Conn, n) // the service side's: one keep-alive connection per client
	if side != "baseline" {
		srv := b.server
		switch side {
		case "traced":
			srv = b.traced
		case "citus":
			srv = b.citus
		}
		for w := range conns {
			c, err := srv.Dial()
			if err != nil {
				return cell{}, err
			}
			defer func() { _ = c.Close() }()
			conns[w] = c
		}
	}
	cpu0 := sampleCPU()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		conn := conns[w]
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, 4096)
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(deadline) {
					break
				}
				i := int(next.Add(1)-1) % nconv
				var err error
				if side != "baseline" {
					err = b.serviceWrite(conn, convs[i])
				} else {
					err = b.baselineWrite(ctx, convs[i])
				}
				l = append(l, time.Since(t0))
				if err != nil {
					errs[w]++
					sampleMu.Lock()
					if len(samples) < 5 {
						samples = append(samples, err.Error())
					}
					sampleMu.Unlock()
					continue
				}
				counts[i].Add(1)
			}
			lat[w] = l
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := sampleCPU()
	if ctx.Err() != nil {
		return cell{}, ctx.Err()
	}

	var all []time.Duration
	var c cell
	for w := range n {
		all = append(all, lat[w]...)
		c.errors += errs[w]
	}
	ok := 0
	for i := range counts {
		ok += int(counts[i].Load())
	}
	slices.Sort(all)
	c.tput = float64(ok) / elapsed.Seconds()
	c.p50, c.p99 = benchkit.Percentile(all, 0.50), benchkit.Percentile(all, 0.99)
	c.samples = samples
	c.cpuSelf, c.cpuOther = cpu1.since(cpu0)
	expected := make(map[string]int, nconv)
	for i, conv := range convs {
		expected[conv] = int(counts[i].Load())
	}
	pool := b.pool
	if side == "citus" {
		pool = b.citusPool
	}
	c.integrity = b.checkIntegrity(ctx, pool, expected)
	for _, s := range samples {
		fmt.Fprintf(os.Stderr, "  %s %d %s error: %s\n", scenario, n, side, s)
	}
	return c, nil
}

func (b *bench) conversations(scenario, side string, n int) []string {
	id := b.seq.Add(1)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%s-%d-c%02d", scenario, side[:3], id, i)
	}
	return out
}

// checkIntegrity verifies that each conversation holds, for turns 1..N
// (N = its successful writes), exactly msg-t-0, msg-t-1 and snap-t.
func (b *bench) checkIntegrity(ctx context.Context, pool *pgxpool.Pool, expected map[string]int) string {
	byNS := map[string]string{}
	var namespaces []string
	for conv := range expected {
		ns := core.Identity{Tenant: tenant, ConversationID: conv}.Namespace()
		byNS[ns] = conv
		namespaces = append(namespaces, ns)
	}
	rows, err := pool.Query(ctx, `SELECT namespace, memory_id, id, kind, turn, idx FROM entries
		WHERE tenant = $1 AND namespace = ANY($2)`, tenant, namespaces)
	if err != nil {
		return "query failed: " + err.Error()
	}
	type slot struct {
		turn int
		what string
	}
	seen := map[string]map[slot]int{}
	for rows.Next() {
		var ns, mem, id, kind string
		var turn, idx *int
		if err := rows.Scan(&ns, &mem, &id, &kind, &turn, &idx); err != nil {
			rows.Close()
			return "scan failed: " + err.Error()
		}
		if turn == nil || idx == nil {
			return fmt.Sprintf("FAILED: %s/%s has no turn", ns, id)
		}
		want := ""
		switch {
		case mem == "chat" && kind == "msg":
			want = fmt.Sprintf("msg-%d-%d", *turn, *idx)
		case mem == "why" && kind == "snap":
			want = fmt.Sprintf("snap-%d", *turn)
		default:
			return fmt.Sprintf("FAILED: unexpected entry %s/%s/%s", ns, mem, id)
		}
		if id != want {
			return fmt.Sprintf("FAILED: %s: id %s stored with turn %d idx %d", ns, id, *turn, *idx)
		}
		if seen[ns] == nil {
			seen[ns] = map[slot]int{}
		}
		seen[ns][slot{*turn, mem + ":" + strconv.Itoa(*idx)}]++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "query failed: " + err.Error()
	}
	for ns, conv := range byNS {
		n := expected[conv]
		got := seen[ns]
		if len(got) != 3*n {
			return fmt.Sprintf("FAILED: %s has %d distinct (turn, entry) slots, want %d for %d turns", conv, len(got), 3*n, n)
		}
		for t := 1; t <= n; t++ {
			for _, what := range []string{"chat:0", "chat:1", "why:0"} {
				if c := got[slot{t, what}]; c != 1 {
					return fmt.Sprintf("FAILED: %s turn %d %s stored %d times", conv, t, what, c)
				}
			}
		}
	}
	return "ok"
}

// openResult is one open-loop run.
type openResult struct {
	rate, tput    float64
	p50, p99, max time.Duration
	success       float64
	errors        int
	samples       []string
	integrity     string
}

// openLoop runs vegeta at a constant rate. The service side goes over HTTP
// to the real handler; the baseline side goes through a RoundTripper that
// performs the store write in-process, so both are paced identically.
func (b *bench) openLoop(ctx context.Context, side string, rate, nconv int, d time.Duration) (openResult, error) {
	convs := b.conversations("open", side, nconv)
	base := b.server.BaseURL
	rt := b.server.Client.Transport
	if side == "baseline" {
		base = "http://baseline.invalid"
		rt = storeRoundTripper{b}
	}
	hdr := http.Header{"Content-Type": []string{"application/json"}}
	targets := make([]vegeta.Target, nconv)
	urlToConv := map[string]int{}
	for i, conv := range convs {
		u := base + "/v1/conversations/" + url.PathEscape(conv) + "/turns"
		targets[i] = vegeta.Target{Method: http.MethodPost, URL: u, Body: b.body, Header: hdr}
		urlToConv[u] = i
	}
	att := vegeta.NewAttacker(
		vegeta.Client(&http.Client{Transport: rt, Timeout: 30 * time.Second}),
		vegeta.Workers(16),
		vegeta.MaxWorkers(1024),
	)
	var m vegeta.Metrics
	counts := make([]int, nconv)
	var o openResult
	for res := range att.Attack(vegeta.NewStaticTargeter(targets...), vegeta.Rate{Freq: rate, Per: time.Second}, d, side) {
		m.Add(res)
		if ctx.Err() != nil {
			att.Stop()
		}
		if res.Code/100 == 2 && res.Error == "" {
			counts[urlToConv[res.URL]]++
			continue
		}
		o.errors++
		if len(o.samples) < 5 {
			o.samples = append(o.samples, fmt.Sprintf("%d %s %s", res.Code, res.Error, bytes.TrimSpace(res.Body)))
		}
	}
	m.Close()
	if ctx.Err() != nil {
		return openResult{}, ctx.Err()
	}
	o.rate = m.Rate
	o.tput = m.Throughput
	o.p50, o.p99, o.max = m.Latencies.P50, m.Latencies.P99, m.Latencies.Max
	if m.Requests > 0 {
		o.success = float64(int(m.Requests)-o.errors) / float64(m.Requests)
	}
	expected := map[string]int{}
	for i, conv := range convs {
		expected[conv] = counts[i]
	}
	o.integrity = b.checkIntegrity(ctx, b.pool, expected)
	return o, nil
}

// storeRoundTripper answers vegeta's requests by writing the turn through
// the store directly (the baseline), with an empty 201.
type storeRoundTripper struct{ b *bench }

func (s storeRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	p := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v1/conversations/"), "/turns")
	conv, err := url.PathUnescape(p)
	if err != nil {
		return nil, err
	}
	code, msg := http.StatusCreated, ""
	if err := s.b.baselineWrite(r.Context(), conv); err != nil {
		code, msg = http.StatusInternalServerError, err.Error()
	}
	return &http.Response{StatusCode: code, Status: strconv.Itoa(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader(msg)), ContentLength: int64(len(msg)), Request: r}, nil
}

// cpuSample is this process's CPU time and the machine's busy time.
type cpuSample struct {
	self, busy time.Duration
	at         time.Time
}

func sampleCPU() cpuSample {
	var s cpuSample
	s.at = time.Now()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := strings.Cut(string(data), "\n")
		f := strings.Fields(line)
		var busy int64
		for i := 1; i < len(f); i++ {
			if i == 4 || i == 5 { // idle, iowait
				continue
			}
			v, _ := strconv.ParseInt(f[i], 10, 64)
			busy += v
		}
		s.busy = time.Duration(busy) * 10 * time.Millisecond // USER_HZ = 100
	}
	return s
}

// since returns this process's and the rest of the machine's CPU use
// between two samples, in percent of one core.
func (s cpuSample) since(s0 cpuSample) (self, other float64) {
	wall := s.at.Sub(s0.at).Seconds()
	if wall <= 0 {
		return 0, 0
	}
	self = (s.self - s0.self).Seconds() / wall * 100
	other = max(0, (s.busy-s0.busy).Seconds()/wall*100-self)
	return self, other
}
