package core

import "context"

// The ports to the models this service calls. Their implementations live
// outside core (internal/embedder, internal/llm); core only consumes them.

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

// LLM is a chat-completions provider (OpenAI-compatible: OpenAI, Ollama,
// vLLM, LM Studio). Implementations live outside core (internal/llm) and are
// safe for concurrent use.
type LLM interface {
	// Info describes the provider (id, default model).
	Info() LLMInfo
	// Complete runs one chat completion. Failures wrap ErrUnavailable when
	// retrying later may help (network, 429, 5xx, timeouts); their messages
	// never carry provider keys or response bodies.
	Complete(ctx context.Context, req ChatRequest) (ChatResponse, error)
}

// ChatRequest is one chat completion request.
type ChatRequest struct {
	Model    string
	Messages []Message
	// MaxTokens bounds the completion (0: provider default).
	MaxTokens int
	// Temperature (nil: provider default).
	Temperature *float64
	// JSONSchema, when set, asks for a JSON object matching this schema
	// (response_format json_schema; providers that cannot are asked for
	// json_object and the caller validates).
	JSONSchema map[string]any
}

// ChatResponse is a completion and its cost as the provider reported it.
type ChatResponse struct {
	Content      string
	Model        string
	InputTokens  int64
	OutputTokens int64
}
