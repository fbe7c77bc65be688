// Command soak runs the real server binary under a bounded, constant-rate
// mixed workload on loopback for a fixed time, and reports per operation
// throughput, latency (p50/p99) and errors, plus the server's resident
// memory (VmRSS) at start, every minute and at the end.
//
//	go run ./bench/soak -duration 10m [-rate 60] [-db DSN]
//
// -db is an admin DSN (default: scripts/test-postgres.sh url); the tool
// creates footprint_soak_<random> on it and drops it at exit. -db "" runs
// the server on its in-memory store.
//
// The workload, in shares of -rate: turns 40% (over 200 conversations),
// recalls 30%, event batches of 5 events 20% (to 8 open runs with maxEvents
// 1000, so their bounded tails fill within the first minutes and a flat RSS
// afterwards means no leak) and catalogue reads 10% (strategies, capabilities,
// memories). Every answer other than the expected 2xx counts as an error.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/footprint/footprint/bench/internal/benchkit"
)

const key = "soak-key-0123456789abcdef"

type op struct {
	name   string
	share  float64
	want   map[uint16]bool
	target func(n uint64) vegeta.Target
}

func main() {
	defaultDB := ""
	if out, err := exec.Command("scripts/test-postgres.sh", "url").Output(); err == nil {
		defaultDB = strings.TrimSpace(string(out))
	}
	duration := flag.Duration("duration", 10*time.Minute, "how long to run the workload")
	rate := flag.Int("rate", 60, "total requests per second, split across the operations")
	db := flag.String("db", defaultDB, `admin Postgres DSN (a fresh database is created on it); "" for the in-memory store`)
	flag.Parse()
	benchkit.Main("soak", func(ctx context.Context) error { return soak(ctx, *duration, *rate, *db) })
}

func soak(ctx context.Context, duration time.Duration, rate int, adminDSN string) error {
	tmp, err := os.MkdirTemp("", "footprint-soak-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, "footprint")
	build := exec.Command("go", "build", "-o", bin, "./cmd/server")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %w", err)
	}

	dsn, storeName := "", "in-memory"
	if adminDSN != "" {
		var drop func()
		var err error
		dsn, drop, err = benchkit.CreateDatabase(ctx, adminDSN, "footprint_soak_", "soak")
		if err != nil {
			return err
		}
		defer drop()
		storeName = "postgres (" + benchkit.DBName(dsn) + ")"
	}

	// The server: its own process, so its RSS is its own.
	srv := exec.Command(bin)
	srv.Env = append(os.Environ(),
		"FOOTPRINT_ADDR=127.0.0.1:0",
		"DATABASE_URL="+dsn,
		"FOOTPRINT_API_KEYS=soak:"+key,
		"FOOTPRINT_RATE_LIMIT=0",
		"FOOTPRINT_LOG_LEVEL=warn",
	)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	serverLog, err := os.Create(filepath.Join(tmp, "server.log"))
	if err != nil {
		return err
	}
	srv.Stderr = serverLog
	if err := srv.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case werr := <-exited:
			_ = werr // the server was asked to stop; how it exited no longer matters
		case <-time.After(20 * time.Second):
			_ = srv.Process.Kill()
		}
	}()
	base, err := waitListening(stdout, exited)
	if err != nil {
		log, _ := os.ReadFile(serverLog.Name())
		return fmt.Errorf("%w\n%s", err, log)
	}
	pid := srv.Process.Pid
	fmt.Printf("soak: server pid %d at %s, store %s, %d req/s for %v\n", pid, base, storeName, rate, duration)

	if err := prepare(base); err != nil {
		return err
	}
	ops := workload(base)

	// RSS: at start, every minute, at the end.
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
	t0 := time.Now()
	record := func() {
		kb, err := rssKB(pid)
		if err != nil {
			fmt.Fprintln(os.Stderr, "soak: rss:", err)
			return
		}
		samples = append(samples, sample{time.Since(t0).Round(time.Second), kb})
		fmt.Printf("soak: t=%-6v server RSS %.1f MiB\n", time.Since(t0).Round(time.Second), float64(kb)/1024)
	}
	record()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	metrics := make([]*vegeta.Metrics, len(ops))
	var wg sync.WaitGroup
	attackCtx, cancelAttack := context.WithCancel(ctx)
	defer cancelAttack()
	var unexpected sync.Map // op/status → count
	for i, o := range ops {
		metrics[i] = &vegeta.Metrics{}
		perSec := int(float64(rate)*o.share + 0.5)
		if perSec < 1 {
			perSec = 1
		}
		var n atomic.Uint64
		targeter := func(t *vegeta.Target) error {
			*t = o.target(n.Add(1))
			return nil
		}
		atk := vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(4), vegeta.MaxWorkers(64), vegeta.KeepAlive(true))
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := atk.Attack(targeter, vegeta.Rate{Freq: perSec, Per: time.Second}, duration, o.name)
			interrupted := attackCtx.Done()
			for {
				select {
				case r, ok := <-res:
					if !ok {
						return
					}
					if !o.want[r.Code] {
						r.Error = fmt.Sprintf("unexpected status %d: %.200s", r.Code, r.Body)
						k := fmt.Sprintf("%s %d %s", o.name, r.Code, firstLine(string(r.Body)))
						c, _ := unexpected.LoadOrStore(k, new(atomic.Int64))
						c.(*atomic.Int64).Add(1)
					}
					metrics[i].Add(r)
				case <-interrupted: // Ctrl-C: stop early, still report
					atk.Stop()
					interrupted = nil
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
loop:
	for {
		select {
		case <-tick.C:
			record()
		case <-done:
			break loop
		case err := <-exited:
			return fmt.Errorf("server exited during the soak: %w", err)
		}
	}
	record()

	fmt.Printf("\n%-11s %9s %9s %9s %9s %9s %8s\n", "operation", "requests", "ok/s", "p50", "p99", "max", "errors")
	totalErrors := 0
	for i, o := range ops {
		m := metrics[i]
		m.Close()
		errs := int(m.Requests) - int(float64(m.Requests)*m.Success+0.5)
		totalErrors += errs
		fmt.Printf("%-11s %9d %9.1f %9v %9v %9v %8d\n", o.name, m.Requests, m.Throughput,
			m.Latencies.P50.Round(10*time.Microsecond), m.Latencies.P99.Round(10*time.Microsecond), m.Latencies.Max.Round(10*time.Microsecond), errs)
		for _, e := range m.Errors {
			fmt.Printf("    error: %.200s\n", e)
		}
	}
	unexpected.Range(func(k, v any) bool {
		fmt.Printf("    %s × %d\n", k, v.(*atomic.Int64).Load())
		return true
	})
	first, last := samples[0].rss, samples[len(samples)-1].rss
	peak := first
	for _, s := range samples {
		peak = max(peak, s.rss)
	}
	fmt.Printf("\nserver RSS: start %.1f MiB, end %.1f MiB, peak %.1f MiB (%+.1f%% start→end)\n",
		float64(first)/1024, float64(last)/1024, float64(peak)/1024, 100*float64(last-first)/float64(first))
	if log, _ := os.ReadFile(serverLog.Name()); len(log) > 0 {
		fmt.Printf("server warnings/errors logged: %d lines (first: %.300s)\n", strings.Count(string(log), "\n"), firstLine(string(log)))
	}
	if totalErrors > 0 {
		return fmt.Errorf("%d errors", totalErrors)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

func waitListening(stdout io.Reader, exited <-chan error) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() { // keep draining so the server never blocks on stdout
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case base := <-found:
		for range 200 {
			if res, err := http.Get(base + "/readyz"); err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					return base, nil
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		return "", fmt.Errorf("server at %s never became ready", base)
	case err := <-exited:
		return "", fmt.Errorf("server exited at start: %w", err)
	case <-time.After(60 * time.Second):
		return "", fmt.Errorf("server did not start listening")
	}
}

func rssKB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

const (
	conversations = 200
	runs          = 8
)

func header() http.Header {
	return http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
}

func do(method, u, body string) error {
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header = header()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, u, res.StatusCode, b)
	}
	return nil
}

// prepare defines the memories and opens the runs the workload uses.
func prepare(base string) error {
	for _, m := range []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":12}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":3}}`,
		`{"id":"facts","type":"semantic","strategy":{"kind":"extract","extractor":"pattern"}}`,
	} {
		if err := do("POST", base+"/v1/memories", m); err != nil {
			return err
		}
	}
	for r := range runs {
		if err := do("POST", base+"/v1/runs", fmt.Sprintf(`{"runId":"soak-run-%d","conversationId":"soak-%d","turn":1,"maxEvents":1000}`, r, r)); err != nil {
			return err
		}
	}
	return nil
}

var topics = []string{"refund", "shipping", "invoice", "password", "warranty", "upgrade", "delivery", "discount"}

func workload(base string) []op {
	ok := func(codes ...uint16) map[uint16]bool {
		m := map[uint16]bool{}
		for _, c := range codes {
			m[c] = true
		}
		return m
	}
	catalogue := []string{"/v1/strategies", "/v1/capabilities", "/v1/memories?limit=50", "/v1/strategies/topK"}
	return []op{
		{"turns", 0.4, ok(201), func(n uint64) vegeta.Target {
			topic := topics[n%uint64(len(topics))]
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"My name is User%d. Why is my %s for order A-%d late?"},{"role":"assistant","content":"Your %s for order A-%d ships tomorrow."}],"evidence":{"iterations":1,"durationMs":120,"tokenUsage":{"input":200,"output":20}}}`,
				n%conversations, topic, n, topic, n)
			h := header()
			h.Set("Idempotency-Key", fmt.Sprintf("soak-turn-%d", n))
			return vegeta.Target{Method: "POST", URL: fmt.Sprintf("%s/v1/conversations/soak-%d/turns", base, n%conversations), Body: []byte(body), Header: h}
		}},
		{"recalls", 0.3, ok(200), func(n uint64) vegeta.Target {
			body := fmt.Sprintf(`{"query":"What happened with my %s?","contextTokensRemaining":4000}`, topics[n%uint64(len(topics))])
			return vegeta.Target{Method: "POST", URL: fmt.Sprintf("%s/v1/conversations/soak-%d/recall", base, (n*7)%conversations), Body: []byte(body), Header: header()}
		}},
		{"events", 0.2, ok(200), func(n uint64) vegeta.Target {
			var ev []string
			for i := range 5 {
				ev = append(ev, fmt.Sprintf(`{"type":"llm.request","payload":{"model":"m","batch":%d,"i":%d}}`, n, i))
			}
			return vegeta.Target{Method: "POST", URL: fmt.Sprintf("%s/v1/runs/soak-run-%d/events", base, n%runs),
				Body: []byte(`{"events":[` + strings.Join(ev, ",") + `]}`), Header: header()}
		}},
		{"catalogue", 0.1, ok(200), func(n uint64) vegeta.Target {
			return vegeta.Target{Method: "GET", URL: base + catalogue[n%uint64(len(catalogue))], Header: header()}
		}},
	}
}
