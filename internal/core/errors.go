package core

import (
	"errors"
	"fmt"
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
}

func (e *ConflictError) Error() string { return e.Detail }

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }
