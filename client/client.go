// Package client is footprint's Go client.
//
// Everything that speaks the API is generated from api/openapi.yaml by oapi-codegen into
// client.gen.go (never edited by hand; `make generate` regenerates it): one method per
// operation on [ClientWithResponses] (PostTurnWithResponse, RecallWithResponse, ...) and the
// request and answer types (TurnInput, RecallResult, ...). This file adds what a generator
// cannot know, in the HTTP client the generated code calls:
//
//   - the API key, sent as `Authorization: Bearer <key>` on every request;
//   - retries of 429 (rate-limited) and 503 (unavailable) answers, after the server's
//     Retry-After, a bounded number of times and for a bounded wait;
//   - an Idempotency-Key on every POST that has none, the same across its retries, so a
//     retried turn is replayed by the server instead of being stored twice;
//   - problems as errors: an answer of 400 or more comes back as a *[Error] with the
//     problem's Code, Path, Detail and Fix (errors.As), never as a response to inspect.
//
// A turn, start to finish:
//
//	fp, err := client.New("http://127.0.0.1:8080", client.Config{Key: os.Getenv("FOOTPRINT_API_KEY")})
//	rec, err := fp.RecallWithResponse(ctx, "support-4821", nil, client.RecallInput{Query: client.Ptr("...")})
//	// ... answer with rec.JSON200.SystemPrompt in the system prompt (each injection names its
//	// part of it: rec.JSON200.InjectionText(inj)) ...
//	_, err = fp.PostTurnWithResponse(ctx, "support-4821", nil, client.TurnInput{
//		Messages:  []client.Message{{Role: client.MessageRoleUser, Content: q}, {Role: client.MessageRoleAssistant, Content: a}},
//		RecallIds: []client.RecallID{rec.JSON200.RecallID},
//	})
//	var problem *client.Error
//	if errors.As(err, &problem) && problem.Code == "invalid-field" { ... problem.Path, problem.Fix ... }
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Config configures [New].
type Config struct {
	// Key is the API key; empty for a server without keys (single tenant).
	Key string
	// HTTPClient sends the requests; nil: a client with a 60 s timeout.
	HTTPClient *http.Client
	// MaxRetries is how many times a 429 or 503 answer is retried; 0: 3; negative: never.
	MaxRetries int
	// MaxRetryWait is the longest wait before one retry: an answer whose Retry-After asks for
	// more is returned at once, as an *Error whose RetryAfter says how long. 0: 30 s.
	MaxRetryWait time.Duration
	// UserAgent, when set, is sent as User-Agent.
	UserAgent string
}

// New returns a client of the footprint server at server, e.g. "http://127.0.0.1:8080".
func New(server string, c Config) (*ClientWithResponses, error) {
	return NewClientWithResponses(server, WithHTTPClient(NewDoer(c)))
}

// NewDoer returns the HTTP client [New] gives the generated code: the key, retries,
// idempotency keys and problems as errors. Use it with NewClient or NewClientWithResponses
// and options of your own.
func NewDoer(c Config) HttpRequestDoer {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = 3
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 30 * time.Second
	}
	return &doer{c: c, sleep: sleep}
}

type doer struct {
	c     Config
	sleep func(ctx context.Context, d time.Duration) error
}

// Do sends req, retrying a 429 or 503 while the bounds allow, and turns an answer of 400 or
// more into an *Error.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if d.c.Key != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+d.c.Key)
	}
	if d.c.UserAgent != "" {
		req.Header.Set("User-Agent", d.c.UserAgent)
	}
	if req.Method == http.MethodPost && req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", newIdempotencyKey())
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		res, err := d.c.HTTPClient.Do(req)
		if err != nil {
			return nil, err
		}
		if res.StatusCode < http.StatusBadRequest {
			return res, nil
		}
		e := errorFrom(res)
		retryable := res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable
		if !retryable || attempt >= d.c.MaxRetries || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
			return nil, e
		}
		wait := e.RetryAfter
		if res.Header.Get("Retry-After") == "" {
			wait = time.Duration(500<<attempt) * time.Millisecond // no Retry-After: back off
		}
		if wait > d.c.MaxRetryWait {
			return nil, e
		}
		if err := d.sleep(req.Context(), wait); err != nil {
			return nil, errors.Join(e, err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "fp-" + hex.EncodeToString(b[:])
}

// Error is a problem the server answered with (RFC 9457, application/problem+json), as a Go
// error. Switch on Code (stable), never on Detail (for people).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Code is the problem's stable code, e.g. "invalid-strategy", "rate-limited".
	Code string
	// Path names the field at fault, e.g. "strategy.strategies[1].size"; empty when none.
	Path string
	// Detail says what went wrong this time.
	Detail string
	// Fix is a value that would be accepted at Path (any JSON value), when the server has one.
	Fix any
	// RequestID is the request's id, as in the server's log.
	RequestID string
	// RetryAfter is the wait the server asked for (Retry-After), or 0.
	RetryAfter time.Duration
	// Problem is the whole problem, extra members (kinds, acceptedKinds, ...) included. Its
	// Code is empty when the answer was not a problem.
	Problem Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "footprint: %d %s", e.Status, e.Code)
	if e.Path != "" {
		fmt.Fprintf(&b, " at %s", e.Path)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Fix != nil {
		if fix, err := json.Marshal(e.Fix); err == nil {
			fmt.Fprintf(&b, " (fix: %s)", fix)
		}
	}
	return b.String()
}

// errorFrom reads an answer of 400 or more into an *Error, and closes its body.
func errorFrom(res *http.Response) *Error {
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	e := &Error{Status: res.StatusCode, RetryAfter: retryAfter(res.Header.Get("Retry-After"))}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if (mt == "application/problem+json" || mt == "application/json") && json.Unmarshal(body, &e.Problem) == nil && e.Problem.Code != "" {
		e.Code = string(e.Problem.Code)
		e.Path, e.Detail, e.RequestID = deref(e.Problem.Path), deref(e.Problem.Detail), deref(e.Problem.RequestID)
		e.Fix = e.Problem.Fix
		return e
	}
	// Not one of the server's problems (a proxy's page, say): the status speaks alone.
	e.Code = strings.ToLower(strings.ReplaceAll(http.StatusText(res.StatusCode), " ", "-"))
	e.Detail = strings.TrimSpace(string(bytes.ToValidUTF8(body[:min(len(body), 200)], nil)))
	e.RequestID = res.Header.Get("X-Request-Id")
	return e
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// Ptr returns a pointer to v, for the optional members of the generated types.
func Ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
