// Package provider is the plumbing that footprint's remote providers share:
// the embedders in internal/embed and the chat providers in internal/llm.
// Both talk JSON over HTTP to a server that may be slow, rate-limited or
// down, and both are configured from an environment variable holding a list
// of id=kind[:key=value]... specs. This package holds one copy of each:
//
//   - Client, a retrying JSON-over-HTTP POST: bearer key, a timeout per
//     attempt, bounded retries only on transport errors, timeouts, 429, 500,
//     502, 503 and 504, Retry-After honoured up to a cap, jittered exponential backoff
//     that gives up promptly when the caller's context ends, and a Counter
//     hook for metrics. Its failures are *Error, whose messages are safe to
//     log and which unwrap to core.ErrUnavailable when retrying may help.
//   - SpecList, the parser for spec lists such as FOOTPRINT_EMBEDDERS and
//     FOOTPRINT_LLMS: splitting on ";" and ",", telling a ":name=" option
//     from the ":" of a URL's port, refusing API keys written inline, and
//     *SpecError, which gives a spec's position and never quotes a secret.
//
// What differs between embedders and chat providers (request and response
// shapes, kinds, defaults, which keys a spec takes) stays in their
// packages. This package imports only internal/core, for the error kinds
// and the id pattern; core must not import it.
package providerclient
