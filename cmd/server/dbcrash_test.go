package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const pgBin = "/usr/lib/postgresql/15/bin"

// privateCluster is a throwaway Postgres cluster that only one test uses, so
// that test may crash it without disturbing the shared test cluster.
type privateCluster struct {
	t     *testing.T
	dir   string
	data  string
	port  int
	asPG  bool // run the binaries as the postgres OS user (we are root)
	admin string
}

// unavailableCluster skips, or fails when FOOTPRINT_REQUIRE_PG=1.
func unavailableCluster(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("FOOTPRINT_REQUIRE_PG") == "1" {
		t.Fatalf("private Postgres cluster: "+format, args...)
	}
	t.Skipf("private Postgres cluster: "+format, args...)
}

func startPrivateCluster(t *testing.T) *privateCluster {
	t.Helper()
	if os.Getenv("FOOTPRINT_REQUIRE_PG") != "1" && os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("neither FOOTPRINT_REQUIRE_PG=1 nor TEST_DATABASE_URL set")
	}
	if _, err := os.Stat(filepath.Join(pgBin, "pg_ctl")); err != nil {
		unavailableCluster(t, "no pg_ctl: %v", err)
	}
	dir, err := os.MkdirTemp("", "footprint-dbcrash-")
	if err != nil {
		unavailableCluster(t, "%v", err)
	}
	c := &privateCluster{t: t, dir: dir, data: filepath.Join(dir, "data"), asPG: os.Getuid() == 0}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if c.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailableCluster(t, "no postgres OS user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			unavailableCluster(t, "chown %s: %v", dir, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		unavailableCluster(t, "free port: %v", err)
	}
	c.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if out, err := c.pg("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		unavailableCluster(t, "initdb: %v\n%s", err, out)
	}
	if err := c.start(); err != nil {
		unavailableCluster(t, "%v", err)
	}
	t.Cleanup(func() { _, _ = c.pg("pg_ctl", "stop", "-D", c.data, "-m", "immediate", "-w") })
	c.admin = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	return c
}

func (c *privateCluster) pg(bin string, args ...string) (string, error) {
	name, full := filepath.Join(pgBin, bin), args
	if c.asPG {
		name, full = "runuser", append([]string{"-u", "postgres", "--", filepath.Join(pgBin, bin)}, args...)
	}
	cmd := exec.Command(name, full...)
	// pg_ctl start leaves the server running: it must not hold our pipes, or
	// CombinedOutput would wait for the server to exit. Log to a file instead.
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (c *privateCluster) start() error {
	opts := fmt.Sprintf("-c port=%d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c full_page_writes=off -c max_connections=60",
		c.port, c.dir)
	if out, err := c.pg("pg_ctl", "start", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

func (c *privateCluster) stopImmediate() error {
	if out, err := c.pg("pg_ctl", "stop", "-D", c.data, "-m", "immediate", "-w"); err != nil {
		return fmt.Errorf("pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

func (c *privateCluster) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// database creates a fresh database on the cluster and returns its DSN.
func (c *privateCluster) database(name string) string {
	c.t.Helper()
	if err := c.exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		c.t.Fatalf("create database %s: %v", name, err)
	}
	u, _ := url.Parse(c.admin)
	u.Path = "/" + name
	return u.String()
}

// TestPostgresCrashLosesNothingAcknowledged runs the real program on a private
// cluster while 8 writers post turns with Idempotency-Keys, and takes
// Postgres away mid-stream: once by stopping the cluster (-m immediate, a
// crash) and restarting it a second later, once by terminating every server
// backend from an admin session. Writers retry 503s and transport failures
// with the same key. Asserted: no 500 ever; 503s carry Retry-After and the
// unavailable code; /readyz is 503 while the cluster is down; the server
// recovers without a restart; every acknowledged turn is stored exactly once
// at the turn number it was acknowledged with; each conversation holds turns
// 1..N with no gap or duplicate; and every key replays its committed answer.
func TestPostgresCrashLosesNothingAcknowledged(t *testing.T) {
	c := startPrivateCluster(t)
	target := crashTarget{
		name:  "the cluster",
		stop:  c.stopImmediate,
		start: c.start,
		terminate: func(ctx context.Context) (int, error) {
			return terminateSessions(ctx, c.admin, `application_name = 'footprint'`)
		},
		readyzDown: true,
	}
	for _, variant := range []string{"stop-immediate", "terminate-backend", "lost-commit-ack"} {
		t.Run(variant, func(t *testing.T) {
			dsn := c.database("crash_" + strings.ReplaceAll(variant, "-", "_"))
			var px *commitDropper
			if variant == "lost-commit-ack" {
				px = newCommitDropper(t, fmt.Sprintf("127.0.0.1:%d", c.port))
				u, _ := url.Parse(dsn)
				u.Host = px.addr
				dsn = u.String()
			}
			crashTest(t, target, dsn, variant, px)
		})
	}
}

// crashTarget is what crashTest takes away: a whole Postgres cluster, or one Citus worker.
type crashTarget struct {
	name        string
	stop, start func() error                           // crash it (immediate shutdown), start it again
	terminate   func(ctx context.Context) (int, error) // end the sessions the service's writes use there
	// readyzDown: /readyz answers 503 while it is stopped. A Citus worker down is not: /readyz
	// pings the coordinator, which still serves the tenants of the other workers.
	readyzDown bool
	// disrupt is variant "disrupt": whatever else is done to the database mid-stream (a shard
	// move); the writers go on until it returns.
	disrupt func(t *testing.T)
}

// terminateSessions ends the sessions of admin's cluster that match where, and counts them.
func terminateSessions(ctx context.Context, admin, where string) (int, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE `+where+` AND pid <> pg_backend_pid()`).Scan(&n)
	return n, err
}

// commitDropper forwards TCP between the server and Postgres; when armed, it
// cuts the connection on which Postgres reports a COMMIT complete, before the
// server reads that answer: the transaction is committed, but the server
// cannot know it. This is the case idempotency keys exist for.
type commitDropper struct {
	addr  string
	armed atomic.Int64 // commits still to drop
	drops atomic.Int64
}

// commitComplete is the CommandComplete message for COMMIT: 'C', length 11, "COMMIT\0".
var commitComplete = []byte("C\x00\x00\x00\x0bCOMMIT\x00")

func newCommitDropper(t *testing.T, target string) *commitDropper {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	d := &commitDropper{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() {
				defer c.Close()
				defer up.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if d.armed.Load() > 0 && bytes.Contains(buf[:n], commitComplete) && d.armed.Add(-1) >= 0 {
							d.drops.Add(1)
							return // committed upstream; the server never hears of it
						}
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return d
}

type crashOutcome struct {
	conv, key, content string
	turn               int
	attempts           int
	failed             bool // an attempt before the final one got no 2xx
	replayed           bool // the final answer was a replay
}

func crashTest(t *testing.T, c crashTarget, dsn, variant string, px *commitDropper) {
	const key = "acme-key-0123456789abcdef"
	base, _, stop := start(t, map[string]string{
		"FOOTPRINT_ADDR":                 "127.0.0.1:0",
		"DATABASE_URL":                   dsn,
		"FOOTPRINT_API_KEYS":             "acme:" + key,
		"FOOTPRINT_RATE_LIMIT":           "0",
		"FOOTPRINT_LOG_LEVEL":            "error",
		"FOOTPRINT_REQUEST_TIMEOUT":      "10s",
		"FOOTPRINT_DB_STATEMENT_TIMEOUT": "5s",
	})
	if code, body := call(t, "POST", base+"/v1/memories", key, `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":10}}`); code != 201 {
		t.Fatalf("define: %d %v", code, body)
	}
	client := &http.Client{Timeout: 20 * time.Second}

	const writers, perWriter, convs, maxAttempts = 8, 40, 3, 400
	var (
		mu        sync.Mutex
		outcomes  []crashOutcome
		statuses  = map[int]int{}
		acked     atomic.Int64
		begun     atomic.Int64
		busy      atomic.Bool // the outage or disruption is still to end: writers go on
		outage    atomic.Bool
		during503 atomic.Int64
		wg        sync.WaitGroup
	)
	post := func(conv, idem, body string) (int, http.Header, []byte, error) {
		req, _ := http.NewRequest("POST", base+"/v1/conversations/"+conv+"/turns", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", idem)
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, b, nil
	}
	busy.Store(true)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("crash-%d", w%convs)
			for i := 0; i < perWriter || busy.Load(); i++ {
				begun.Add(1)
				content := fmt.Sprintf("writer %d question %d", w, i)
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":"answer %d/%d"}]}`, content, w, i)
				o := crashOutcome{conv: conv, key: fmt.Sprintf("w%d-%d", w, i), content: content}
				for {
					o.attempts++
					if o.attempts > maxAttempts {
						t.Errorf("%s: no 2xx after %d attempts", o.key, maxAttempts)
						return
					}
					code, hdr, b, err := post(conv, o.key, body)
					mu.Lock()
					statuses[code]++
					mu.Unlock()
					if err != nil {
						o.failed = true
						time.Sleep(25 * time.Millisecond)
						continue
					}
					if code == 503 {
						if outage.Load() {
							during503.Add(1)
						}
						var p map[string]any
						_ = json.Unmarshal(b, &p)
						if hdr.Get("Retry-After") == "" || p["code"] != "unavailable" || hdr.Get("Content-Type") != "application/problem+json" {
							t.Errorf("%s: 503 without Retry-After or unavailable problem: %q %s", o.key, hdr.Get("Retry-After"), b)
						}
						o.failed = true
						time.Sleep(25 * time.Millisecond)
						continue
					}
					if code != 201 && code != 200 {
						t.Errorf("%s attempt %d: %d %s", o.key, o.attempts, code, b)
						return
					}
					var tr struct {
						Turn int `json:"turn"`
					}
					if err := json.Unmarshal(b, &tr); err != nil || tr.Turn < 1 {
						t.Errorf("%s: turn result %s", o.key, b)
						return
					}
					o.turn = tr.Turn
					o.replayed = hdr.Get("Idempotent-Replayed") == "true"
					if code != 201 {
						t.Errorf("%s: status %d for a turn with messages", o.key, code)
					}
					if o.replayed && !o.failed {
						t.Errorf("%s: replayed on its first successful attempt with no earlier one answered", o.key)
					}
					break
				}
				acked.Add(1)
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		}()
	}

	// Readiness is sampled throughout.
	var ready sync.Map // status → count, split by phase
	readyStop := make(chan struct{})
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		for {
			select {
			case <-readyStop:
				return
			default:
			}
			phase := "up"
			if outage.Load() {
				phase = "outage"
			}
			res, err := client.Get(base + "/readyz")
			if err != nil {
				t.Errorf("readyz: %v", err)
				return
			}
			res.Body.Close()
			k := fmt.Sprintf("%s/%d", phase, res.StatusCode)
			n, _ := ready.LoadOrStore(k, new(atomic.Int64))
			n.(*atomic.Int64).Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// Mid-way, take the database away.
	deadline := time.Now().Add(30 * time.Second)
	for acked.Load() < writers*perWriter/3 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d turns acknowledged before the crash", acked.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t0 := time.Now()
	switch variant {
	case "stop-immediate":
		if err := c.stop(); err != nil {
			t.Fatal(err)
		}
		outage.Store(true)
		// /readyz must say so at once, whatever the pool still holds.
		if code, _ := call(t, "GET", base+"/readyz", "", ""); (code == 503) != c.readyzDown {
			t.Errorf("readyz with %s stopped: %d", c.name, code)
		}
		time.Sleep(time.Second)
		outage.Store(false)
		if err := c.start(); err != nil {
			t.Fatal(err)
		}
	case "lost-commit-ack":
		px.armed.Store(12)
		for time.Since(t0) < 5*time.Second && px.armed.Load() > 0 {
			time.Sleep(10 * time.Millisecond)
		}
		px.armed.Store(0)
		t.Logf("dropped the answer to %d commits", px.drops.Load())
	case "terminate-backend":
		// Kill every server backend repeatedly for a second, so writes in
		// flight (some mid-commit) lose their connection.
		ctx := context.Background()
		killed := 0
		for time.Since(t0) < time.Second {
			n, err := c.terminate(ctx)
			if err != nil {
				t.Fatalf("pg_terminate_backend: %v", err)
			}
			killed += n
			time.Sleep(30 * time.Millisecond)
		}
		t.Logf("terminated %d backends", killed)
		if killed == 0 {
			t.Error("no footprint backend was terminated")
		}
	case "disrupt":
		c.disrupt(t)
	}
	busy.Store(false)
	t.Logf("%s: outage of %v at %d acknowledged turns", variant, time.Since(t0).Round(time.Millisecond), writers*perWriter/3)

	wg.Wait()
	close(readyStop)
	<-readyDone
	if t.Failed() {
		return
	}
	ready.Range(func(k, v any) bool { t.Logf("readyz %s: %d", k, v.(*atomic.Int64).Load()); return true })
	if variant == "stop-immediate" {
		n, ok := ready.Load("outage/503")
		switch {
		case c.readyzDown && (!ok || n.(*atomic.Int64).Load() == 0):
			t.Errorf("readyz never answered 503 while %s was down", c.name)
		case !c.readyzDown && ok:
			t.Errorf("readyz answered 503 %d times while only %s was down", n.(*atomic.Int64).Load(), c.name)
		}
		if during503.Load() == 0 {
			t.Errorf("no writer saw a 503 while %s was down", c.name)
		}
	}
	ready.Range(func(k, _ any) bool {
		if s := k.(string); !strings.HasSuffix(s, "/200") && !strings.HasSuffix(s, "/503") {
			t.Errorf("readyz answered %s", s)
		}
		return true
	})
	t.Logf("statuses (0 = transport error): %v", statuses)
	if statuses[500] > 0 {
		t.Errorf("%d answers were 500", statuses[500])
	}
	if code, _ := call(t, "GET", base+"/readyz", "", ""); code != 200 {
		t.Errorf("readyz after recovery: %d", code)
	}

	// Every acknowledged turn is stored exactly once, where it was acknowledged.
	byConv := map[string][]crashOutcome{}
	failed, replays := 0, 0
	for _, o := range outcomes {
		byConv[o.conv] = append(byConv[o.conv], o)
		if o.failed {
			failed++
		}
		if o.replayed {
			replays++
		}
	}
	t.Logf("%d keys retried after a failed attempt, %d of them answered by replaying a commit the first attempt made", failed, replays)
	// A retry's own (replaying) transaction may lose its COMMIT answer too,
	// so one key can account for several drops.
	if px != nil && (replays == 0 || int64(replays) > px.drops.Load()) {
		t.Errorf("%d commits went unanswered but %d retries were replays", px.drops.Load(), replays)
	}
	if len(outcomes) != int(begun.Load()) {
		t.Fatalf("%d of %d writes acknowledged", len(outcomes), begun.Load())
	}
	for conv, os := range byConv {
		stored := storedTurns(t, base, key, conv) // turn → user content
		var turns []int
		for n := range stored {
			turns = append(turns, n)
		}
		sort.Ints(turns)
		for i, n := range turns {
			if n != i+1 {
				t.Errorf("%s: turns %v are not 1..%d", conv, turns, len(turns))
				break
			}
		}
		if len(stored) != len(os) {
			t.Errorf("%s: %d turns stored, %d acknowledged (a retry wrote twice, or a write was lost)", conv, len(stored), len(os))
		}
		seen := map[string]int{}
		for n, content := range stored {
			if prev, dup := seen[content]; dup {
				t.Errorf("%s: %q stored at turns %d and %d", conv, content, prev, n)
			}
			seen[content] = n
		}
		for _, o := range os {
			if got, ok := stored[o.turn]; !ok || got != o.content {
				t.Errorf("%s: key %s acknowledged turn %d (%q), store holds %q there", conv, o.key, o.turn, o.content, got)
			}
		}
	}

	// Every key, sent again, replays its committed answer (the stored status,
	// 201, marked Idempotent-Replayed) and writes nothing.
	for _, o := range outcomes {
		w, i := 0, 0
		fmt.Sscanf(o.key, "w%d-%d", &w, &i)
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":"answer %d/%d"}]}`, o.content, w, i)
		code, hdr, b, err := post(o.conv, o.key, body)
		if err != nil || code != 201 || hdr.Get("Idempotent-Replayed") != "true" {
			t.Errorf("%s sent again: %d %v %s", o.key, code, err, b)
			continue
		}
		var tr struct {
			Turn int `json:"turn"`
		}
		if json.Unmarshal(b, &tr); tr.Turn != o.turn {
			t.Errorf("%s replayed turn %d, acknowledged %d", o.key, tr.Turn, o.turn)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v", err)
	}
}

// storedTurns reads a conversation's chat entries back: turn → user content.
func storedTurns(t *testing.T, base, key, conv string) map[int]string {
	t.Helper()
	out := map[int]string{}
	cursor := ""
	for {
		u := base + "/v1/conversations/" + conv + "/entries?memory=chat&limit=200"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		code, body := call(t, "GET", u, key, "")
		if code != 200 {
			t.Fatalf("entries of %s: %d %v", conv, code, body)
		}
		for _, e := range body["entries"].([]any) {
			m := e.(map[string]any)
			v, _ := m["value"].(map[string]any)
			if v["role"] != "user" {
				continue
			}
			n := int(m["turn"].(float64))
			if prev, dup := out[n]; dup {
				t.Errorf("%s: two user messages at turn %d: %q and %q", conv, n, prev, v["content"])
			}
			out[n] = v["content"].(string)
		}
		next, _ := body["nextCursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}
