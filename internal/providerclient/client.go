package providerclient

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
)

// Limits shared by every remote provider.
const (
	DefaultMaxRetries    = 3
	MaxMaxRetries        = 10
	DefaultMaxRetryAfter = 10 * time.Second

	// maxDrainBytes is how much of an error body is read (and discarded)
	// so the connection can be reused.
	maxDrainBytes = 64 << 10
)

// Outcomes passed to Config.Counter.
const (
	OutcomeOK    = "ok"    // the call succeeded
	OutcomeRetry = "retry" // an attempt failed and will be retried
	OutcomeError = "error" // the call failed
)

// Backoff tunes the delays between retries. A zero field means the
// default the provider's package gives it (Config.DefaultBackoff).
type Backoff struct {
	// Base is the nominal delay before the first retry; it doubles for
	// each further retry up to Max. The actual delay is drawn uniformly
	// from [nominal/2, nominal] so that clients that failed together do
	// not retry together.
	Base, Max time.Duration
	// MaxRetryAfter is the longest Retry-After (on 429 and 503) that is
	// honoured. A provider that asks for a longer pause gets no retry: the
	// call fails at once with core.ErrUnavailable and Error.RetryAfter
	// set, rather than holding the caller's request open.
	MaxRetryAfter time.Duration
}

func (b Backoff) withDefaults(def Backoff) (Backoff, error) {
	if b.Base < 0 || b.Max < 0 || b.MaxRetryAfter < 0 {
		return b, errors.New("backoff durations must not be negative")
	}
	if b.Base == 0 {
		b.Base = def.Base
	}
	if b.Max == 0 {
		b.Max = max(def.Max, b.Base)
	}
	if b.MaxRetryAfter == 0 {
		b.MaxRetryAfter = cmp.Or(def.MaxRetryAfter, DefaultMaxRetryAfter)
	}
	return b, nil
}

// delay returns the wait before retry number n (1-based).
func (b Backoff) delay(n int) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + rand.N(d-half+1)
}

// Error is a failed call to a remote provider. Its message is built only
// from the provider's id, the HTTP status and fixed text — never the API
// key, the URL or the provider's response body — so it is safe to log and
// to return to clients.
//
// It unwraps to core.ErrUnavailable when the failure is worth retrying later
// (transport error, timeout, 429, a 5xx but 501 and 505) and to nothing otherwise (a 4xx
// such as a bad key or unknown model, or a malformed response), which callers
// should treat as an internal error.
type Error struct {
	Provider   string        // the provider's id
	StatusCode int           // the HTTP status, 0 if no response arrived
	Attempts   int           // requests made, including the failed ones
	RetryAfter time.Duration // the provider's Retry-After, if it sent one
	Temporary  bool          // whether it wraps core.ErrUnavailable
	label      string        // what the provider is ("embedder", "llm")
	reason     string        // log-safe text composed in this package
	cause      error         // the transport error, if any; see Cause
	retryable  bool          // whether this attempt may be retried
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %q: %s", e.label, e.Provider, e.reason)
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return msg
}

// Unwrap returns core.ErrUnavailable for temporary failures, else nil. It
// deliberately does not return the transport error: an attempt's own timeout
// must not pass for the caller's context.DeadlineExceeded.
func (e *Error) Unwrap() error {
	if e.Temporary {
		return core.ErrUnavailable
	}
	return nil
}

// Cause returns the underlying transport error, if any, for debugging. Its
// text is NOT log-safe: net/http's messages can quote the URL and bytes the
// server sent.
func (e *Error) Cause() error { return e.cause }

// Config configures a Client. The Default* fields are the calling
// package's defaults for the zero values of the fields they name.
type Config struct {
	// Label says what the provider is, e.g. "embedder" or "llm"; every
	// error message starts with it and the quoted ID.
	Label string
	ID    string
	// BaseURL is the server root (DefaultBaseURL when empty). Path is
	// appended to it, unless the base already ends with Path's first
	// segment, so that ".../v1" and ".../api" are not doubled.
	BaseURL, DefaultBaseURL, Path string
	APIKey                        string // sent as "Authorization: Bearer"; omitted when empty
	// Timeout bounds each attempt, response body included; the caller's
	// context bounds the whole call. Negative is an error.
	Timeout, DefaultTimeout time.Duration
	// MaxRetries bounds retries after the first attempt: 0 means
	// DefaultMaxRetries, a negative value means none, at most
	// MaxMaxRetries.
	MaxRetries              int
	Backoff, DefaultBackoff Backoff
	// MaxResponseBytes bounds a success body; a larger one is a malformed
	// response.
	MaxResponseBytes int64
	HTTPClient       *http.Client // optional; its own Timeout should be 0
	// Counter, if set, is called with the id and OutcomeRetry for each
	// failed attempt that will be retried. Callers report the call's
	// final outcome with Client.Count. It must be safe for concurrent use.
	Counter func(provider, outcome string)
	// TracerProvider, if set, traces every attempt as an HTTP client span
	// and sends the caller's trace context (W3C traceparent) with it; nil:
	// requests carry no trace context (telemetry.go).
	TracerProvider trace.TracerProvider
}

// Client posts JSON to one provider endpoint with retries. Safe for
// concurrent use.
type Client struct {
	label, id, endpoint, apiKey string
	timeout                     time.Duration
	retries                     int
	backoff                     Backoff
	maxBody                     int64
	http                        *http.Client
	counter                     func(provider, outcome string)
	tracer                      trace.Tracer // nil: not traced
	host                        string
	port                        int
}

// New validates cfg and returns a client. It makes no request. Its errors
// are bare details ("base URL has no host") for the caller to prefix; they
// never quote the URL or the key. It does not check the id: callers do, in
// their own words.
func New(cfg Config) (*Client, error) {
	base := cmp.Or(cfg.BaseURL, cfg.DefaultBaseURL)
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, errors.New("base URL does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("base URL must start with http:// or https://")
	case u.Host == "":
		return nil, errors.New("base URL has no host")
	case u.User != nil:
		return nil, errors.New("base URL must not carry credentials; set the API key instead")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, errors.New("base URL must not have a query or fragment")
	}
	basePath := strings.TrimSuffix(u.Path, "/")
	first, rest, _ := strings.Cut(strings.TrimPrefix(cfg.Path, "/"), "/")
	if strings.HasSuffix(basePath, "/"+first) {
		u.Path = basePath + "/" + rest
	} else {
		u.Path = basePath + cfg.Path
	}
	if strings.ContainsFunc(cfg.APIKey, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return nil, errors.New("API key contains control characters")
	}
	timeout := cmp.Or(cfg.Timeout, cfg.DefaultTimeout)
	if timeout < 0 {
		return nil, fmt.Errorf("timeout must be positive, got %s", timeout)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	case retries > MaxMaxRetries:
		return nil, fmt.Errorf("max retries must be at most %d, got %d", MaxMaxRetries, retries)
	}
	backoff, err := cfg.Backoff.withDefaults(cfg.DefaultBackoff)
	if err != nil {
		return nil, err
	}
	client := cfg.HTTPClient
	if client == nil {
		// No client-wide timeout: each attempt gets its own deadline.
		client = &http.Client{}
	}
	c := &Client{label: cfg.Label, id: cfg.ID, endpoint: u.String(), apiKey: cfg.APIKey,
		timeout: timeout, retries: retries, backoff: backoff, maxBody: cfg.MaxResponseBytes,
		http: client, counter: cfg.Counter, host: u.Hostname(), port: portOf(u)}
	if cfg.TracerProvider != nil {
		c.http = tracedClient(client, cfg.TracerProvider)
		c.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	return c, nil
}

// Count reports a call's final outcome (OutcomeOK or OutcomeError) to
// Config.Counter, if set.
func (c *Client) Count(outcome string) {
	if c.counter != nil {
		c.counter(c.id, outcome)
	}
}

// Malformed returns the error for a 2xx response the caller could not use,
// received after attempts requests. reason must be log-safe: fixed text,
// never the body's values (see DescribeJSONError). It is not temporary.
func (c *Client) Malformed(attempts int, reason string) *Error {
	return &Error{Provider: c.id, StatusCode: http.StatusOK, Attempts: attempts, label: c.label,
		reason: "malformed response: " + reason}
}

// Post sends body (JSON), retrying temporary failures, and returns the 2xx
// body and the number of attempts made. It retries only transport errors,
// timeouts and 429/500/502/503/504, at most MaxRetries times, and returns
// promptly when ctx is done (with an error wrapping ctx.Err()). Other
// failures are *Error.
func (c *Client) Post(ctx context.Context, body []byte) ([]byte, int, error) {
	for attempt := 1; ; attempt++ {
		data, perr := c.once(ctx, body)
		if perr == nil {
			return data, attempt, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, attempt, fmt.Errorf("%s %q: %w", c.label, c.id, err)
		}
		perr.Attempts = attempt
		if !perr.retryable || attempt > c.retries {
			return nil, attempt, perr
		}
		wait := c.backoff.delay(attempt)
		if perr.RetryAfter > 0 {
			if perr.RetryAfter > c.backoff.MaxRetryAfter {
				perr.reason += fmt.Sprintf("; provider asked to wait %s, longer than the %s this server will hold a request",
					perr.RetryAfter, c.backoff.MaxRetryAfter)
				return nil, attempt, perr
			}
			wait = perr.RetryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			perr.reason += "; no time left to retry before the request deadline"
			return nil, attempt, perr
		}
		c.Count(OutcomeRetry)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, attempt, fmt.Errorf("%s %q: %w", c.label, c.id, ctx.Err())
		case <-timer.C:
		}
	}
}

// once makes one request with its own timeout.
func (c *Client) once(ctx context.Context, body []byte) ([]byte, *Error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(0, "cannot build request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "footprint")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(err, actx)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
		perr := c.fail(resp.StatusCode,
			fmt.Sprintf("provider returned HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
		// 501 and 505 say the provider does not do what was asked (a base URL that is not an
		// embeddings or chat API, say): waiting will not change that.
		perr.Temporary = resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented && resp.StatusCode != http.StatusHTTPVersionNotSupported
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			perr.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			perr.retryable = true
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			perr.retryable = true
		}
		return nil, perr
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBody+1))
	if err != nil {
		return nil, c.transportError(err, actx)
	}
	if int64(len(data)) > c.maxBody {
		return nil, c.fail(resp.StatusCode, fmt.Sprintf("malformed response: larger than %d MiB", c.maxBody>>20))
	}
	return data, nil
}

// fail returns a non-temporary, non-retryable error with log-safe reason.
func (c *Client) fail(status int, reason string) *Error {
	return &Error{Provider: c.id, StatusCode: status, label: c.label, reason: reason}
}

// transportError classifies err into fixed text. The error's own message is
// not used: net/http's can quote the URL or bytes the server sent.
func (c *Client) transportError(err error, actx context.Context) *Error {
	reason := "transport error"
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
	)
	switch {
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		reason = fmt.Sprintf("timed out after %s", c.timeout)
	case errors.As(err, &dnsErr):
		reason = "DNS lookup of the provider's host failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.As(err, &certErr) || errors.As(err, &recErr):
		reason = "TLS handshake failed"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		reason = "connection closed by the provider"
	case errors.As(err, &netErr) && netErr.Timeout():
		reason = "network timeout"
	}
	perr := c.fail(0, "request failed: "+reason)
	perr.Temporary, perr.retryable, perr.cause = true, true, err
	return perr
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
// It returns 0 if the header is absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Clamp before converting so a huge value cannot overflow.
		return time.Duration(min(secs, 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// DescribeJSONError turns a decoding error into text that quotes nothing
// from the body: encoding/json's own messages can include offending values.
func DescribeJSONError(err error) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q has a value of the wrong type or out of range for %s", typ.Field, typ.Type)
	default:
		return "invalid JSON"
	}
}
