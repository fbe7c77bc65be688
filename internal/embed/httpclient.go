package embed

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Defaults and limits shared by the HTTP embedders.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxRetries    = 3
	MaxMaxRetries        = 10
	DefaultBatchSize     = 256
	MaxBatchSize         = 2048 // OpenAI's own limit on inputs per request
	MaxRemoteDims        = 65536
	DefaultBackoffBase   = 200 * time.Millisecond
	DefaultBackoffMax    = 2 * time.Second
	DefaultMaxRetryAfter = 10 * time.Second

	// maxResponseBytes bounds one response body: 2048 inputs × 4096
	// dimensions as JSON text is about 200 MB, but a realistic batch (256 ×
	// 3072) is under 20 MB; anything beyond this is a misbehaving server.
	maxResponseBytes = 64 << 20
	// maxDrainBytes is how much of an error body is read (and discarded) so
	// the connection can be reused.
	maxDrainBytes = 64 << 10
)

// Backoff tunes the delays between retries. The zero value means the
// defaults.
type Backoff struct {
	// Base is the nominal delay before the first retry (default 200ms);
	// it doubles for each further retry. The actual delay is drawn
	// uniformly from [nominal/2, nominal] so that clients that failed
	// together do not retry together.
	Base time.Duration
	// Max caps the nominal delay (default 2s).
	Max time.Duration
	// MaxRetryAfter is the longest Retry-After (on 429 and 503) that is
	// honoured, default 10s. A provider that asks for a longer pause gets
	// no retry: the call fails at once with ErrUnavailable and
	// ProviderError.RetryAfter set, rather than holding the caller's
	// request open.
	MaxRetryAfter time.Duration
}

func (b Backoff) withDefaults() (Backoff, error) {
	if b.Base < 0 || b.Max < 0 || b.MaxRetryAfter < 0 {
		return b, errors.New("backoff durations must not be negative")
	}
	if b.Base == 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max == 0 {
		b.Max = max(DefaultBackoffMax, b.Base)
	}
	if b.MaxRetryAfter == 0 {
		b.MaxRetryAfter = DefaultMaxRetryAfter
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

// ProviderError is a failed call to a remote embedder. Its message is built
// only from the embedder id, the HTTP status and fixed text — never the API
// key, the URL or the provider's response body — so it is safe to log.
//
// It unwraps to core.ErrUnavailable when the failure is worth retrying later
// (transport error, timeout, 429, any 5xx) and to nothing otherwise (a 4xx
// such as a bad key or unknown model, or a malformed response), which callers
// should treat as an internal error.
type ProviderError struct {
	Embedder   string        // the embedder's id
	StatusCode int           // the HTTP status, 0 if no response arrived
	Attempts   int           // requests made, including the failed ones
	RetryAfter time.Duration // the provider's Retry-After, if it sent one
	Temporary  bool          // whether it wraps core.ErrUnavailable
	reason     string        // log-safe text composed in this package
	cause      error         // the transport error, if any; see Cause
	retryable  bool          // whether this attempt may be retried
}

func (e *ProviderError) Error() string {
	msg := fmt.Sprintf("embedder %q: %s", e.Embedder, e.reason)
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return msg
}

// Unwrap returns core.ErrUnavailable for temporary failures, else nil. It
// deliberately does not return the transport error: an attempt's own timeout
// must not pass for the caller's context.DeadlineExceeded.
func (e *ProviderError) Unwrap() error {
	if e.Temporary {
		return core.ErrUnavailable
	}
	return nil
}

// Cause returns the underlying transport error, if any, for debugging. Its
// text is NOT log-safe: net/http's messages can quote the URL and bytes the
// server sent.
func (e *ProviderError) Cause() error { return e.cause }

// wireFormat is what differs between providers: the path, the request body
// and the response shape.
type wireFormat interface {
	// parse decodes a 2xx body into n vectors in input order.
	parse(body []byte, n int) ([][]float32, error)
}

// embedRequest is the request body both OpenAI's /v1/embeddings and Ollama's
// /api/embed accept.
type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

// remoteConfig is the validated configuration shared by OpenAI and Ollama.
type remoteConfig struct {
	id, kind, model, description string
	endpoint                     string
	apiKey                       string
	dims                         int
	sendDims                     bool
	batchSize                    int
	timeout                      time.Duration
	maxRetries                   int
	backoff                      Backoff
	client                       *http.Client
}

// remoteParams has exactly the fields of OpenAIConfig and OllamaConfig, which
// convert to it; the conversion stops compiling if their fields drift apart.
type remoteParams struct {
	ID, BaseURL, APIKey, Model string
	Dimensions                 int
	SendDimensions             bool
	BatchSize                  int
	Timeout                    time.Duration
	MaxRetries                 int
	Backoff                    Backoff
	HTTPClient                 *http.Client
}

// newRemoteConfig validates p. defaultBase is used when p.BaseURL is empty;
// path is appended to the base URL unless the base already ends with its
// first segment (so ".../v1" and ".../api" are not doubled). Error messages
// never echo the URL or the key.
func newRemoteConfig(kind string, p remoteParams, defaultBase, path string) (remoteConfig, error) {
	fail := func(format string, args ...any) (remoteConfig, error) {
		return remoteConfig{}, fmt.Errorf("%s embedder %q: %s", kind, p.ID, fmt.Sprintf(format, args...))
	}
	if err := checkID(p.ID); err != nil {
		return remoteConfig{}, err
	}
	if strings.TrimSpace(p.Model) == "" {
		return fail("model is required")
	}
	base := p.BaseURL
	if base == "" {
		base = defaultBase
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return fail("base URL does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return fail("base URL must start with http:// or https://")
	case u.Host == "":
		return fail("base URL has no host")
	case u.User != nil:
		return fail("base URL must not carry credentials; set the API key instead")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fail("base URL must not have a query or fragment")
	}
	basePath := strings.TrimSuffix(u.Path, "/")
	first, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if strings.HasSuffix(basePath, "/"+first) {
		u.Path = basePath + "/" + rest
	} else {
		u.Path = basePath + path
	}
	if strings.ContainsFunc(p.APIKey, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fail("API key contains control characters")
	}
	if p.Dimensions < 0 || p.Dimensions > MaxRemoteDims {
		return fail("dimensions must be 0 (learn from the first response) or 1..%d, got %d", MaxRemoteDims, p.Dimensions)
	}
	if p.SendDimensions && p.Dimensions == 0 {
		return fail("sending dimensions needs dimensions set")
	}
	batch := p.BatchSize
	if batch == 0 {
		batch = DefaultBatchSize
	}
	if batch < 1 || batch > MaxBatchSize {
		return fail("batch size must be 1..%d, got %d", MaxBatchSize, batch)
	}
	timeout := p.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if timeout < 0 {
		return fail("timeout must be positive, got %s", timeout)
	}
	retries := p.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	case retries > MaxMaxRetries:
		return fail("max retries must be at most %d, got %d", MaxMaxRetries, retries)
	}
	backoff, err := p.Backoff.withDefaults()
	if err != nil {
		return fail("%v", err)
	}
	client := p.HTTPClient
	if client == nil {
		// No client-wide timeout: each attempt gets its own deadline.
		client = &http.Client{}
	}
	return remoteConfig{
		id: p.ID, kind: kind, model: p.Model,
		endpoint: u.String(), apiKey: p.APIKey,
		dims: p.Dimensions, sendDims: p.SendDimensions, batchSize: batch,
		timeout: timeout, maxRetries: retries, backoff: backoff, client: client,
	}, nil
}

// remote is the provider-independent half of OpenAI and Ollama: batching,
// retries, validation and normalisation. Safe for concurrent use.
type remote struct {
	cfg       remoteConfig
	wire      wireFormat
	dims      atomic.Int64 // configured, or learned from the first response
	isDefault bool
}

func newRemote(cfg remoteConfig, wire wireFormat) *remote {
	r := &remote{cfg: cfg, wire: wire}
	r.dims.Store(int64(cfg.dims))
	return r
}

func (r *remote) info() core.EmbedderInfo {
	return core.EmbedderInfo{
		ID:          r.cfg.id,
		Kind:        r.cfg.kind,
		Model:       r.cfg.model,
		Dimensions:  int(r.dims.Load()),
		Default:     r.isDefault,
		Description: r.cfg.description,
	}
}

func (r *remote) embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			return nil, fmt.Errorf("embedder %q: text %d is empty: %w", r.cfg.id, i, core.ErrInvalid)
		}
	}
	for start := 0; start < len(texts); start += r.cfg.batchSize {
		batch := texts[start:min(start+r.cfg.batchSize, len(texts))]
		req := embedRequest{Model: r.cfg.model, Input: batch}
		if r.cfg.sendDims {
			req.Dimensions = r.cfg.dims
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("embedder %q: encoding request: %w", r.cfg.id, err)
		}
		resp, attempts, err := r.post(ctx, body)
		if err != nil {
			return nil, err
		}
		vecs, err := r.wire.parse(resp, len(batch))
		if err == nil {
			err = r.check(vecs, len(batch))
		}
		if err != nil {
			return nil, &ProviderError{Embedder: r.cfg.id, StatusCode: http.StatusOK, Attempts: attempts,
				reason: "malformed response: " + err.Error()}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// check validates and normalises vecs in place: n of them, all of the
// expected dimension, finite and non-zero. Its messages quote no values.
func (r *remote) check(vecs [][]float32, n int) error {
	if len(vecs) != n {
		return fmt.Errorf("%d vectors for %d inputs", len(vecs), n)
	}
	want := int(r.dims.Load())
	if want == 0 {
		got := len(vecs[0])
		if got == 0 || got > MaxRemoteDims {
			return fmt.Errorf("vector 0 has %d dimensions", got)
		}
		// Learn once; a concurrent first call that learned a different
		// size wins and this response then fails the check below.
		r.dims.CompareAndSwap(0, int64(got))
		want = int(r.dims.Load())
	}
	for i, v := range vecs {
		if len(v) != want {
			return fmt.Errorf("vector %d has %d dimensions, want %d", i, len(v), want)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("vector %d has a non-finite value", i)
			}
		}
		if !normalize(v) {
			return fmt.Errorf("vector %d has zero or overflowing norm", i)
		}
	}
	return nil
}

// post sends body, retrying temporary failures, and returns the 2xx body
// and the number of attempts made. It retries only transport errors,
// timeouts and 429/500/502/503/504, at most cfg.maxRetries times, and
// returns promptly when ctx is done.
func (r *remote) post(ctx context.Context, body []byte) ([]byte, int, error) {
	for attempt := 1; ; attempt++ {
		resp, perr := r.once(ctx, body)
		if perr == nil {
			return resp, attempt, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, attempt, fmt.Errorf("embedder %q: %w", r.cfg.id, err)
		}
		perr.Attempts = attempt
		if !perr.retryable || attempt > r.cfg.maxRetries {
			return nil, attempt, perr
		}
		wait := r.cfg.backoff.delay(attempt)
		if perr.RetryAfter > 0 {
			if perr.RetryAfter > r.cfg.backoff.MaxRetryAfter {
				perr.reason += fmt.Sprintf("; provider asked to wait %s, longer than the %s this server will hold a request",
					perr.RetryAfter, r.cfg.backoff.MaxRetryAfter)
				return nil, attempt, perr
			}
			wait = perr.RetryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			perr.reason += "; no time left to retry before the request deadline"
			return nil, attempt, perr
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, attempt, fmt.Errorf("embedder %q: %w", r.cfg.id, ctx.Err())
		case <-timer.C:
		}
	}
}

// once makes one request with its own timeout.
func (r *remote) once(ctx context.Context, body []byte) ([]byte, *ProviderError) {
	actx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, r.cfg.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &ProviderError{Embedder: r.cfg.id, reason: "cannot build request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "footprint")
	if r.cfg.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.apiKey)
	}
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return nil, r.transportError(err, actx)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
		perr := &ProviderError{
			Embedder:   r.cfg.id,
			StatusCode: resp.StatusCode,
			Temporary:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			reason:     fmt.Sprintf("provider returned HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)),
		}
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			perr.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			perr.retryable = true
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			perr.retryable = true
		}
		return nil, perr
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, r.transportError(err, actx)
	}
	if len(data) > maxResponseBytes {
		return nil, &ProviderError{Embedder: r.cfg.id, StatusCode: resp.StatusCode,
			reason: fmt.Sprintf("malformed response: larger than %d MiB", maxResponseBytes>>20)}
	}
	return data, nil
}

// transportError classifies err into fixed text. The error's own message is
// not used: net/http's can quote the URL or bytes the server sent.
func (r *remote) transportError(err error, actx context.Context) *ProviderError {
	reason := "transport error"
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
	)
	switch {
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		reason = fmt.Sprintf("timed out after %s", r.cfg.timeout)
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
	return &ProviderError{Embedder: r.cfg.id, Temporary: true, retryable: true,
		reason: "request failed: " + reason, cause: err}
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

// describeJSONError turns a decoding error into text that quotes nothing
// from the body: encoding/json's own messages can include offending values.
func describeJSONError(err error) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("field %q has a value of the wrong type or out of range for %s", typ.Field, typ.Type)
	default:
		return errors.New("invalid JSON")
	}
}
