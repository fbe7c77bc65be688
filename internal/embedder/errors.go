package embedder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// ProviderError is a failed call to a remote embedder (OpenAI or Ollama).
// Every failure of Embed that is the provider's doing is one; an empty
// text (core.ErrInvalid) and the caller's cancellation are not.
//
// Its message and Reason are built only from the embedder's id, the HTTP
// status, numbers and fixed text — never the API key, the URL or the
// provider's response body — so both are safe to log and Reason is safe to
// show to API clients.
//
// Temporary failures unwrap to core.ErrUnavailable: the provider could not
// be reached, timed out, or answered 429 or 5xx, after the bounded retries,
// or the caller's deadline passed while waiting for it (then the error also
// unwraps to context.DeadlineExceeded). Retrying later may help. The others
// unwrap to nothing: the provider refused the request (a 4xx such as a bad
// key, an unknown model or a text longer than the model takes) or answered
// with something unusable (Malformed: not JSON, the wrong number of vectors,
// a vector of the wrong dimension). Retrying will not help until the
// embedder's configuration or the provider changes.
type ProviderError struct {
	Embedder   string        // the embedder's id
	Kind       string        // KindOpenAI or KindOllama
	StatusCode int           // the provider's HTTP status; 0 if no response arrived
	Attempts   int           // requests made, including the failed ones
	RetryAfter time.Duration // the provider's Retry-After, if it sent one
	Temporary  bool          // whether it unwraps to core.ErrUnavailable
	// Malformed reports a 2xx response that could not be used.
	Malformed bool
	// Reason is a short phrase saying what went wrong, e.g. "HTTP 401
	// Unauthorized", "connection refused" or "vector 0 has 3 dimensions,
	// want 4".
	Reason string

	msg    string
	ctxErr error // the caller's context error, if that is what ended the call
	cause  error // the transport error, if any; see Cause
}

func (e *ProviderError) Error() string { return e.msg }

// Unwrap returns core.ErrUnavailable for temporary failures and the
// caller's context.DeadlineExceeded when that ended the call. It never
// returns the transport error: an attempt's own timeout must not pass for
// the caller's deadline.
func (e *ProviderError) Unwrap() []error {
	var errs []error
	if e.Temporary {
		errs = append(errs, core.ErrUnavailable)
	}
	if e.ctxErr != nil {
		errs = append(errs, e.ctxErr)
	}
	return errs
}

// Cause returns the underlying transport error, if any, for debugging. Its
// text is NOT log-safe: net/http's messages can quote the URL and bytes the
// server sent.
func (e *ProviderError) Cause() error { return e.cause }

// failed turns what providerclient.Client returned into a *ProviderError.
// malformed, when not empty, is the log-safe reason a 2xx body could not be
// used. The caller's cancellation passes through unchanged: nobody is
// waiting for an answer, and the error must stay context.Canceled.
func (r *remote) failed(err error, attempts int, malformed string) error {
	var perr *providerclient.Error
	if errors.As(err, &perr) {
		pe := &ProviderError{
			Embedder: r.cfg.id, Kind: r.cfg.kind, StatusCode: perr.StatusCode, Attempts: perr.Attempts,
			RetryAfter: perr.RetryAfter, Temporary: perr.Temporary,
			Malformed: perr.StatusCode >= 200 && perr.StatusCode <= 299,
			msg:       perr.Error(), cause: perr.Cause(),
		}
		switch {
		case malformed != "":
			pe.Reason = malformed
		case pe.Malformed:
			pe.Reason = "response too large"
		case perr.StatusCode != 0:
			pe.Reason = fmt.Sprintf("HTTP %d %s", perr.StatusCode, http.StatusText(perr.StatusCode))
		case perr.Temporary:
			pe.Reason = transportReason(perr.Cause())
		default:
			pe.Reason = "request could not be sent"
		}
		return pe
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The request's own deadline passed while the provider was still
		// answering or being retried: the provider was too slow, so this
		// is its failure, not the store's or the client's.
		msg := fmt.Sprintf("embedder %q: the request's deadline passed before the provider answered", r.cfg.id)
		if attempts > 1 {
			msg += fmt.Sprintf(" (after %d attempts)", attempts)
		}
		return &ProviderError{
			Embedder: r.cfg.id, Kind: r.cfg.kind, Attempts: attempts, Temporary: true,
			Reason: "the request's deadline passed first", msg: msg, ctxErr: context.DeadlineExceeded,
		}
	}
	return err
}

// transportReason names a transport failure in fixed words; net/http's own
// messages can quote the URL or bytes the server sent.
func transportReason(err error) string {
	var (
		dnsErr *net.DNSError
		netErr net.Error
	)
	switch {
	case err == nil:
		return "no response"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timed out"
	case errors.As(err, &dnsErr):
		return "host not found"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	default:
		return "no usable response"
	}
}
