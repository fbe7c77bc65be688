package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// The service on a Citus cluster, as a deployment runs it: through the real program. These run
// in make test-citus (TEST_DATABASE_URL a coordinator, FOOTPRINT_REQUIRE_CITUS=1) and skip
// elsewhere.

// privateCitus is a throwaway Citus cluster of its own (scripts/test-citus.sh with a private
// directory and ports), for the test that crashes a worker: the shared test cluster serves
// every other package's tests at the same time.
type privateCitus struct {
	env   []string // the script's environment
	admin string   // the coordinator's postgres database
}

func startPrivateCitus(t *testing.T) *privateCitus {
	t.Helper()
	dir, err := os.MkdirTemp("", "footprint-citus-crash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The postgres OS user (the script runs the servers as it when we are root) must reach it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &privateCitus{env: append(os.Environ(),
		"FOOTPRINT_CITUS_DIR="+filepath.Join(dir, "cluster"),
		fmt.Sprintf("FOOTPRINT_CITUS_PORT=%d", freePorts(t, 3)),
		"FOOTPRINT_CITUS_SHARED_BUFFERS=64MB",
		// Counted acknowledged commits must survive the crash (test-citus.sh says why).
		"FOOTPRINT_CITUS_SYNCHRONOUS_COMMIT=on")}
	out, err := c.script("start")
	if err != nil {
		t.Fatalf("start a private Citus cluster: %v", err)
	}
	t.Cleanup(func() {
		if _, err := c.script("stop"); err != nil {
			t.Errorf("stop the private Citus cluster: %v", err)
		}
	})
	c.admin = out
	return c
}

// script runs scripts/test-citus.sh with args on this cluster and returns its stdout (a DSN,
// for the commands that print one).
func (c *privateCitus) script(args ...string) (string, error) {
	cmd := exec.Command("../../scripts/test-citus.sh", args...)
	cmd.Env = c.env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("test-citus.sh %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// freePorts finds n consecutive free TCP ports on 127.0.0.1 and returns the first.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if first+n > 65535 {
			continue
		}
		ok := true
		for p := first; p < first+n && ok; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return first
		}
	}
	t.Fatal("no free port range")
	return 0
}

// shardNode returns the host:port of the worker that holds tenant's shard of entries, and the
// shard's id.
func shardNode(ctx context.Context, dsn, tenant string) (string, int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	var node string
	var shard int64
	err = conn.QueryRow(ctx, `SELECT nodename || ':' || nodeport, shardid FROM citus_shards
		WHERE shardid = get_shard_id_for_distribution_column('entries', $1::text)`, tenant).Scan(&node, &shard)
	return node, shard, err
}

// TestCitusWorkerCrashLosesNothingAcknowledged is TestPostgresCrashLosesNothingAcknowledged
// with the worker that holds the tenant's shards taken away: crashed (immediate shutdown) and
// started again a second later, or its sessions from the coordinator ended for a second.
// Writers retry 503s with their Idempotency-Keys. Asserted as there: no 500; 503s with
// Retry-After; recovery without a restart; every acknowledged turn stored exactly once where it
// was acknowledged; turns 1..N per conversation; every key replays its answer. /readyz stays
// 200 throughout: it pings the coordinator, which still serves the other workers' tenants.
func TestCitusWorkerCrashLosesNothingAcknowledged(t *testing.T) {
	pgtest.RequireCitus(t)
	c := startPrivateCitus(t)
	for _, variant := range []string{"stop-immediate", "terminate-backend"} {
		t.Run(variant, func(t *testing.T) {
			db := "crash_" + strings.ReplaceAll(variant, "-", "_")
			dsn, err := c.script("createdb", db)
			if err != nil {
				t.Fatal(err)
			}
			// The service's migrations distribute the tables; which worker holds acme's shards
			// is then known.
			if _, err := openAndClose(t, dsn); err != nil {
				t.Fatal(err)
			}
			node, _, err := shardNode(t.Context(), dsn, "acme")
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.script("workers")
			if err != nil {
				t.Fatal(err)
			}
			workers := strings.Fields(out)
			i := slices.IndexFunc(workers, func(w string) bool { return strings.Contains(w, "@"+node+"/") })
			if i < 0 {
				t.Fatalf("acme's shard is on %s, which is none of the workers %v", node, workers)
			}
			worker, workerAdmin := fmt.Sprint(i+1), workers[i]
			target := crashTarget{
				name:  "worker " + worker,
				stop:  func() error { _, err := c.script("kill-worker", worker); return err },
				start: func() error { _, err := c.script("start-worker", worker); return err },
				terminate: func(ctx context.Context) (int, error) {
					// The coordinator's sessions in this database on the worker.
					return terminateSessions(ctx, workerAdmin, `datname = '`+db+`' AND backend_type = 'client backend'`)
				},
				readyzDown: false,
			}
			crashTest(t, target, dsn, variant, nil)
		})
	}
}

// openAndClose starts the store on dsn once (migrating it) through the real program's
// configuration path, and stops it.
func openAndClose(t *testing.T, dsn string) (string, error) {
	t.Helper()
	_, _, stop := start(t, map[string]string{"FOOTPRINT_ADDR": "127.0.0.1:0", "DATABASE_URL": dsn, "FOOTPRINT_LOG_LEVEL": "error"})
	return "", stop()
}

// TestCitusShardMoveWhileWriting moves the tenant's shards while writers post turns: first the
// whole co-located shard group to the other worker (citus_move_shard_placement, logical
// replication), then the tenant onto shards of its own (isolate_tenant_to_new_shard, writes
// blocked while it copies), which are then moved back (writes blocked). Asserted as for a crash: no acknowledged write lost, no turn duplicated,
// every error a 503 with Retry-After, every key replayed afterwards.
func TestCitusShardMoveWhileWriting(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	dsn := pgtest.DSN(t)
	if _, err := openAndClose(t, dsn); err != nil {
		t.Fatal(err)
	}
	target := crashTarget{name: "the shard move", readyzDown: false, disrupt: func(t *testing.T) {
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		// Shard moves and splits name their replication slots (one namespace per worker, shared
		// by every database) after the operation's id, which a clone of the test template
		// starts at the template's: a slot left by an earlier run's database would collide.
		if _, err := conn.Exec(ctx, `SELECT setval('pg_catalog.pg_dist_operationid_seq', $1)`, time.Now().UnixMilli()%1_000_000_000); err != nil {
			t.Fatal(err)
		}
		move := func(mode string) {
			from, shard, err := shardNode(ctx, dsn, "acme")
			if err != nil {
				t.Fatal(err)
			}
			var to string
			if err := conn.QueryRow(ctx, `SELECT nodename || ':' || nodeport FROM pg_dist_node
				WHERE groupid <> 0 AND noderole = 'primary' AND nodename || ':' || nodeport <> $1 LIMIT 1`, from).Scan(&to); err != nil {
				t.Fatal(err)
			}
			fh, fp, _ := strings.Cut(from, ":")
			th, tp, _ := strings.Cut(to, ":")
			t0 := time.Now()
			if _, err := conn.Exec(ctx, fmt.Sprintf(`SELECT citus_move_shard_placement($1, $2, %s, $3, %s, shard_transfer_mode => '%s')`, fp, tp, mode),
				shard, fh, th); err != nil {
				t.Fatalf("move shard %d from %s to %s: %v", shard, from, to, err)
			}
			t.Logf("moved acme's shard group (shard %d of entries) from %s to %s (%s) in %v", shard, from, to, mode, time.Since(t0).Round(time.Millisecond))
		}
		time.Sleep(500 * time.Millisecond) // writes on the old placement first
		move("auto")
		time.Sleep(500 * time.Millisecond)
		t0 := time.Now()
		var isolated int64
		// block_writes: the split with logical replication ('auto') never finished under this
		// load here (Citus 13.2.2, Postgres 15.20): its apply worker failed every 5 seconds
		// with "could not attach to dynamic shared memory segment corresponding to handle:0"
		// in the citus decoder (docs/scale-out.md).
		if err := conn.QueryRow(ctx, `SELECT isolate_tenant_to_new_shard('memories', 'acme'::text, 'CASCADE', shard_transfer_mode => 'block_writes')`).Scan(&isolated); err != nil {
			t.Fatalf("isolate acme: %v", err)
		}
		t.Logf("isolated acme onto shard %d of memories in %v", isolated, time.Since(t0).Round(time.Millisecond))
		time.Sleep(500 * time.Millisecond)
		move("block_writes")
		time.Sleep(500 * time.Millisecond)
	}}
	crashTest(t, target, dsn, "disrupt", nil)
	// acme has shards of its own now: one row in each, none of another tenant's.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var lo, hi int64
	if err := conn.QueryRow(t.Context(), `SELECT shardminvalue::bigint, shardmaxvalue::bigint FROM pg_dist_shard
		WHERE shardid = get_shard_id_for_distribution_column('entries', 'acme')`).Scan(&lo, &hi); err != nil {
		t.Fatal(err)
	}
	if lo != hi {
		t.Errorf("acme's shard of entries covers hashes %d..%d, want one value (isolated)", lo, hi)
	}
}

// TestCitusTwoServiceProcesses: two server processes against the cluster's coordinator,
// writers on one conversation through both, get exactly turns 1..N, each acknowledged turn
// stored once with its own content. The serialisation is the namespace's transaction-scoped
// advisory lock on the coordinator, which every replica's write takes there (internal/store/pg
// citus.go): without it two writers would read the same highest turn and the second insert
// would hit the first's entries (a 409) or a stale guess.
func TestCitusTwoServiceProcesses(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	dsn := pgtest.DSN(t)
	const key = "acme-key-0123456789abcdef"
	env := map[string]string{
		"FOOTPRINT_ADDR":       "127.0.0.1:0",
		"DATABASE_URL":         dsn,
		"FOOTPRINT_API_KEYS":   "acme:" + key,
		"FOOTPRINT_RATE_LIMIT": "0",
		"FOOTPRINT_LOG_LEVEL":  "error",
	}
	bases := []string{serveProcess(t, env), serveProcess(t, env)}
	for _, def := range []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":10}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`,
	} {
		if code, body := call(t, "POST", bases[0]+"/v1/memories", key, def); code != 201 {
			t.Fatalf("define: %d %v", code, body)
		}
	}
	const writers, perWriter = 16, 8
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		mu       sync.Mutex
		acked    []crashOutcome
		wg       sync.WaitGroup
		statuses = map[int]int{}
	)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				base := bases[(w+i)%2]
				content := fmt.Sprintf("writer %d question %d", w, i)
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":"answer %d/%d"}]}`, content, w, i)
				req, _ := http.NewRequest("POST", base+"/v1/conversations/shared/turns", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				statuses[res.StatusCode]++
				mu.Unlock()
				if res.StatusCode != 201 {
					t.Errorf("writer %d turn %d through process %d: %d %s", w, i, (w+i)%2, res.StatusCode, b)
					continue
				}
				var tr struct {
					Turn int `json:"turn"`
				}
				if err := json.Unmarshal(b, &tr); err != nil {
					t.Error(err)
					continue
				}
				mu.Lock()
				acked = append(acked, crashOutcome{conv: "shared", content: content, turn: tr.Turn})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("statuses: %v", statuses)
	turns := make([]int, 0, len(acked))
	for _, o := range acked {
		turns = append(turns, o.turn)
	}
	slices.Sort(turns)
	for i, n := range turns {
		if n != i+1 {
			t.Fatalf("turns acknowledged through the two processes are not 1..%d: %v", len(turns), turns)
		}
	}
	if len(turns) != writers*perWriter {
		t.Errorf("%d of %d turns acknowledged", len(turns), writers*perWriter)
	}
	for _, base := range bases { // each process reads what both wrote
		stored := storedTurns(t, base, key, "shared")
		if len(stored) != len(acked) {
			t.Errorf("%s: %d turns stored, %d acknowledged", base, len(stored), len(acked))
		}
		for _, o := range acked {
			if stored[o.turn] != o.content {
				t.Errorf("%s: turn %d holds %q, acknowledged for %q", base, o.turn, stored[o.turn], o.content)
			}
		}
	}
}
