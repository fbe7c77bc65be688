package main

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// spareConns tracks the connections that have not sent a request yet (http.StateNew), so that
// a shutdown can close those that have waited long enough to be spares rather than requests on
// their way.
//
// http.Server.Shutdown waits for every connection to go idle, and counts one that has never
// sent a byte as busy for its first 5 seconds (golang/go#22682). A client that dials ahead of
// need holds every shutdown for those 5 s: an http.Transport keeps a connection it dialed for a
// request that another connection then served (TestGracefulShutdownUnderLoad's own client did,
// once built with Go 1.27), and load balancers keep warm pools. With a FOOTPRINT_SHUTDOWN_TIMEOUT
// under 5 s the drain then ended in "context deadline exceeded" with nothing left to drain.
type spareConns struct {
	mu    sync.Mutex
	since map[net.Conn]time.Time
}

func newSpareConns() *spareConns { return &spareConns{since: map[net.Conn]time.Time{}} }

// track is the server's ConnState hook.
func (s *spareConns) track(c net.Conn, st http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st == http.StateNew {
		s.since[c] = time.Now()
	} else {
		delete(s.since, c)
	}
}

// closeOlderThan closes the connections that have been open for at least age without sending a
// request, and returns how many it closed. The server sees each one fail its first read and
// forgets it.
func (s *spareConns) closeOlderThan(age time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c, t := range s.since {
		if time.Since(t) >= age {
			_ = c.Close()
			delete(s.since, c)
			n++
		}
	}
	return n
}

// spareGrace is how long a connection may stay silent during a shutdown before it counts as a
// spare: a request on its way sends its first bytes within milliseconds of the dial.
const spareGrace = time.Second

// shutdown is srv.Shutdown, closing spare connections (see spareConns) as they reach spareGrace
// while it waits for the rest.
func shutdown(ctx context.Context, srv *http.Server, spares *spareConns) error {
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(spareGrace / 4)
		defer tick.Stop()
		for {
			spares.closeOlderThan(spareGrace)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return srv.Shutdown(ctx)
}
