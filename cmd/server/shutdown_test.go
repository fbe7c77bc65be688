package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestGracefulShutdownUnderLoad stops the real program (run's context is
// cancelled, as SIGTERM does through main) while writers post turns:
// /readyz turns 503 before the listener closes, every request the server
// accepted completes with a 2xx, every acknowledged turn is in Postgres
// after a restart (no turn number lost or duplicated), and run returns
// within FOOTPRINT_SHUTDOWN_TIMEOUT.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	dsn := pgtest.DSN(t)
	const shutdownTimeout, drainDelay = 5 * time.Second, 400 * time.Millisecond
	const key = "acme-key-0123456789abcdef"
	env := map[string]string{
		"FOOTPRINT_ADDR":             "127.0.0.1:0",
		"DATABASE_URL":               dsn,
		"FOOTPRINT_API_KEYS":         "acme:" + key,
		"FOOTPRINT_SHUTDOWN_TIMEOUT": shutdownTimeout.String(),
		"FOOTPRINT_DRAIN_DELAY":      drainDelay.String(),
		"FOOTPRINT_LOG_LEVEL":        "warn",
		"FOOTPRINT_RATE_LIMIT":       "0",
	}
	base, stdout, stop := start(t, env)
	if code, body := call(t, "POST", base+"/v1/memories", key, `{"id":"why","type":"causal","strategy":{"kind":"topK"}}`); code != 201 {
		t.Fatalf("define: %d %v", code, body)
	}

	// One connection per request: a refused dial then means "the server no
	// longer accepts", and any other transport error is a request cut off.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	// A dial that fails (refused, or reset from the closed listener's
	// backlog) is a request the server never accepted.
	refused := func(err error) bool {
		var oe *net.OpError
		return errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &oe) && oe.Op == "dial"
	}

	const writers, perWriter = 8, 150
	type ack struct {
		conv string
		turn int
	}
	type attempt struct{ conv, key, body string }
	var (
		mu        sync.Mutex
		acks      []ack
		cut       []attempt   // dialled, then dropped without an answer
		afterStop int         // responses that arrived after the cancel
		answered  []time.Time // when each response arrived
		stopped   = make(chan struct{})
		started   = make(chan struct{}, writers*perWriter)
		wg        sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("load-%d", w)
			for i := range perWriter {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"writer %d asks question %d about order A-%d"},{"role":"assistant","content":"answer %d"}]}`, w, i, i, i)
				req, _ := http.NewRequest("POST", base+"/v1/conversations/"+conv+"/turns", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", conv, i))
				started <- struct{}{}
				res, err := client.Do(req)
				if err != nil {
					if !refused(err) {
						// The connection was made, but maybe only into the
						// closing listener's backlog. Whether the server
						// had taken the request is settled after the
						// restart, by replaying its Idempotency-Key.
						mu.Lock()
						cut = append(cut, attempt{conv, req.Header.Get("Idempotency-Key"), body})
						mu.Unlock()
					}
					return
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				mu.Lock()
				answered = append(answered, time.Now())
				mu.Unlock()
				select {
				case <-stopped:
					mu.Lock()
					afterStop++
					mu.Unlock()
				default:
				}
				if res.StatusCode != 201 {
					t.Errorf("writer %d request %d: %d %s", w, i, res.StatusCode, b)
					return
				}
				var tr struct {
					Turn int `json:"turn"`
				}
				if err := json.Unmarshal(b, &tr); err != nil || tr.Turn < 1 {
					t.Errorf("writer %d: turn result %s", w, b)
					return
				}
				mu.Lock()
				acks = append(acks, ack{conv, tr.Turn})
				mu.Unlock()
			}
		}()
	}

	// Readiness, polled throughout: 200 … 503 … refused, never 200 after 503.
	var ready []string
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		for {
			res, err := client.Get(base + "/readyz")
			if err != nil { // refused, or reset in the closed listener's backlog
				ready = append(ready, "closed")
				return
			}
			res.Body.Close()
			if n := len(ready); n == 0 || ready[n-1] != fmt.Sprint(res.StatusCode) {
				ready = append(ready, fmt.Sprint(res.StatusCode))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// Let the load get going, then stop the server mid-stream.
	for range writers * 5 {
		<-started
	}
	time.Sleep(200 * time.Millisecond)
	close(stopped)
	t0 := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	took := time.Since(t0)
	wg.Wait()
	<-readyDone
	if took > shutdownTimeout {
		t.Errorf("run took %v to return, more than FOOTPRINT_SHUTDOWN_TIMEOUT %v", took, shutdownTimeout)
	}
	if took < drainDelay {
		t.Errorf("run returned after %v, before the drain delay %v", took, drainDelay)
	}
	if got := strings.Join(ready, " → "); got != "200 → 503 → closed" {
		t.Errorf("readiness went %s, want 200 → 503 → closed", got)
	}
	if !strings.Contains(stdout.String(), "footprint stopped") {
		t.Errorf("no clean stop message:\n%s", stdout.String())
	}
	inFlight := 0 // answered after the listener closed: in flight at Shutdown
	for _, at := range answered {
		if at.After(t0.Add(drainDelay)) {
			inFlight++
		}
	}
	t.Logf("%d turns acknowledged, %d answered after the stop began, %d of them after the listener closed; %d dropped unanswered at the closing listener; run returned in %v",
		len(acks), afterStop, inFlight, len(cut), took)
	if afterStop == 0 {
		t.Error("no request was answered after the stop began: the drain was not exercised")
	}

	// Restart on the same database: every acknowledged turn is there, and
	// no conversation has a turn number twice.
	base, _, _ = start(t, env)
	want := map[string]map[int]bool{}
	for _, a := range acks {
		if want[a.conv] == nil {
			want[a.conv] = map[int]bool{}
		}
		if want[a.conv][a.turn] {
			t.Errorf("%s: turn %d acknowledged twice", a.conv, a.turn)
		}
		want[a.conv][a.turn] = true
	}
	// A request dropped without an answer must be one the server never
	// took: replaying its key now writes it afresh instead of replaying a
	// result the first server committed and never sent.
	for _, c := range cut {
		req, _ := http.NewRequest("POST", base+"/v1/conversations/"+c.conv+"/turns", strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", c.key)
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("replay %s: %v", c.key, err)
		}
		res.Body.Close()
		if res.StatusCode != 201 {
			t.Errorf("replay %s: %d", c.key, res.StatusCode)
		}
		if res.Header.Get("Idempotent-Replayed") == "true" {
			t.Errorf("request %s was committed by the stopping server but its client got no answer", c.key)
		}
	}
	for conv, turns := range want {
		code, body := call(t, "GET", base+"/v1/conversations/"+conv+"/entries?memory=why&limit=200", key, "")
		if code != 200 {
			t.Fatalf("entries of %s after restart: %d %v", conv, code, body)
		}
		stored := map[string]bool{}
		for _, e := range body["entries"].([]any) {
			stored[e.(map[string]any)["id"].(string)] = true
		}
		for turn := range turns {
			if !stored[fmt.Sprintf("snap-%d", turn)] {
				t.Errorf("%s: acknowledged turn %d is lost after the restart", conv, turn)
			}
		}
	}
}

// TestShutdownClosesSpareConnections: a connection that was dialed and never sent a request (a
// client's spare, a load balancer's warm pool) does not hold the shutdown. net/http counts such
// a connection as busy for 5 s, longer than this FOOTPRINT_SHUTDOWN_TIMEOUT; the server closes
// it once it has been silent for spareGrace, while a request on a connection dialed at the
// same moment still completes.
func TestShutdownClosesSpareConnections(t *testing.T) {
	const shutdownTimeout = 3 * time.Second
	base, _, stop := start(t, map[string]string{
		"FOOTPRINT_ADDR":             "127.0.0.1:0",
		"FOOTPRINT_SHUTDOWN_TIMEOUT": shutdownTimeout.String(),
		"FOOTPRINT_LOG_LEVEL":        "warn",
	})
	addr := strings.TrimPrefix(base, "http://")
	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	// A slow request: its headers are sent now, its body only after the stop began.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	body := `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`
	fmt.Fprintf(slow, "POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	// Let the server read those headers: one it reads after the shutdown began, net/http drops
	// unanswered (a request that had not arrived).
	time.Sleep(300 * time.Millisecond)

	stopped := make(chan error, 1)
	t0 := time.Now()
	go func() { stopped <- stop() }()
	time.Sleep(2 * spareGrace) // past the grace: the spare is closed, the slow request still open
	if _, err := io.WriteString(slow, body); err != nil {
		t.Fatalf("the slow request's connection was closed during the drain: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatalf("the slow request got no answer: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Errorf("the slow request: %d, want 201", res.StatusCode)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("run returned %v after %v (FOOTPRINT_SHUTDOWN_TIMEOUT %v)", err, time.Since(t0), shutdownTimeout)
	}
	// The spare was closed by the server: a read sees EOF, not a timeout.
	_ = spare.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := spare.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("spare connection: read %d bytes, %v; want EOF (closed by the server)", n, err)
	}
}
