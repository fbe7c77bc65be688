// Package embed holds footprint's implementations of core.Embedder: the
// built-in offline feature-hashing embedder (Hash) and HTTP clients for
// OpenAI-compatible servers (OpenAI: OpenAI, vLLM, LM Studio, TEI) and for
// Ollama. ParseSpecs and Build turn the FOOTPRINT_EMBEDDERS environment
// variable into configured embedders.
//
// Every embedder returns L2-normalised vectors of a fixed dimension and
// refuses to return anything else: a remote vector that is the wrong length,
// non-finite or zero is an error, never a silently stored row. Error messages
// are safe to log: they never carry an API key or a provider's response body.
package embedder
