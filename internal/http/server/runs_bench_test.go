package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// tailRate measures the in-process tail alone: events/s pushing n plain events.
func tailRate(n int) float64 {
	evs := make([]runs.Event, 1024)
	for i := range evs {
		evs[i] = runs.Event{Type: "step", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d,"tool":"search"}`, i))}
	}
	t := runs.NewEventTail(0)
	start := time.Now()
	for i := range n {
		t.Push(evs[i%len(evs)])
	}
	return float64(n) / time.Since(start).Seconds()
}

// TestRunAppendBenchmark is a benchmark, not a test (it needs a *testing.T for the per-test
// database): events/s appended over HTTP into Postgres, every batch committed before its 200,
// in batches of 100 and 1,000, next to the in-process tail alone, with the ratio.
//
//	export TEST_DATABASE_URL=$(scripts/test-postgres.sh start)
//	FOOTPRINT_BENCH_RUNS=1 go test -run TestRunAppendBenchmark -v ./internal/http/
func TestRunAppendBenchmark(t *testing.T) {
	if os.Getenv("FOOTPRINT_BENCH_RUNS") == "" {
		t.Skip("a benchmark: set FOOTPRINT_BENCH_RUNS=1")
	}
	tail := tailRate(5_000_000)
	t.Logf("in-process tail alone: %.0f events/s", tail)
	e := runsEnv(t, pgtest.Open(t), false, 0)
	for _, batch := range []int{100, 1000} {
		var evs []string
		for i := range batch {
			evs = append(evs, fmt.Sprintf(`{"type":"step","payload":{"n":%d,"tool":"search","args":{"q":"order status"}},"meta":{"wallClockMs":%d}}`, i, 1796019302000+i))
		}
		body := `{"events":[` + strings.Join(evs, ",") + `]}`
		id := fmt.Sprintf("bench-%d", batch)
		res, err := http.Post(e.srv.URL+"/v1/runs", "application/json", strings.NewReader(`{"runId":"`+id+`","maxEvents":1000000}`))
		if err != nil || res.StatusCode != 201 {
			t.Fatalf("open: %v", err)
		}
		res.Body.Close()
		total := 200_000
		start := time.Now()
		for sent := 0; sent < total; sent += batch {
			res, err := http.Post(e.srv.URL+"/v1/runs/"+id+"/events", "application/json", strings.NewReader(body))
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("append: %v", err)
			}
			res.Body.Close()
		}
		rate := float64(total) / time.Since(start).Seconds()
		t.Logf("HTTP, batches of %4d, durable (Postgres commit per batch): %.0f events/s; http/in-process ratio %.4f", batch, rate, rate/tail)
	}
}
