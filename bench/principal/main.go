// Command principal benchmarks recall from a principal-scoped memory as the principal's history
// grows: for 10, 100 and 1,000 conversations of one user (each a few turns), a recall in one of
// them ranks every message the user's conversations wrote to the memory. Each size is measured
// through the real service over HTTP and, interleaved on the same queries, through the store's
// ranking directly (the same-run direct-SQL baseline): the gap is the service's own cost.
//
//	go run ./bench/principal -db "$(scripts/test-postgres.sh start)" [-sizes 10,100,1000] [-turns 3] [-queries 300]
//
// It creates a fresh footprint_bench_<random> database and drops it at exit.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/bench/internal/benchkit"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/store/pg"
)

type config struct {
	adminDSN string
	sizes    []int
	turns    int
	queries  int
	seed     uint64
}

func main() {
	var c config
	var sizes string
	benchkit.AdminDSNFlag(&c.adminDSN)
	flag.StringVar(&sizes, "sizes", "10,100,1000", "conversations per principal, one measured regime each")
	flag.IntVar(&c.turns, "turns", 3, "turns per conversation (two messages each)")
	flag.IntVar(&c.queries, "queries", 300, "measured queries per side and size")
	flag.Uint64Var(&c.seed, "seed", 1, "seed for the texts and queries")
	flag.Parse()
	benchkit.RequireAdminDSN("principal", c.adminDSN)
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			benchkit.Usage("principal", "-sizes is a comma-separated list of positive numbers")
		}
		c.sizes = append(c.sizes, n)
	}
	if c.turns < 1 || c.queries < 1 {
		benchkit.Usage("principal", "-turns and -queries must be ≥ 1")
	}
	benchkit.Main("principal", func(ctx context.Context) error { return run(ctx, c) })
}

// words the texts are made of: each message mentions a few of them, so that rankings differ.
var words = strings.Fields(`order refund delivery parcel invoice address payment card account password
	subscription plan upgrade discount coupon warranty repair return exchange size colour stock
	shipping tracking courier weekend holiday travel flight hotel dinner vegetarian allergy
	birthday anniversary gift budget meeting calendar reminder doctor appointment pharmacy`)

func sentence(rng *mrand.Rand) string {
	n := 6 + rng.IntN(6)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = words[rng.IntN(len(words))]
	}
	return "I asked about my " + strings.Join(parts, " ")
}

func run(ctx context.Context, cfg config) error {
	rng := mrand.New(mrand.NewPCG(cfg.seed, 0x9e37))
	dsn, drop, err := benchkit.CreateDatabase(ctx, cfg.adminDSN, "footprint_bench_", "principal")
	if err != nil {
		return err
	}
	defer drop()
	store, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		return err
	}
	server, err := benchkit.StartServer(store, hash, 4)
	if err != nil {
		return err
	}
	defer server.Close()
	conn, err := server.Dial()
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	gc := benchkit.PaceGCAsServer(os.Getenv)
	fmt.Printf("principal benchmark: %d CPUs, GOMAXPROCS %d, %s, database %s; %d turns of 2 messages per conversation\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), gc, benchkit.DBName(dsn), cfg.turns)
	if err := server.DefineMemory(`{"id":"profile","type":"semantic","scope":"principal","strategy":{"kind":"topK","topK":5,"threshold":-1}}`); err != nil {
		return err
	}

	fmt.Printf("\n%-28s %10s %10s %10s %10s %8s %10s\n", "conversations per principal", "messages", "svc p50", "svc p99", "sql p50", "ratio", "gap p50")
	for _, n := range cfg.sizes {
		principal := fmt.Sprintf("user-%d", n)
		t0 := time.Now()
		for c := range n {
			for range cfg.turns {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":%q}]}`, sentence(rng), sentence(rng))
				path := fmt.Sprintf("/v1/conversations/c%d/turns?principal=%s", c, principal)
				if _, err := conn.Post(path, []byte(body), http.StatusCreated); err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
			}
		}
		load := time.Since(t0)
		ns := core.Identity{Tenant: core.DefaultTenant, Principal: principal}.PrincipalNamespace()
		var svc, sql []time.Duration
		var gaps []time.Duration
		for i := range cfg.queries + 20 {
			q := sentence(rng)
			conv := fmt.Sprintf("c%d", rng.IntN(n))
			body, _ := json.Marshal(map[string]any{"query": q, "memories": []string{"profile"}})
			vec, err := hash.Embed(ctx, []string{q})
			if err != nil {
				return err
			}
			s0 := time.Now()
			raw, err := conn.Post("/v1/conversations/"+url.PathEscape(conv)+"/recall?principal="+principal, body, http.StatusOK)
			ds := time.Since(s0)
			if err != nil {
				return err
			}
			d0 := time.Now()
			res, err := store.RankEntries(ctx, recall.RankQuery{Tenant: core.DefaultTenant, Namespace: ns, MemoryID: "profile",
				Kinds: []core.EntryKind{core.KindMessage}, Vector: vec[0], Model: hash.Info().Model, Limit: 15, Now: time.Now().UTC()})
			dd := time.Since(d0)
			if err != nil {
				return err
			}
			if res.Total != 2*n*cfg.turns {
				return fmt.Errorf("the direct ranking saw %d messages, want %d", res.Total, 2*n*cfg.turns)
			}
			if !strings.Contains(string(raw), `"consideredCount":`) {
				return fmt.Errorf("recall answer without evidence: %.200s", raw)
			}
			if i < 20 {
				continue // warm-up
			}
			svc, sql, gaps = append(svc, ds), append(sql, dd), append(gaps, ds-dd)
		}
		slices.Sort(svc)
		slices.Sort(sql)
		slices.Sort(gaps)
		p := benchkit.Percentile
		fmt.Printf("%-28d %10d %9.2fms %9.2fms %9.2fms %7.2fx %9.2fms   (loaded in %s)\n", n, 2*n*cfg.turns,
			benchkit.Ms(p(svc, 0.5)), benchkit.Ms(p(svc, 0.99)), benchkit.Ms(p(sql, 0.5)),
			benchkit.Ms(p(svc, 0.5))/benchkit.Ms(p(sql, 0.5)), benchkit.Ms(p(gaps, 0.5)), load.Round(time.Millisecond))
	}
	return nil
}
