// Package benchkit holds what the benchmark commands under bench/ (turns,
// recall and soak) share: the command's signal-aware main, a fresh database
// created from an admin DSN and dropped at exit, the real service behind the
// real HTTP handler on a loopback listener, and latency summaries. It is for
// those commands only, never for the server or its packages.
package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
)

// Main runs run with a context that is cancelled on SIGINT or SIGTERM; an
// error is printed as "<command>: <error>" and exits with status 1.
func Main(command string, run func(ctx context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, command+":", err)
		os.Exit(1)
	}
}

// Usage prints "<command>: <msg>" for a bad command line and exits with
// status 2.
func Usage(command, msg string) {
	fmt.Fprintln(os.Stderr, command+": "+msg)
	os.Exit(2)
}

// firstNonEmpty returns the first of s that is not empty, or "".
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Percentile is the p-quantile (0..1) of sorted, nearest rank; 0 when empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Ms is d in (fractional) milliseconds, for tables.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// StartCPUProfile starts a CPU profile written to path and returns the function that stops it
// and closes the file. An empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// serverGCPercent is the GOGC cmd/server runs with on the Postgres store (postgresGCPercent in
// cmd/server/gctune.go, whose comment says why). The benchmarks run the service in their own
// process, so they pace their collector the same way.
const serverGCPercent = 400

// PaceGCAsServer sets the collector as cmd/server does on the Postgres store unless GOGC is set,
// and describes the setting in force.
func PaceGCAsServer(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return "GOGC=" + v + " (from the environment)"
	}
	debug.SetGCPercent(serverGCPercent)
	return "GOGC=" + strconv.Itoa(serverGCPercent) + " (as cmd/server on the Postgres store)"
}
