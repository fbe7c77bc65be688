package benchkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	embedders "github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/telemetry"
)

// Server is the real service behind the real HTTP handler, served on a
// loopback listener, with a keep-alive client for it.
type Server struct {
	App     *app.App
	Handler http.Handler // the real handler the listener serves, for in-process calls
	BaseURL string       // http://127.0.0.1:<port>
	Client  *http.Client // no proxy, no compression, 30 s timeout
	srv     *http.Server
}

// StartServer serves a service over store with the one embedder, with the
// server's own timeouts. maxIdleConns sizes the client's idle pool. Close
// shuts it down.
func StartServer(store app.Store, embedder core.Embedder, maxIdleConns int) (*Server, error) {
	return StartTracedServer(store, embedder, maxIdleConns, nil)
}

// StartTracedServer is StartServer with the service traced by tp as cmd/server
// traces it (requests, the domain's retrieval spans; the store traces itself
// when it was opened with pg.WithTracerProvider); nil tp: StartServer.
func StartTracedServer(store app.Store, embedder core.Embedder, maxIdleConns int, tp trace.TracerProvider) (*Server, error) {
	caps := core.Capabilities{Embedders: []core.EmbedderInfo{embedder.Info()}}
	// The domain's metrics as cmd/server keeps them (on a registry of the server's own).
	metrics := telemetry.NewMetrics(prometheus.NewRegistry())
	emb := embedders.Observe(embedder, metrics.EmbedderCall)
	svc := app.New(store, caps, app.WithEmbedders(emb), app.WithTracing(tp, false), app.WithObserver(metrics))
	// The real server logs one access line per request at info; format them
	// but throw them away, so the cost stays and the terminal stays readable.
	// The handler is cmd/server's (trace and span ids on each line).
	logger := slog.New(telemetry.LogHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})))
	handler, err := server.NewServer(server.Deps{App: svc, Logger: logger, TracerProvider: tp})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      35 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	go func() { _ = srv.Serve(ln) }()
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxIdleConns,
		MaxIdleConnsPerHost: maxIdleConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Server{
		App:     svc,
		Handler: handler,
		BaseURL: "http://" + ln.Addr().String(),
		Client:  &http.Client{Transport: tr, Timeout: 30 * time.Second},
		srv:     srv,
	}, nil
}

// Close shuts the server down, waiting up to 5 s for requests in flight.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}

// DefineMemory defines a memory through the API (def is its JSON), as an
// agent would.
func (s *Server) DefineMemory(def string) error {
	resp, err := s.Client.Post(s.BaseURL+"/v1/memories", "application/json", strings.NewReader(def))
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("define memory %s: %s: %s", def, resp.Status, body)
	}
	return nil
}
