package server

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
// and refuses bodies that are not JSON (415), not UTF-8 (400), or that escape half of a UTF-16
// surrogate pair alone (400, as for invalid UTF-8). Buffering lets the validator and the decoder
// each read the body; bodies are small by contract.
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
			// Event batches are checked for both as they are decoded (eventio).
			if !utf8.Valid(body) && !isEventBatch(r) {
				writeProblem(w, r, invalidUTF8Problem(body))
				return
			}
			if mayHoldLoneSurrogate(body) && !isEventBatch(r) {
				if p := loneSurrogateProblem(body); p != nil {
					writeProblem(w, r, p)
					return
				}
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
	ptr, se := firstSyntaxError(body)
	reason := "is not valid UTF-8 (JSON text must be UTF-8)"
	if se != nil {
		reason = fmt.Sprintf("is not valid UTF-8 (at byte %d; JSON text must be UTF-8)", se.ByteOffset)
		if se.Err == nil || !strings.Contains(se.Err.Error(), "UTF-8") {
			// The body breaks JSON's syntax before its first invalid byte: say that.
			reason = fmt.Sprintf("is not valid JSON (at byte %d), and the body is not valid UTF-8", se.ByteOffset)
		}
	}
	return textProblem(ptr, reason)
}

// mayHoldLoneSurrogate reports whether body may escape half of a UTF-16 surrogate pair alone:
// a high one ("\ud800"-"\udbff") not followed by a low one ("\udc00"-"\udfff"), or a low
// one on its own. JSON decoders replace such an escape with U+FFFD, as they do invalid UTF-8.
// It runs on every body, so it only looks for escapes (bytes.Index, vectorised: a body without
// "\u" costs one pass) and decodes nothing; false positives are possible (a "\u" outside any
// string), and loneSurrogateProblem decides.
func mayHoldLoneSurrogate(body []byte) bool {
	for i := 0; ; {
		j := bytes.Index(body[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j
		// The backslash starts an escape only after an even run of backslashes: in "\\ud800"
		// the first two are one escaped backslash and "ud800" is text. Each run is counted once
		// (the scan moves past it), so the scan stays linear.
		run := 0
		for k := i - 1; k >= 0 && body[k] == '\\'; k-- {
			run++
		}
		if run%2 == 1 {
			i += 2
			continue
		}
		switch surrogateEscape(body[i:]) {
		case 'h':
			if surrogateEscape(body[i+6:]) != 'l' {
				return true
			}
			i += 12 // a pair: one character outside the Basic Multilingual Plane
		case 'l':
			return true
		default:
			i += 2
		}
	}
}

// surrogateEscape says whether b starts with the escape of a high ('h', \uD800-\uDBFF) or
// low ('l', \uDC00-\uDFFF) surrogate, or neither (0). Only the first two hex digits decide;
// malformed escapes are the decoder's to report.
func surrogateEscape(b []byte) byte {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' || b[2]|0x20 != 'd' {
		return 0
	}
	switch b[3] | 0x20 {
	case '8', '9', 'a', 'b':
		return 'h'
	case 'c', 'd', 'e', 'f':
		return 'l'
	}
	return 0
}

// loneSurrogateProblem is the answer to a body that escapes half of a surrogate pair alone: a
// 400 like invalidUTF8Problem's, naming the member that holds it. An escaped surrogate is not
// a character, so such a string has no UTF-8 form, and decoders would store U+FFFD in its place.
// It returns nil when the body has no such escape after all, or breaks JSON's syntax before it:
// the validator then says what is wrong.
func loneSurrogateProblem(body []byte) *Problem {
	ptr, se := firstSyntaxError(body)
	if se == nil || se.Err == nil || !strings.Contains(se.Err.Error(), "surrogate") {
		return nil
	}
	return textProblem(ptr, fmt.Sprintf("escapes half of a UTF-16 surrogate pair alone (at byte %d): "+
		"\\ud800-\\udfff are valid only as a high-low pair that encodes one character; "+
		"send the character itself, or its pair", se.ByteOffset))
}

// firstSyntaxError decodes body as JSON text and returns the first syntactic error (nil if
// none) with the pointer tokens of the member it is in.
func firstSyntaxError(body []byte) ([]string, *jsontext.SyntacticError) {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		_, err := dec.ReadToken()
		var se *jsontext.SyntacticError
		if errors.As(err, &se) {
			var ptr []string
			for tok := range se.JSONPointer.Tokens() {
				ptr = append(ptr, tok)
			}
			return ptr, se
		}
		if err != nil {
			return nil, nil
		}
	}
}

// textProblem is the 400 invalid-json problem for text the body cannot hold, at ptr.
func textProblem(ptr []string, reason string) *Problem {
	path := dottedPath(ptr)
	if path == "" {
		path = "(body)"
	}
	p := newProblem(http.StatusBadRequest, "invalid-json", fmt.Sprintf("`%s` %s.", path, reason))
	p.Path = path
	p.Errors = []ProblemError{{Pointer: "#/" + strings.Join(escapePointer(ptr), "/"), Detail: reason}}
	return p
}
