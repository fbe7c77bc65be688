package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The rules for text every area shares: what a word is, what text may be
// stored, and how a refusal quotes what it was sent.

// IDPattern is the documented pattern for memory ids (and embedder / LLM ids).
const IDPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`

// IsWordRune is what counts as part of a word for extraction and embedding.
func IsWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// HasWords reports whether text has a letter or digit to embed.
func HasWords(text string) bool {
	for _, r := range text {
		if IsWordRune(r) {
			return true
		}
	}
	return false
}

// CheckText returns a reason when s is not acceptable text: invalid UTF-8 or
// a NUL character (Postgres text cannot hold it; neither can many clients).
func CheckText(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL characters"
	}
	return ""
}

// CheckJSONText is CheckText for every string (names included) of a JSON value a client sent
// as it is, such as a tool call's arguments: valid JSON can spell NUL as \u0000, which
// Postgres cannot store in jsonb.
func CheckJSONText(raw []byte) string {
	if len(raw) == 0 || !bytes.Contains(raw, []byte(`\u0000`)) {
		return "" // the one way a NUL can appear in valid JSON is that escape
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			return "" // io.EOF; malformed JSON is the schema's concern, not this check's
		}
		if tok.Kind() == '"' {
			if reason := CheckText(tok.String()); reason != "" {
				return reason
			}
		}
	}
}

// Truncate cuts s to n runes, marking the cut with an ellipsis.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// SafeKey makes an arbitrary JSON key printable and bounded for a path.
func SafeKey(k string) string {
	if !utf8.ValidString(k) {
		k = strings.ToValidUTF8(k, "�")
	}
	return Truncate(k, 40)
}

// QuoteList writes xs as a list of `code` spans, for refusals.
func QuoteList[T ~string](xs []T) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = "`" + string(x) + "`"
	}
	return strings.Join(q, ", ")
}

// DescribeJSON names a decoded JSON value for a refusal, without echoing
// unbounded input back.
func DescribeJSON(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("the boolean %t", x)
	case string:
		if len(x) > 40 {
			return fmt.Sprintf("a string of %d bytes", len(x))
		}
		return fmt.Sprintf("the string %q", x)
	case float64, json.Number, int, int64:
		f, _ := ToFloat(x)
		return "the number " + FormatNumber(f)
	case []any:
		return fmt.Sprintf("an array of %d items", len(x))
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// FormatNumber writes f as a refusal quotes it: integers without a fraction.
func FormatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}

// ToFloat reads a JSON number decoded by encoding/json (float64, or
// json.Number with UseNumber) or a Go integer.
func ToFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	}
	return 0, false
}
