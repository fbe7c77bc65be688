package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"net/http"
	"regexp"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	tenantKey
)

// validRequestID bounds what a client may send as X-Request-Id: it is
// echoed in headers and logs, so it must be short and inert.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newRequestID returns 128 random bits, base32 encoded.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return idEncoding.EncodeToString(b[:])
}

// withRequestID accepts a valid X-Request-Id or generates one, echoes it on
// the response and carries it in the context for problems and log lines.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey, id)))
	})
}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}
