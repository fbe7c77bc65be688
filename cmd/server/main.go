// Command server runs the footprint HTTP service.
//
// With no configuration it starts on the embedded defaults — in-memory
// store, built-in offline embedder, single tenant — and says so. Set
// DATABASE_URL for Postgres + pgvector. Every variable is documented in the
// README.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}
