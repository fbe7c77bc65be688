package pg_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// openStore opens a Store on dsn (migrating it), closed when the test ends.
func openStore(t *testing.T, dsn string) *pg.Store {
	t.Helper()
	s, err := pg.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func createRun(t *testing.T, s *pg.Store, id string, maxEvents int) {
	t.Helper()
	r := runs.Run{Tenant: "acme", ID: id, MaxEvents: maxEvents, CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
		Namespace: core.Identity{Tenant: "acme"}.Namespace()}
	if err := s.CreateRun(t.Context(), r, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// mixed returns a batch of n events: announcements of a few pieces (many of them repeats)
// and plain events, tagged with tag so each is recognisable.
func mixed(tag string, n int) []runs.RunEventInput {
	out := make([]runs.RunEventInput, n)
	for i := range out {
		if i%3 == 0 {
			out[i] = runs.RunEventInput{Type: runs.AnnouncementType,
				Payload: json.RawMessage(fmt.Sprintf(`{"slot":"system","contentHash":"h%d","piece":%d}`, i%4, i%4))}
		} else {
			out[i] = runs.RunEventInput{Type: "step", Payload: json.RawMessage(fmt.Sprintf(`{"tag":%q,"i":%d}`, tag, i))}
		}
	}
	return out
}

// TestRunsTwoProcesses: two Stores on one database are two server processes. Appends through
// either are serialised in one order, and both read the same tail; a cached tail made stale by
// the other process is detected and rebuilt.
func TestRunsTwoProcesses(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	a, b := openStore(t, dsn), openStore(t, dsn)
	stores := []*pg.Store{a, b}

	// Alternately, with eviction and repeats: the result equals one in-process tail fed the
	// same batches in the same order.
	createRun(t, a, "alt", 7)
	ref := runs.NewEventTail(7)
	refRun := runs.Run{MaxEvents: 7}
	for i := range 12 {
		batch := mixed(fmt.Sprintf("alt-%d", i), 5+i%4)
		if _, err := storetest.AppendInputs(t, stores[i%2], "acme", "alt", batch); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		runs.ApplyAppend(&refRun, ref, runs.PrepareEvents(batch, false, time.Time{}))
	}
	want := ref.Snapshot()
	for i, s := range stores {
		r, evs, err := s.RunEvents(t.Context(), "acme", "alt", -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Dropped != want.Dropped || r.NextIndex != ref.NextIndex() || len(evs) != len(want.Events) {
			t.Fatalf("store %d: dropped %d next %d count %d; reference %d %d %d", i, r.Dropped, r.NextIndex, len(evs),
				want.Dropped, ref.NextIndex(), len(want.Events))
		}
		for j, e := range evs {
			w := want.Events[j]
			if e.Index != w.Index || e.Slot != w.Slot || e.Type != w.Type || !bytes.Equal(e.Payload, w.Payload) {
				t.Errorf("store %d event %d = %+v, reference %+v", i, j, e.Event, w)
			}
		}
	}

	// A tail rebuilt from the rows decides repeats on the payloads as sent, as the tail that
	// wrote them did: the recorded payloads are one {dims, norm} summary, the vectors three.
	createRun(t, a, "vectors", 10)
	vec := func(x, y float64) []runs.RunEventInput {
		return []runs.RunEventInput{{Type: runs.AnnouncementType,
			Payload: json.RawMessage(fmt.Sprintf(`{"slot":"rag","contentHash":1,"embedding":[%g,%g]}`, x, y))}}
	}
	for i, batch := range [][]runs.RunEventInput{vec(0.6, 0.8), vec(0.8, 0.6), vec(0.6, 0.8), vec(1, 0), vec(0.8, 0.6)} {
		if _, err := storetest.AppendInputs(t, stores[i%2], "acme", "vectors", batch); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	_, evs, err := b.RunEvents(t.Context(), "acme", "vectors", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var slots []bool
	for _, e := range evs {
		slots = append(slots, e.Slot)
	}
	if want := []bool{true, true, false, true, false}; !reflect.DeepEqual(slots, want) {
		t.Errorf("vectors through two processes: slots %v, want %v", slots, want)
	}

	// Concurrently through both: every event once, each batch contiguous, one tail.
	createRun(t, a, "conc", 100_000)
	const writers, batches, per = 6, 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for k := range batches {
				in := make([]runs.RunEventInput, per)
				for i := range in {
					in[i] = runs.RunEventInput{Type: "step", Payload: json.RawMessage(fmt.Sprintf(`{"w":%d,"k":%d,"i":%d}`, w, k, i))}
				}
				if _, err := storetest.AppendInputs(t, stores[(w+k)%2], "acme", "conc", in); err != nil {
					t.Errorf("writer %d batch %d: %v", w, k, err)
				}
			}
		})
	}
	wg.Wait()
	_, ea, err := a.RunEvents(t.Context(), "acme", "conc", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, eb, err := b.RunEvents(t.Context(), "acme", "conc", -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ea, eb) || len(ea) != writers*batches*per {
		t.Fatalf("the two processes disagree or lost events: %d vs %d events", len(ea), len(eb))
	}
	for i := 0; i < len(ea); i += per {
		var first struct{ W, K, I int }
		_ = json.Unmarshal(ea[i].Payload, &first)
		for j := range per {
			var e struct{ W, K, I int }
			_ = json.Unmarshal(ea[i+j].Payload, &e)
			if e.W != first.W || e.K != first.K || e.I != j || ea[i+j].Index != int64(i+j) {
				t.Fatalf("batch at %d interleaved: %s", i, ea[i+j].Payload)
			}
		}
	}
	if n := a.CachedTails() + b.CachedTails(); n == 0 || n > 6 { // three runs, two processes
		t.Errorf("cached tails = %d", n)
	}
}

// TestRunsCrash: batches acknowledged by a server process survive its kill -9. The real
// server binary is built, appended to over HTTP while being killed, restarted on the same
// database, and read back.
func TestRunsCrash(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	bin := filepath.Join(t.TempDir(), "footprint")
	build := exec.Command("go", "build", "-o", bin, "github.com/footprint/footprint/cmd/server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "FOOTPRINT_ADDR="+addr, "FOOTPRINT_LOG_LEVEL=error")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := http.Get("http://" + addr + "/healthz")
			if err == nil {
				res.Body.Close()
				return cmd
			}
			if time.Now().After(deadline) {
				t.Fatalf("server did not come up: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	base := "http://" + addr
	post := func(path, body string) (int, []byte, error) {
		res, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b, nil
	}

	srv := start()
	if code, b, err := post("/v1/runs", `{"runId":"crash","maxEvents":1000000}`); err != nil || code != 201 {
		t.Fatalf("open: %d %s %v", code, b, err)
	}
	// Append batches until the process is killed; remember which were acknowledged.
	var acked []int
	killed := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = srv.Process.Signal(syscall.SIGKILL)
		close(killed)
	}()
	for batch := 0; ; batch++ {
		var evs []string
		for i := range 50 {
			evs = append(evs, fmt.Sprintf(`{"type":"step","payload":{"b":%d,"i":%d}}`, batch, i))
		}
		code, _, err := post("/v1/runs/crash/events", `{"events":[`+strings.Join(evs, ",")+`]}`)
		if err != nil {
			break // the process is gone
		}
		if code == 200 {
			acked = append(acked, batch)
		}
	}
	<-killed
	_ = srv.Wait()
	if len(acked) == 0 {
		t.Fatal("no batch was acknowledged before the kill")
	}

	start()
	res, err := http.Get(base + "/v1/runs/crash")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var rec struct {
		Events []struct {
			Index   int64
			Payload struct{ B, I int }
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	// Every acknowledged batch is there, whole and in order; at most the one in flight at the
	// kill is there without an acknowledgement.
	pos := map[int]int{}
	for k, e := range rec.Events {
		if e.Index != int64(k) {
			t.Fatalf("event %d has index %d", k, e.Index)
		}
		if e.Payload.I == 0 {
			pos[e.Payload.B] = k
		}
	}
	prev := -1
	for _, b := range acked {
		k, ok := pos[b]
		if !ok {
			t.Fatalf("acknowledged batch %d lost after kill -9 (%d acknowledged, %d events read)", b, len(acked), len(rec.Events))
		}
		for i := range 50 {
			if e := rec.Events[k+i]; e.Payload.B != b || e.Payload.I != i {
				t.Fatalf("batch %d not whole at %d", b, k+i)
			}
		}
		if k <= prev {
			t.Fatalf("batch %d out of order", b)
		}
		prev = k
	}
	if extra := len(rec.Events)/50 - len(acked); extra > 1 || len(rec.Events)%50 != 0 {
		t.Errorf("%d events read for %d acknowledged batches", len(rec.Events), len(acked))
	}
	t.Logf("%d acknowledged batches survived kill -9", len(acked))

	// The restarted process appends after the survivors (its tail is rebuilt from the rows).
	if code, b, err := post("/v1/runs/crash/events", `{"events":[{"type":"after","payload":null}]}`); err != nil || code != 200 {
		t.Fatalf("append after restart: %d %s %v", code, b, err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
