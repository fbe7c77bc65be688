package embedder

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// Defaults and limits shared by the HTTP embedders.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxRetries    = providerclient.DefaultMaxRetries
	MaxMaxRetries        = providerclient.MaxMaxRetries
	DefaultBatchSize     = 256
	MaxBatchSize         = 2048 // OpenAI's own limit on inputs per request
	MaxRemoteDims        = 65536
	DefaultBackoffBase   = 200 * time.Millisecond
	DefaultBackoffMax    = 2 * time.Second
	DefaultMaxRetryAfter = providerclient.DefaultMaxRetryAfter

	// maxResponseBytes bounds one response body: 2048 inputs × 4096
	// dimensions as JSON text is about 200 MB, but a realistic batch (256 ×
	// 3072) is under 20 MB; anything beyond this is a misbehaving server.
	maxResponseBytes = 64 << 20
)

// Backoff tunes the delays between retries (see providerclient.Backoff). A zero
// field means its default: Base 200ms (doubling per retry, with jitter),
// Max 2s, MaxRetryAfter 10s.
type Backoff = providerclient.Backoff

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
	dims                         int
	sendDims                     bool
	batchSize                    int
	client                       *providerclient.Client // the endpoint, key, timeout and retries
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
	TracerProvider             trace.TracerProvider
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
	client, err := providerclient.New(providerclient.Config{
		Label: "embedder", ID: p.ID,
		BaseURL: p.BaseURL, DefaultBaseURL: defaultBase, Path: path, APIKey: p.APIKey,
		Timeout: p.Timeout, DefaultTimeout: DefaultTimeout, MaxRetries: p.MaxRetries,
		Backoff: p.Backoff, DefaultBackoff: Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax, MaxRetryAfter: DefaultMaxRetryAfter},
		MaxResponseBytes: maxResponseBytes, HTTPClient: p.HTTPClient, TracerProvider: p.TracerProvider,
	})
	if err != nil {
		return fail("%v", err)
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
	return remoteConfig{
		id: p.ID, kind: kind, model: p.Model,
		dims: p.Dimensions, sendDims: p.SendDimensions, batchSize: batch, client: client,
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
		Ranking:     RemoteRanking(),
	}
}

func (r *remote) embed(ctx context.Context, texts []string) (vecs [][]float32, err error) {
	if r.cfg.client.Traced() {
		var span trace.Span
		ctx, span = r.startSpan(ctx, len(texts))
		defer func() { r.endSpan(span, err) }()
	}
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
		resp, attempts, err := r.cfg.client.Post(ctx, body)
		if err != nil {
			return nil, r.failed(err, attempts, "")
		}
		vecs, err := r.wire.parse(resp, len(batch))
		if err == nil {
			err = r.check(vecs, len(batch))
		}
		if err != nil {
			return nil, r.failed(r.cfg.client.Malformed(attempts, err.Error()), attempts, err.Error())
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
