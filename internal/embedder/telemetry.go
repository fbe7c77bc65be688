package embedder

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// startSpan starts a remote Embed's GenAI "embeddings {model}" span: the
// model, the dimensions expected (0 until learned), how many texts; never
// the texts themselves.
func (r *remote) startSpan(ctx context.Context, inputs int) (context.Context, trace.Span) {
	provider := r.cfg.kind // "openai" is the conventions' name; "ollama" is Ollama's own API
	attrs := []attribute.KeyValue{attribute.Int("footprint.embedder.inputs", inputs)}
	if d := r.dims.Load(); d > 0 {
		attrs = append(attrs, attribute.Int64("gen_ai.embeddings.dimension.count", d))
	}
	return r.cfg.client.StartSpan(ctx, "embeddings", provider, r.cfg.model, attrs...)
}

func (r *remote) endSpan(span trace.Span, err error) {
	if err == nil && span.IsRecording() {
		span.SetAttributes(attribute.Int64("gen_ai.embeddings.dimension.count", r.dims.Load()))
	}
	providerclient.EndSpan(span, err)
}

// Observer is told about every Embed call of the embedders Build wraps with
// WithObserver: the embedder's id, how many texts, how long it took, and its
// error (nil on success). It must be cheap and safe for concurrent use.
type Observer func(embedder string, inputs int, d time.Duration, err error)

// BuildOption configures Build.
type BuildOption func(*buildOptions)

type buildOptions struct {
	tp       trace.TracerProvider
	observer Observer
}

// WithTracerProvider traces the remote embedders' calls with tp (see
// OpenAIConfig.TracerProvider). The built-in hash embedder, which makes no
// call, makes no span.
func WithTracerProvider(tp trace.TracerProvider) BuildOption {
	return func(o *buildOptions) { o.tp = tp }
}

// WithObserver reports every Embed call of every built embedder to obs.
func WithObserver(obs Observer) BuildOption {
	return func(o *buildOptions) { o.observer = obs }
}

// Observe returns e with each of its Embed calls reported to obs.
func Observe(e core.Embedder, obs Observer) core.Embedder {
	return observed{Embedder: e, id: e.Info().ID, obs: obs}
}

// observed reports each Embed of the embedder it wraps.
type observed struct {
	core.Embedder
	id  string
	obs Observer
}

func (o observed) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	vs, err := o.Embedder.Embed(ctx, texts)
	o.obs(o.id, len(texts), time.Since(start), err)
	return vs, err
}
