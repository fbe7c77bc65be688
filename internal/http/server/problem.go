package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Problem is an RFC 9457 problem-details body. Every 4xx and 5xx this
// service sends is one, as application/problem+json.
type Problem struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Code      string         `json:"code"`
	Detail    string         `json:"detail,omitempty"`
	Site      string         `json:"site,omitempty"`
	Path      string         `json:"path,omitempty"`
	Fix       any            `json:"fix,omitempty"`
	See       string         `json:"see,omitempty"`
	Errors    []ProblemError `json:"errors,omitempty"`
	RequestID string         `json:"requestId,omitempty"`
	// Extra members (e.g. `kinds`) are written after the standard ones.
	Extra map[string]any `json:"-"`

	retryAfter int // seconds; sets Retry-After when > 0
}

// ProblemError points at one offending part of the request.
type ProblemError struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// MarshalJSON writes the standard members in a fixed order, then Extra.
func (p Problem) MarshalJSON() ([]byte, error) {
	type plain Problem
	base, err := json.Marshal(plain(p))
	if err != nil || len(p.Extra) == 0 {
		return base, err
	}
	extra, err := json.Marshal(p.Extra)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(base[:len(base)-1])
	b.WriteByte(',')
	b.Write(extra[1:])
	return b.Bytes(), nil
}

// newProblem builds a problem with type and title derived from the code.
func newProblem(status int, code, detail string) *Problem {
	return &Problem{Type: "/problems/" + code, Title: titles[code], Status: status, Code: code, Detail: detail}
}

// titles are the fixed human titles per code; clients switch on `code`.
var titles = map[string]string{
	"invalid-json":           "Malformed JSON",
	"invalid-request":        "Invalid request",
	"invalid-parameter":      "Invalid parameter",
	"invalid-strategy":       "Invalid strategy",
	"unknown-strategy":       "Unknown strategy",
	"strategy-not-for-type":  "Strategy not accepted by this memory type",
	"missing-requirement":    "Missing requirement",
	"invalid-field":          "Invalid field",
	"unknown-field":          "Unknown field",
	"embedder-mismatch":      "Embedder mismatch",
	"invalid-vector":         "Invalid vector",
	"idempotency-key-reused": "Idempotency key reused",
	"entry-exists":           "Entry already exists",
	"memory-exists":          "Memory already exists",
	"run-exists":             "Run exists",
	"run-finished":           "Run finished",
	"version-conflict":       "Version conflict",
	"not-found":              "Not found",
	"unauthorized":           "Unauthorized",
	"body-too-large":         "Request body too large",
	"unsupported-media-type": "Unsupported media type",
	"method-not-allowed":     "Method not allowed",
	"invalid-cursor":         "Invalid cursor",
	"rate-limited":           "Too many requests",
	"precondition-failed":    "Precondition failed",
	"embedder-failed":        "Embedder failed",
	"embedder-unavailable":   "Embedder unavailable",
	"unavailable":            "Service unavailable",
	"internal":               "Internal server error",
}

// problemFor is the ONE table from domain errors to HTTP problems. Anything
// it does not recognise is a 500 whose body says only that.
func problemFor(err error) *Problem {
	var ve *core.ValidationError
	var nf *core.NotFoundError
	var ce *core.ConflictError
	var le *core.LimitError
	var pre *core.PreconditionError
	var p *Problem
	var pe *core.EmbedderError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &pe):
		// Before ErrUnavailable and DeadlineExceeded, which a temporary
		// embedder failure also unwraps to: it is not the store's.
		return embedderProblem(pe)
	case errors.As(err, &ve):
		pr := newProblem(http.StatusUnprocessableEntity, ve.Code, ve.Detail)
		pr.Site, pr.Path, pr.Fix, pr.See = ve.Site, ve.Path, ve.Fix, ve.See
		pr.Errors = []ProblemError{{Pointer: pointerFor(ve.Path), Detail: ve.Detail}}
		pr.Extra = ve.Extra
		return pr
	case errors.As(err, &nf):
		pr := newProblem(http.StatusNotFound, core.CodeNotFound, nf.What+" "+strconv.Quote(nf.ID)+" does not exist.")
		if nf.Hint != "" {
			pr.Detail += " " + nf.Hint
		}
		if len(nf.Known) > 0 {
			pr.Extra = map[string]any{"kinds": nf.Known}
			pr.Detail += " Known: " + joinQuoted(nf.Known) + "."
			pr.See = "/v1/strategies"
		}
		return pr
	case errors.Is(err, core.ErrNotFound):
		return newProblem(http.StatusNotFound, core.CodeNotFound, "The resource does not exist.")
	case errors.As(err, &pre):
		pr := newProblem(http.StatusPreconditionFailed, core.CodePreconditionFailed, pre.Detail)
		pr.Path = "If-Match"
		return pr
	case errors.As(err, &ce):
		pr := newProblem(http.StatusConflict, ce.Code, ce.Detail)
		pr.Path = ce.Path
		return pr
	case errors.As(err, &le):
		return newProblem(http.StatusTooManyRequests, core.CodeRateLimited, le.Detail)
	case errors.Is(err, core.ErrInvalid):
		return newProblem(http.StatusBadRequest, "invalid-request", "The request is not valid.")
	case errors.Is(err, core.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		pr := newProblem(http.StatusServiceUnavailable, "unavailable", "The service cannot reach its store right now; retry shortly.")
		pr.retryAfter = 1
		return pr
	default:
		return newProblem(http.StatusInternalServerError, "internal", "")
	}
}

// Retry-After bounds for embedder-unavailable, in seconds: the default when
// the provider named no delay (the server has already retried for a few
// seconds), and the most of a provider's own Retry-After passed on.
const (
	embedderRetryAfter    = 5
	maxEmbedderRetryAfter = 300
)

// embedderProblem maps a remote embedder's failure. The provider refusing
// the request or answering nonsense is a 502 embedder-failed, which
// retrying will not cure; the provider unreachable, overloaded or too slow
// after the bounded retries is a 503 embedder-unavailable with Retry-After.
// The detail names the embedder and the upstream status, and says what an
// operator should check; pe.Reason is log-safe by contract (no key, URL or
// response body), so it may be shown.
func embedderProblem(pe *core.EmbedderError) *Problem {
	id := strconv.Quote(pe.Embedder)
	var pr *Problem
	if pe.Temporary {
		var detail string
		switch {
		case pe.StatusCode == http.StatusTooManyRequests:
			detail = "The embedder " + id + " is rate-limited by its provider (upstream " + pe.Reason + attemptsSuffix(pe) + "); retry after the Retry-After delay."
		case pe.StatusCode != 0:
			detail = "The embedder " + id + " is failing upstream (upstream " + pe.Reason + attemptsSuffix(pe) + "); retry shortly. If this persists, check the provider's health."
		default:
			detail = "The embedder " + id + " did not answer (" + pe.Reason + attemptsSuffix(pe) + "); retry shortly. If this persists, check that its base URL is right and the provider is running and not overloaded."
		}
		pr = newProblem(http.StatusServiceUnavailable, "embedder-unavailable", detail)
		pr.retryAfter = embedderRetryAfter
		if pe.RetryAfter > 0 {
			pr.retryAfter = min(max(int((pe.RetryAfter+time.Second-1)/time.Second), 1), maxEmbedderRetryAfter)
		}
	} else {
		var detail string
		switch {
		case pe.Malformed:
			endpoint := pe.Endpoint
			if endpoint == "" {
				endpoint = "the embedder's API"
			}
			detail = "The embedder " + id + " answered with a response this server cannot use (upstream HTTP " + strconv.Itoa(pe.StatusCode) +
				": " + pe.Reason + "). Check that its base URL points at " + endpoint + " and that its model and dimensions are the ones configured."
		case pe.StatusCode == http.StatusUnauthorized || pe.StatusCode == http.StatusForbidden:
			detail = "The embedder " + id + " was refused by its provider (upstream " + pe.Reason + "). Check the API key configured for it and that the key may use its model."
		case pe.StatusCode == http.StatusNotFound:
			detail = "The embedder " + id + " was refused by its provider (upstream " + pe.Reason + "). Check its model name and base URL."
		case pe.StatusCode != 0:
			detail = "The embedder " + id + " was refused by its provider (upstream " + pe.Reason + "). Check its model name and settings (dimensions, batch size); a text longer than the model accepts is refused too."
		default:
			detail = "The embedder " + id + " could not be called (" + pe.Reason + "). Check its base URL."
		}
		pr = newProblem(http.StatusBadGateway, "embedder-failed", detail)
	}
	pr.Extra = map[string]any{"embedder": pe.Embedder}
	if pe.StatusCode != 0 {
		pr.Extra["upstreamStatus"] = pe.StatusCode
	}
	return pr
}

// attemptsSuffix says how often the server tried, when more than once.
func attemptsSuffix(pe *core.EmbedderError) string {
	if pe.Attempts > 1 {
		return " after " + strconv.Itoa(pe.Attempts) + " attempts"
	}
	return ""
}

func joinQuoted(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// pointerFor turns a dotted path (`strategy.strategies[1].kind`) into a
// JSON Pointer fragment (`#/strategy/strategies/1/kind`).
func pointerFor(path string) string {
	var b bytes.Buffer
	b.WriteString("#/")
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '.':
			b.WriteByte('/')
		case '[':
			b.WriteByte('/')
		case ']':
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// writeProblem sends p with the request id attached.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	cp := p.bounded()
	cp.RequestID = requestIDFrom(r.Context())
	if cp.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(cp.retryAfter))
	}
	if cp.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="footprint"`)
	}
	body, err := json.Marshal(cp)
	if err != nil { // a Fix or Extra that cannot marshal: drop them, never fail
		cp.Fix, cp.Extra = nil, nil
		body, _ = json.Marshal(cp)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(cp.Status)
	_, _ = w.Write(body)
}

// writeError maps err through problemFor and sends it, logging 5xx with the
// wrapped error (the client never sees its text).
func writeError(w http.ResponseWriter, r *http.Request, logger *slog.Logger, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; nobody is listening for a body.
		logger.LogAttrs(r.Context(), slog.LevelInfo, "request canceled by client",
			slog.String("requestId", requestIDFrom(r.Context())))
		return
	}
	p := problemFor(err)
	if p.Status >= 500 {
		logger.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("requestId", requestIDFrom(r.Context())),
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", p.Status), slog.String("error", err.Error()))
	}
	writeProblem(w, r, p)
}
