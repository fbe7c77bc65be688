package server

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics holds the HTTP instruments. Labels use the route pattern, never
// the raw path, so cardinality stays bounded whatever clients send.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	followers prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_http_requests_total",
			Help: "HTTP requests served, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "footprint_http_request_duration_seconds",
			Help:    "HTTP request latency, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
		followers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "footprint_run_followers",
			Help: "Open Server-Sent Events streams following a run.",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.followers)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// observe records metrics and writes one access-log line per request,
// carrying the request id.
func (m *metrics) observe(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			if rec.status == 0 {
				rec.status = http.StatusOK
				if r.Context().Err() != nil {
					// Nothing was written because the client went away (or the
					// deadline passed): nginx's 499, not a success.
					rec.status = 499
				}
			}
			route := "unmatched"
			if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
				route = rc.RoutePattern()
			}
			elapsed := time.Since(start)
			nameSpan(r, route) // tracing.go
			m.requests.WithLabelValues(r.Method, route, strconv.Itoa(rec.status)).Inc()
			m.duration.WithLabelValues(r.Method, route).Observe(elapsed.Seconds())
			logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
				slog.String("requestId", requestIDFrom(r.Context())),
				slog.String("method", r.Method), slog.String("route", route),
				slog.Int("status", rec.status), slog.Float64("ms", float64(elapsed.Microseconds())/1000))
		})
	}
}
