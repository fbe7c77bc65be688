package main

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/telemetry"
)

// Config is everything the server reads from its environment. Every field
// is documented in the README with its variable and default.
type Config struct {
	Addr             string // FOOTPRINT_ADDR
	DatabaseURL      string // DATABASE_URL; empty: in-memory store
	APIKeys          []server.APIKey
	CORSOrigins      []string      // FOOTPRINT_CORS_ORIGINS
	Embedders        string        // FOOTPRINT_EMBEDDERS (see internal/embed)
	LLMs             string        // FOOTPRINT_LLMS
	MaxBodyBytes     int64         // FOOTPRINT_MAX_BODY_BYTES
	RequestTimeout   time.Duration // FOOTPRINT_REQUEST_TIMEOUT
	ShutdownTimeout  time.Duration // FOOTPRINT_SHUTDOWN_TIMEOUT
	DrainDelay       time.Duration // FOOTPRINT_DRAIN_DELAY; 0: none
	CursorSecret     string        // FOOTPRINT_CURSOR_SECRET
	LogLevel         string        // FOOTPRINT_LOG_LEVEL
	LogFormat        string        // FOOTPRINT_LOG_FORMAT
	StatementTimeout time.Duration // FOOTPRINT_DB_STATEMENT_TIMEOUT
	LockTimeout      time.Duration // FOOTPRINT_DB_LOCK_TIMEOUT
	IdempotencyTTL   time.Duration // FOOTPRINT_IDEMPOTENCY_TTL
	SweepInterval    time.Duration // FOOTPRINT_SWEEP_INTERVAL
	MemoryCacheTTL   time.Duration // FOOTPRINT_MEMORY_CACHE_TTL
	MaxOpenRuns      int           // FOOTPRINT_MAX_OPEN_RUNS
	RunRetention     time.Duration // FOOTPRINT_RUN_RETENTION
	RateLimit        float64       // FOOTPRINT_RATE_LIMIT, requests/s per tenant; 0: off
	RateBurst        int           // FOOTPRINT_RATE_BURST
	MetricsAddr      string        // FOOTPRINT_METRICS_ADDR; empty: /metrics on Addr
	CaptureContent   bool          // OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
}

// loadConfig reads and validates the configuration. Every error names the
// variable and says what would be accepted.
func loadConfig(getenv func(string) string) (Config, error) {
	c := Config{
		Addr:         or(getenv("FOOTPRINT_ADDR"), "127.0.0.1:8080"),
		DatabaseURL:  strings.TrimSpace(getenv("DATABASE_URL")),
		Embedders:    getenv("FOOTPRINT_EMBEDDERS"),
		LLMs:         getenv("FOOTPRINT_LLMS"),
		CursorSecret: getenv("FOOTPRINT_CURSOR_SECRET"),
		LogLevel:     or(getenv("FOOTPRINT_LOG_LEVEL"), "info"),
		LogFormat:    or(getenv("FOOTPRINT_LOG_FORMAT"), "text"),
	}
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("FOOTPRINT_ADDR=%q: want host:port, e.g. 127.0.0.1:8080", c.Addr))
	}
	c.MetricsAddr = strings.TrimSpace(getenv("FOOTPRINT_METRICS_ADDR"))
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("FOOTPRINT_METRICS_ADDR=%q: want host:port, e.g. 127.0.0.1:9090", c.MetricsAddr))
		} else if c.MetricsAddr == c.Addr && !strings.HasSuffix(c.Addr, ":0") {
			errs = append(errs, fmt.Errorf("FOOTPRINT_METRICS_ADDR=%q: want another address than FOOTPRINT_ADDR; leave it unset to serve /metrics there", c.MetricsAddr))
		}
	}
	capture, err := telemetry.CaptureContent(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.CaptureContent = capture
	keys, err := parseAPIKeys(getenv("FOOTPRINT_API_KEYS"))
	if err != nil {
		errs = append(errs, err)
	}
	c.APIKeys = keys
	for _, o := range splitList(getenv("FOOTPRINT_CORS_ORIGINS")) {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			errs = append(errs, fmt.Errorf("FOOTPRINT_CORS_ORIGINS: %q is not an origin; want e.g. https://app.example.com", o))
		}
		c.CORSOrigins = append(c.CORSOrigins, o)
	}
	c.MaxBodyBytes = parseInt(getenv, "FOOTPRINT_MAX_BODY_BYTES", 1<<20, 1024, 64<<20, &errs)
	c.RequestTimeout = parseDuration(getenv, "FOOTPRINT_REQUEST_TIMEOUT", 30*time.Second, &errs)
	c.ShutdownTimeout = parseDuration(getenv, "FOOTPRINT_SHUTDOWN_TIMEOUT", 15*time.Second, &errs)
	if v := strings.TrimSpace(getenv("FOOTPRINT_DRAIN_DELAY")); v != "0" {
		c.DrainDelay = parseDuration(getenv, "FOOTPRINT_DRAIN_DELAY", 0, &errs)
	}
	if c.DrainDelay >= c.ShutdownTimeout {
		errs = append(errs, fmt.Errorf("FOOTPRINT_DRAIN_DELAY=%s: want less than FOOTPRINT_SHUTDOWN_TIMEOUT (%s), which it counts against", c.DrainDelay, c.ShutdownTimeout))
	}
	c.StatementTimeout = parseDuration(getenv, "FOOTPRINT_DB_STATEMENT_TIMEOUT", 10*time.Second, &errs)
	c.LockTimeout = parseDuration(getenv, "FOOTPRINT_DB_LOCK_TIMEOUT", 3*time.Second, &errs)
	c.IdempotencyTTL = parseDuration(getenv, "FOOTPRINT_IDEMPOTENCY_TTL", 24*time.Hour, &errs)
	c.SweepInterval = parseDuration(getenv, "FOOTPRINT_SWEEP_INTERVAL", 5*time.Minute, &errs)
	c.MaxOpenRuns = int(parseInt(getenv, "FOOTPRINT_MAX_OPEN_RUNS", 1000, 1, 1_000_000, &errs))
	c.RunRetention = parseDuration(getenv, "FOOTPRINT_RUN_RETENTION", core.DefaultAuditRetention, &errs)
	c.RateLimit = parseRate(getenv, "FOOTPRINT_RATE_LIMIT", 200, &errs)
	c.RateBurst = int(parseInt(getenv, "FOOTPRINT_RATE_BURST", int64(max(1, math.Ceil(2*c.RateLimit))), 1, 1_000_000, &errs))
	c.MemoryCacheTTL = 2 * time.Second
	if v := strings.TrimSpace(getenv("FOOTPRINT_MEMORY_CACHE_TTL")); v == "0" {
		c.MemoryCacheTTL = 0
	} else {
		c.MemoryCacheTTL = parseDuration(getenv, "FOOTPRINT_MEMORY_CACHE_TTL", 2*time.Second, &errs)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("FOOTPRINT_LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("FOOTPRINT_LOG_FORMAT=%q: want text or json", c.LogFormat))
	}
	if c.CursorSecret != "" && len(c.CursorSecret) < 16 {
		errs = append(errs, errors.New("FOOTPRINT_CURSOR_SECRET: want at least 16 characters"))
	}
	return c, errors.Join(errs...)
}

// parseAPIKeys reads `tenant:key` pairs separated by commas. Keys are never
// echoed in errors.
func parseAPIKeys(s string) ([]server.APIKey, error) {
	var keys []server.APIKey
	seen := map[string]bool{}
	for i, pair := range splitList(s) {
		tenant, key, ok := strings.Cut(pair, ":")
		tenant, key = strings.TrimSpace(tenant), strings.TrimSpace(key)
		if !ok || tenant == "" || key == "" {
			return nil, fmt.Errorf("FOOTPRINT_API_KEYS: entry %d is not tenant:key", i+1)
		}
		if len(key) < 16 {
			return nil, fmt.Errorf("FOOTPRINT_API_KEYS: entry %d (tenant %q): keys must be at least 16 characters", i+1, tenant)
		}
		if len(tenant) > 64 {
			return nil, fmt.Errorf("FOOTPRINT_API_KEYS: entry %d: tenant names are at most 64 characters", i+1)
		}
		if seen[key] {
			return nil, fmt.Errorf("FOOTPRINT_API_KEYS: entry %d (tenant %q) repeats a key already given", i+1, tenant)
		}
		seen[key] = true
		keys = append(keys, server.APIKey{Tenant: tenant, Key: key})
	}
	return keys, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func or(s, def string) string {
	if s = strings.TrimSpace(s); s == "" {
		return def
	}
	return s
}

func parseInt(getenv func(string) string, name string, def, lo, hi int64, errs *[]error) int64 {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		*errs = append(*errs, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, s, lo, hi))
		return def
	}
	return n
}

func parseDuration(getenv func(string) string, name string, def time.Duration, errs *[]error) time.Duration {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		*errs = append(*errs, fmt.Errorf("%s=%q: want a positive duration such as 30s or 500ms", name, s))
		return def
	}
	return d
}

// parseRate reads a non-negative requests-per-second figure (0 disables).
func parseRate(getenv func(string) string, name string, def float64, errs *[]error) float64 {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e6 {
		*errs = append(*errs, fmt.Errorf("%s=%q: want requests per second from 0 (off) to 1000000, e.g. 200 or 0.5", name, s))
		return def
	}
	return f
}
