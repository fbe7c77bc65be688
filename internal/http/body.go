package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// limitBody buffers a request body of at most limit bytes (413 beyond it)
// and refuses bodies that are not JSON (415) or not UTF-8 (400). Buffering lets the validator
// and the decoder each read the body; bodies are small by contract.
func limitBody(limit int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete {
				next.ServeHTTP(w, r)
				return
			}
			tooLarge := func() {
				writeProblem(w, r, newProblem(http.StatusRequestEntityTooLarge, "body-too-large",
					fmt.Sprintf("The request body exceeds %d bytes.", limit)))
			}
			if r.ContentLength > limit {
				tooLarge()
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					tooLarge()
					return
				}
				writeProblem(w, r, newProblem(http.StatusBadRequest, "invalid-request", "The request body could not be read."))
				return
			}
			if int64(len(body)) > limit {
				tooLarge()
				return
			}
			if ct := r.Header.Get("Content-Type"); len(body) > 0 && !isJSON(ct) && !isNDJSON(ct) {
				writeProblem(w, r, newProblem(http.StatusUnsupportedMediaType, "unsupported-media-type",
					"Send the body as JSON with `Content-Type: application/json` (event batches may also be NDJSON, `application/x-ndjson`)."))
				return
			}
			if !utf8.Valid(body) && !isEventBatch(r) { // event batches are checked as they are decoded (eventio)
				writeProblem(w, r, invalidUTF8Problem(body))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// isNDJSON reports newline-delimited JSON, which only event batches accept.
func isNDJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/x-ndjson"
}

// invalidUTF8Problem is the answer to a JSON body that is not UTF-8, as JSON text must be
// (RFC 8259, section 8.1): a 400 naming the member that holds the first invalid byte. JSON
// decoders would otherwise replace such bytes with U+FFFD, silently storing something other
// than what the client meant to send.
func invalidUTF8Problem(body []byte) *Problem {
	var ptr []string
	reason := "is not valid UTF-8 (JSON text must be UTF-8)"
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		_, err := dec.ReadToken()
		var se *jsontext.SyntacticError
		if errors.As(err, &se) {
			for tok := range se.JSONPointer.Tokens() {
				ptr = append(ptr, tok)
			}
			reason = fmt.Sprintf("is not valid UTF-8 (at byte %d; JSON text must be UTF-8)", se.ByteOffset)
			if se.Err == nil || !strings.Contains(se.Err.Error(), "UTF-8") {
				// The body breaks JSON's syntax before its first invalid byte: say that.
				reason = fmt.Sprintf("is not valid JSON (at byte %d), and the body is not valid UTF-8", se.ByteOffset)
			}
		}
		if err != nil {
			break
		}
	}
	path := dottedPath(ptr)
	if path == "" {
		path = "(body)"
	}
	p := newProblem(http.StatusBadRequest, "invalid-json", fmt.Sprintf("`%s` %s.", path, reason))
	p.Path = path
	p.Errors = []ProblemError{{Pointer: "#/" + strings.Join(escapePointer(ptr), "/"), Detail: reason}}
	return p
}
