package core

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"
)

// Idempotency-Key, the same way for every creating request: turns, memories, runs, documents
// and ablations. A key is claimed in the same transaction as the write it guards, so that the
// write and the claim commit or roll back together:
//
//   - a key claimed by a committed request with the same RequestHash replays that request's
//     stored answer instead of writing anything;
//   - with another RequestHash it is ErrKeyReused;
//   - a claim still in flight is waited for: replayed when it commits, taken over when it
//     rolls back;
//   - an expired claim is ignored.
//
// Keys are scoped to the tenant; one key names one request of whatever kind, so the same key
// on a turn and on a memory is reused.

// IdempotencyClaim binds a client's Idempotency-Key to one request.
type IdempotencyClaim struct {
	Key         string
	RequestHash []byte
	ExpiresAt   time.Time
}

// ErrKeyReused is what a store returns when an idempotency key was already used with a
// different request.
var ErrKeyReused = errors.New("idempotency key reused with a different request")

// Once is an idempotent create as a store performs it: the claim, the clock of the claim, and
// the answer to keep with it for a retry (known before the write: what a create answers is
// decided by the service, not the store). A store that finds the key claimed by the same
// request performs nothing, sets Replay to the answer stored with the claim and returns nil.
type Once struct {
	Claim    IdempotencyClaim
	Now      time.Time
	Response []byte
	// Replay is set by the store when the write was not performed: the answer stored for the
	// same key and request.
	Replay []byte
}

// NewOnce returns the Once of a create of kind op (its operation name) with request (the
// parsed request, any JSON-encodable value, which with op and tenant-wide scope is what the
// key is bound to) answering response; nil when key is empty (no idempotency asked for).
func NewOnce(key, op string, request, response any, now time.Time, ttl time.Duration) (*Once, error) {
	if key == "" {
		return nil, nil
	}
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	req, err := json.Marshal(struct {
		Op      string `json:"op"`
		Request any    `json:"request"`
	}{op, request})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(req)
	resp, err := json.Marshal(response)
	if err != nil {
		return nil, err
	}
	return &Once{Claim: IdempotencyClaim{Key: key, RequestHash: sum[:], ExpiresAt: now.Add(ttl)}, Now: now, Response: resp}, nil
}

// KeyReused is the refusal of a request whose Idempotency-Key was used with another request.
func KeyReused(site string) error {
	return &ValidationError{Code: CodeIdempotencyKeyReused, Site: site, Path: "Idempotency-Key",
		Detail: "this Idempotency-Key was already used with a different request; a retry must send the same request " +
			"(the same operation, path and body), or use a new key.",
		See: "/openapi.yaml"}
}
