package core

import "context"

// Embedder turns text into vectors. Implementations live outside core
// (internal/embed); core only consumes them. Safe for concurrent use.
type Embedder interface {
	// Info describes the embedder (id, kind, model, dimensions).
	Info() EmbedderInfo
	// Embed returns one L2-normalised vector of Info().Dimensions per text,
	// in order. Provider failures wrap ErrUnavailable; they never carry
	// provider keys or response bodies in their message.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
