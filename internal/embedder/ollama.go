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

// DefaultOllamaBaseURL is used when OllamaConfig.BaseURL is empty.
const DefaultOllamaBaseURL = "http://localhost:11434"

// OllamaConfig configures an Ollama embeddings client. The fields mean what
// they mean in OpenAIConfig.
type OllamaConfig struct {
	ID string
	// BaseURL is the server root; requests go to {BaseURL}/api/embedder.
	// Default DefaultOllamaBaseURL.
	BaseURL string
	APIKey  string // optional (Ollama itself has none; proxies may)
	Model   string // required, e.g. "nomic-embed-text"
	// Dimensions: 0 means learn from the first response.
	Dimensions     int
	SendDimensions bool
	BatchSize      int
	Timeout        time.Duration
	MaxRetries     int
	Backoff        Backoff
	HTTPClient     *http.Client
	TracerProvider trace.TracerProvider
}

// Ollama embeds through Ollama's POST /api/embedder. Safe for concurrent use.
type Ollama struct{ r *remote }

var _ core.Embedder = (*Ollama)(nil)

// NewOllama validates cfg and returns a client. It makes no request.
func NewOllama(cfg OllamaConfig) (*Ollama, error) {
	rc, err := newRemoteConfig(KindOllama, remoteParams(cfg), DefaultOllamaBaseURL, "/api/embed")
	if err != nil {
		return nil, err
	}
	rc.description = fmt.Sprintf("Semantic embeddings from model %s served by Ollama.", cfg.Model)
	return &Ollama{r: newRemote(rc, ollamaWire{})}, nil
}

// Info describes the embedder. Dimensions is 0 until learned if it was not
// configured.
func (o *Ollama) Info() core.EmbedderInfo { return o.r.info() }

// Embed behaves as OpenAI.Embed does.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return o.r.embed(ctx, texts)
}

type ollamaWire struct{}

func (ollamaWire) parse(body []byte, n int) ([][]float32, error) {
	var resp struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, errors.New(providerclient.DescribeJSONError(err))
	}
	if len(resp.Embeddings) != n {
		return nil, fmt.Errorf("%d vectors for %d inputs", len(resp.Embeddings), n)
	}
	return resp.Embeddings, nil
}
