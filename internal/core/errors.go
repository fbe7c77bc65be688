package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Error kinds. Every error core returns wraps exactly one of these, and the
// HTTP layer maps them to statuses in one table. Callers test with errors.Is.
var (
	// ErrNotFound: the resource does not exist for this tenant. Another
	// tenant's resource is reported the same way, so existence never leaks.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the resource already exists, or the request conflicts
	// with its current state.
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is well-formed but breaks a domain rule. Usually
	// carried by a *ValidationError that says which field and how to fix it.
	ErrInvalid = errors.New("invalid input")
	// ErrUnavailable: a dependency (the database) cannot be reached or timed
	// out; the request may succeed if retried later.
	ErrUnavailable = errors.New("temporarily unavailable")
)

// Stable problem codes for domain validation failures. They are part of the
// public API (an enum in api/openapi.yaml): clients switch on them.
const (
	CodeInvalidStrategy    = "invalid-strategy" // shape: not an object, no kind, hybrid without strategies
	CodeUnknownStrategy    = "unknown-strategy" // kind is not one of the seven
	CodeStrategyNotForType = "strategy-not-for-type"
	CodeMissingRequirement = "missing-requirement" // deployment or strategy lacks embedder/llm/model/vector-store
	CodeInvalidField       = "invalid-field"       // a field's value breaks its rule (range, pattern, type)
	CodeUnknownField       = "unknown-field"       // a field this kind does not have
	CodeMemoryExists       = "memory-exists"
	CodeNotFound           = "not-found"
	// CodeEntryExists: a write onto a live entry that may not be overwritten
	// (anything but a fact).
	CodeEntryExists          = "entry-exists"
	CodeInvalidVector        = "invalid-vector"
	CodeEmbedderMismatch     = "embedder-mismatch"
	CodeIdempotencyKeyReused = "idempotency-key-reused"
	CodeRunExists            = "run-exists"
	CodeRunFinished          = "run-finished"
	CodeRateLimited          = "rate-limited"
	CodePreconditionFailed   = "precondition-failed"
)

// ValidationError explains a refusal so that a caller can act on it: which
// call (Site), which field (Path), what was wrong (Detail), a value that
// would work (Fix) and where to read more (See). It unwraps to ErrInvalid.
type ValidationError struct {
	Code   string
	Site   string // e.g. "defineMemory[chat]"
	Path   string // e.g. "strategy.strategies[1]"
	Detail string
	Fix    any    // a JSON-ready value that would be accepted at Path
	See    string // e.g. "/v1/strategies"
	// Extra carries machine-readable context (e.g. the accepted kinds).
	Extra map[string]any
}

func (e *ValidationError) Error() string {
	if e.Site != "" {
		return fmt.Sprintf("%s: %s: %s", e.Site, e.Path, e.Detail)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Detail)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// NotFoundError names what was not found. It unwraps to ErrNotFound.
type NotFoundError struct {
	What string // e.g. "memory"
	ID   string
	// Known optionally lists the valid ids (used for the strategy catalogue,
	// which is public, never for tenant data).
	Known []string
	// Hint, when set, is said after the refusal: where the lookup looked.
	Hint string
}

// InConversation is the not-found of a turn or an entry looked up in a
// conversation. Conversations are scoped by principal, so its hint says
// where the lookup looked: the same words whether or not the thing exists
// under another principal, which it never reveals.
func InConversation(what, id string, in Identity) *NotFoundError {
	where := fmt.Sprintf("conversation %q with no principal (no `principal` query parameter)", in.ConversationID)
	other := "one posted with `?principal=…` is found only with that same `principal`"
	if in.Principal != "" {
		where = fmt.Sprintf("conversation %q of principal %q", in.ConversationID, in.Principal)
		other = "one posted under another principal, or none, is found only with that `principal` (or without one)"
	}
	return &NotFoundError{What: what, ID: id,
		Hint: fmt.Sprintf("Conversations are scoped by `principal`: this looked in %s only; %s.", where, other)}
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %q not found", e.What, e.ID)
}

// Unwrap makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Unwrap() error { return ErrNotFound }

// ConflictError names what conflicted. It unwraps to ErrConflict.
type ConflictError struct {
	Code   string
	Detail string
	// Path names the field of the request that conflicts, when one does.
	Path string
}

func (e *ConflictError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// PreconditionError refuses a change whose precondition (an HTTP If-Match)
// no longer holds: the resource changed since the caller read it (412). It
// unwraps to ErrConflict.
type PreconditionError struct{ Detail string }

func (e *PreconditionError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *PreconditionError) Unwrap() error { return ErrConflict }

// ErrTooManyRuns: the tenant has as many open runs as allowed. It is carried
// by a *LimitError.
var ErrTooManyRuns = errors.New("too many open runs")

// LimitError refuses a request because a per-tenant limit is reached (429).
type LimitError struct{ Detail string }

func (e *LimitError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrTooManyRuns) true.
func (e *LimitError) Unwrap() error { return ErrTooManyRuns }

// EmbedError is an embedder's failure for the request at site: a refusal of the text
// (ErrInvalid) is the client's, at path; anything else is the embedder's, wrapped.
func EmbedError(err error, site, path, id string) error {
	if errors.Is(err, ErrInvalid) {
		return &ValidationError{Code: CodeInvalidField, Site: site, Path: path,
			Detail: fmt.Sprintf("the embedder %q cannot embed this text: it has no words.", id)}
	}
	return fmt.Errorf("embed with %q: %w", id, err)
}

// SafeReason says in words why a dependency failed, without its text
// (which may carry provider bodies or internals).
func SafeReason(err error) string {
	switch {
	case errors.Is(err, ErrUnavailable):
		return "the provider is unavailable or timed out"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the request was cancelled"
	}
	return "unexpected provider error"
}

// EmbedderError is a failed call to a remote embedder (an OpenAI-compatible
// server or Ollama). Every failure of Embed that is the provider's doing is
// one; an empty text (ErrInvalid) and the caller's cancellation are not. The
// adapters in internal/embedder make them; the HTTP layer maps them to
// embedder-failed (502) or embedder-unavailable (503) without knowing which
// adapter made them.
//
// Its message and Reason are built only from the embedder's id, the HTTP
// status, numbers and fixed text — never the API key, the URL or the
// provider's response body — so both are safe to log and Reason is safe to
// show to API clients.
//
// Temporary failures unwrap to ErrUnavailable: the provider could not be
// reached, timed out, or answered 429 or 5xx, after the bounded retries, or
// the caller's deadline passed while waiting for it (then the error also
// unwraps to context.DeadlineExceeded). Retrying later may help. The others
// unwrap to nothing: the provider refused the request (a 4xx such as a bad
// key, an unknown model or a text longer than the model takes) or answered
// with something unusable (Malformed: not JSON, the wrong number of vectors,
// a vector of the wrong dimension). Retrying will not help until the
// embedder's configuration or the provider changes.
type EmbedderError struct {
	Embedder string // the embedder's id
	// Endpoint says in words what the embedder's base URL must serve, e.g.
	// "an Ollama server's /api/embed", for the advice a refusal gives.
	Endpoint   string
	StatusCode int           // the provider's HTTP status; 0 if no response arrived
	Attempts   int           // requests made, including the failed ones
	RetryAfter time.Duration // the provider's Retry-After, if it sent one
	Temporary  bool          // whether it unwraps to ErrUnavailable
	// Malformed reports a 2xx response that could not be used.
	Malformed bool
	// Reason is a short phrase saying what went wrong, e.g. "HTTP 401
	// Unauthorized", "connection refused" or "vector 0 has 3 dimensions,
	// want 4".
	Reason string
	// Message is the error's log-safe text.
	Message string
	// CallerDeadline reports that the caller's deadline ended the call: the
	// error then unwraps to context.DeadlineExceeded too.
	CallerDeadline bool
	// Transport is the underlying transport error, if any, for debugging.
	// Its text is NOT log-safe (net/http's messages can quote the URL and
	// bytes the server sent), so Error and Unwrap never return it.
	Transport error
}

func (e *EmbedderError) Error() string { return e.Message }

// Unwrap returns ErrUnavailable for temporary failures and
// context.DeadlineExceeded when the caller's deadline ended the call. It
// never returns the transport error: an attempt's own timeout must not pass
// for the caller's deadline.
func (e *EmbedderError) Unwrap() []error {
	var errs []error
	if e.Temporary {
		errs = append(errs, ErrUnavailable)
	}
	if e.CallerDeadline {
		errs = append(errs, context.DeadlineExceeded)
	}
	return errs
}
