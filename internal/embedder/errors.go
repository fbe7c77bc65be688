package embedder

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// failed turns what providerclient.Client returned into a *core.EmbedderError.
// malformed, when not empty, is the log-safe reason a 2xx body could not be
// used. The caller's cancellation passes through unchanged: nobody is
// waiting for an answer, and the error must stay context.Canceled.
func (r *remote) failed(err error, attempts int, malformed string) error {
	var perr *providerclient.Error
	if errors.As(err, &perr) {
		pe := &core.EmbedderError{
			Embedder: r.cfg.id, Endpoint: r.cfg.endpointWords(), StatusCode: perr.StatusCode, Attempts: perr.Attempts,
			RetryAfter: perr.RetryAfter, Temporary: perr.Temporary,
			Malformed: perr.StatusCode >= 200 && perr.StatusCode <= 299,
			Message:   perr.Error(), Transport: perr.Cause(),
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
		return &core.EmbedderError{
			Embedder: r.cfg.id, Endpoint: r.cfg.endpointWords(), Attempts: attempts, Temporary: true,
			Reason: "the request's deadline passed first", Message: msg, CallerDeadline: true,
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

// endpointWords says what this embedder's base URL must serve, for the advice a refusal gives.
func (c remoteConfig) endpointWords() string {
	if c.kind == KindOllama {
		return "an Ollama server's /api/embed"
	}
	return "an OpenAI-compatible /v1/embeddings endpoint"
}
