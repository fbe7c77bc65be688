package embedder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// DefaultOpenAIBaseURL is used when OpenAIConfig.BaseURL is empty.
const DefaultOpenAIBaseURL = "https://api.openai.com"

// OpenAIConfig configures an OpenAI-compatible embeddings client (OpenAI,
// vLLM, LM Studio, Hugging Face TEI, ...).
type OpenAIConfig struct {
	ID string // the embedder's id; must match core.IDPattern
	// BaseURL is the server root, e.g. "https://api.openai.com" or
	// "http://vllm:8000"; requests go to {BaseURL}/v1/embeddings. A base
	// that already ends in /v1 is accepted. Default DefaultOpenAIBaseURL.
	BaseURL string
	APIKey  string // sent as "Authorization: Bearer"; omitted when empty
	Model   string // required
	// Dimensions is the expected vector size. 0 means learn it from the
	// first response and enforce it from then on (Info reports 0 until
	// then).
	Dimensions int
	// SendDimensions adds "dimensions" to the request, for models that can
	// shorten their output (OpenAI text-embedding-3-*). Needs Dimensions.
	SendDimensions bool
	// BatchSize is the most inputs sent in one request (default 256; TEI's
	// server default accepts only 32).
	BatchSize int
	// Timeout bounds each attempt, response body included (default 30s).
	// The caller's context bounds the whole call.
	Timeout time.Duration
	// MaxRetries bounds retries after the first attempt: 0 means the
	// default (3), a negative value means none, at most MaxMaxRetries.
	MaxRetries int
	Backoff    Backoff
	HTTPClient *http.Client // optional; its Timeout should be 0 (see Timeout)
	// TracerProvider, if set, traces each Embed as a GenAI "embeddings"
	// span (model, dimensions, input count; never the texts) and sends the
	// caller's W3C trace context to the provider; nil: neither.
	TracerProvider trace.TracerProvider
}

// OpenAI embeds through an OpenAI-compatible POST /v1/embeddings endpoint.
// Safe for concurrent use.
type OpenAI struct{ r *remote }

var _ core.Embedder = (*OpenAI)(nil)

// NewOpenAI validates cfg and returns a client. It makes no request.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	rc, err := newRemoteConfig(KindOpenAI, remoteParams(cfg), DefaultOpenAIBaseURL, "/v1/embeddings")
	if err != nil {
		return nil, err
	}
	rc.description = fmt.Sprintf("Semantic embeddings from model %s through an OpenAI-compatible API.", cfg.Model)
	return &OpenAI{r: newRemote(rc, openAIWire{})}, nil
}

// Info describes the embedder. Dimensions is 0 until learned if it was not
// configured.
func (o *OpenAI) Info() core.EmbedderInfo { return o.r.info() }

// Embed returns one unit vector per text, in order, in batches of at most
// BatchSize. An empty text is refused with core.ErrInvalid before any
// request. Provider failures are *core.EmbedderError; temporary ones wrap
// core.ErrUnavailable. If ctx is canceled, the error wraps
// context.Canceled; if its deadline passes first, the error is a temporary
// *core.EmbedderError that also wraps context.DeadlineExceeded.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.r.embed(ctx, texts)
}

type openAIWire struct{}

type openAIResponse struct {
	Data []struct {
		// Index is a pointer to tell "0" from absent: some compatible
		// servers omit it, and then the array order is the input order.
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

func (openAIWire) parse(body []byte, n int) ([][]float32, error) {
	var resp openAIResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, errors.New(providerclient.DescribeJSONError(err))
	}
	if len(resp.Data) != n {
		return nil, fmt.Errorf("%d vectors for %d inputs", len(resp.Data), n)
	}
	out := make([][]float32, n)
	withIndex := 0
	for _, d := range resp.Data {
		if d.Index != nil {
			withIndex++
		}
	}
	for pos, d := range resp.Data {
		i := pos
		switch {
		case withIndex == 0:
		case d.Index == nil:
			return nil, fmt.Errorf("item %d has no index but others do", pos)
		default:
			i = *d.Index
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("item %d has index %d, outside 0..%d", pos, i, n-1)
		}
		if out[i] != nil {
			return nil, fmt.Errorf("index %d appears twice", i)
		}
		if d.Embedding == nil {
			return nil, fmt.Errorf("item %d has no embedding", pos)
		}
		out[i] = d.Embedding
	}
	return out, nil
}
