package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// JSON values compared as the seed compares payloads.
//
// The seed decides a repeat with samePayload on payloads that JSON.parse
// produced: objects compared member by member in the order the members were
// written, arrays element by element, and scalars with ===. So identity is
// by VALUE with member order as sent: the numbers 1, 1.0, 1e0 and 10e-1 are
// one value (JavaScript parses each to the double 1; -0 and 0 are === too),
// and so are the strings "A" and "\u0041" (escapes are decoded before
// comparing). Whitespace between tokens is not part of a value. Member
// ORDER is: {"a":1,"b":2} and {"b":2,"a":1} differ, as Object.keys order
// does in the seed.
//
// Numbers are compared as IEEE 754 doubles, exactly as JavaScript holds
// them: two integers beyond 2^53 that round to the same double are the same
// value there, and here. A number too large for a double (1e400) is
// Infinity in JavaScript and here alike.
//
// The functions below read raw JSON text without building a tree. They are
// given well-formed JSON (the event decoder refused anything else before a
// payload reached a tail); on malformed text they fall back to comparing
// bytes, which errs on the safe side (a slot is spent, nothing is merged).

// jsonToken is one token of JSON text: kind is the token's first byte
// ('{', '}', '[', ']', ':', ',', '"' for a string, '0' for a number, 't',
// 'f', 'n' for the literals) and raw its bytes (a string with its quotes).
type jsonToken struct {
	kind byte
	raw  []byte
}

// jsonScanner yields the tokens of JSON text, skipping whitespace.
type jsonScanner struct {
	s   []byte
	i   int
	bad bool // malformed text was met
}

// next returns the next token, or false at the end of the text (or on
// malformed text, which also sets bad).
func (sc *jsonScanner) next() (jsonToken, bool) {
	sc.i = skipSpace(sc.s, sc.i)
	if sc.i >= len(sc.s) {
		return jsonToken{}, false
	}
	start := sc.i
	switch c := sc.s[start]; c {
	case '{', '}', '[', ']', ':', ',':
		sc.i++
		return jsonToken{kind: c, raw: sc.s[start:sc.i]}, true
	case '"':
		end := skipString(sc.s, start)
		if end < 0 {
			sc.bad = true
			return jsonToken{}, false
		}
		sc.i = end
		return jsonToken{kind: '"', raw: sc.s[start:end]}, true
	case 't', 'f', 'n':
		j := start
		for j < len(sc.s) && sc.s[j] >= 'a' && sc.s[j] <= 'z' {
			j++
		}
		lit := string(sc.s[start:j])
		if lit != "true" && lit != "false" && lit != "null" {
			sc.bad = true
			return jsonToken{}, false
		}
		sc.i = j
		return jsonToken{kind: c, raw: sc.s[start:j]}, true
	default:
		j := start
		for j < len(sc.s) && !isSpace(sc.s[j]) && !isStructural(sc.s[j]) {
			j++
		}
		if j == start {
			sc.bad = true
			return jsonToken{}, false
		}
		sc.i = j
		return jsonToken{kind: '0', raw: sc.s[start:j]}, true
	}
}

// numberValue parses a JSON number as JavaScript does: to the nearest
// double, ±Inf beyond the range, and -0 read as 0 (they are === there).
func numberValue(raw []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	if f == 0 {
		f = 0 // -0 → 0
	}
	return f, true
}

// appendUnquoted appends the decoded content of a JSON string token (raw,
// quotes included) to dst, as UTF-8. A lone surrogate escape (which the
// event decoder refuses) decodes to U+FFFD.
func appendUnquoted(dst, raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return append(dst, s...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			dst = append(dst, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := hexRune(s[i+1:])
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					r2, n2 := hexRune(s[i+3:])
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						i += 2 + n2
						dst = utf8.AppendRune(dst, dec)
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default: // \" \\ \/
			dst = append(dst, s[i])
		}
	}
	return dst
}

// hexRune reads the four hex digits of a \u escape; n is how many bytes it
// consumed (4, or fewer on malformed text, which yields U+FFFD).
func hexRune(s []byte) (r rune, n int) {
	for n < 4 && n < len(s) {
		c := s[n]
		var d rune
		switch {
		case c >= '0' && c <= '9':
			d = rune(c - '0')
		case c >= 'a' && c <= 'f':
			d = rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = rune(c-'A') + 10
		default:
			return utf8.RuneError, n
		}
		r = r<<4 | d
		n++
	}
	if n < 4 {
		return utf8.RuneError, n
	}
	return r, n
}

// sameToken reports whether two tokens of the same position are the same
// value: structural tokens and literals by kind, numbers as doubles, strings
// by their decoded content.
func sameToken(x, y jsonToken, scratch *[2][]byte) bool {
	if x.kind != y.kind {
		return false
	}
	switch x.kind {
	case '"':
		if bytes.Equal(x.raw, y.raw) {
			return true
		}
		if bytes.IndexByte(x.raw, '\\') < 0 && bytes.IndexByte(y.raw, '\\') < 0 {
			return false
		}
		scratch[0] = appendUnquoted(scratch[0][:0], x.raw)
		scratch[1] = appendUnquoted(scratch[1][:0], y.raw)
		return bytes.Equal(scratch[0], scratch[1])
	case '0':
		if bytes.Equal(x.raw, y.raw) {
			return true
		}
		fx, okX := numberValue(x.raw)
		fy, okY := numberValue(y.raw)
		return okX && okY && fx == fy
	}
	return true
}

// sameValue reports whether two raw JSON texts are the same value with
// members in the same order (see the top of this file). Byte-identical
// texts (the common repeat) are decided without a scan.
func sameValue(a, b []byte) bool {
	if len(a) == len(b) && string(a) == string(b) {
		return true
	}
	sa, sb := jsonScanner{s: a}, jsonScanner{s: b}
	var scratch [2][]byte
	for {
		x, okA := sa.next()
		y, okB := sb.next()
		if sa.bad || sb.bad {
			return false
		}
		if okA != okB {
			return false
		}
		if !okA {
			return true
		}
		if !sameToken(x, y, &scratch) {
			return false
		}
	}
}

// appendValueKey appends a key for the JSON value v (one complete value) to
// dst such that equal values (sameValue) always get equal keys: a string's
// decoded content, a number's double, a literal's kind. A container gets
// only its kind (its content narrows nothing: sameValue decides).
func appendValueKey(dst, v []byte) []byte {
	sc := jsonScanner{s: v}
	tok, ok := sc.next()
	if !ok {
		return append(dst, 0)
	}
	switch tok.kind {
	case '"':
		dst = append(dst, '"')
		return appendUnquoted(dst, tok.raw)
	case '0':
		// The common contentHash, a plain integer, is its own key without parsing; any
		// other spelling of an integer below 2^53 gets the same key through the double.
		if plainInteger(tok.raw) {
			if string(tok.raw) == "-0" {
				return append(dst, 'i', '0')
			}
			return append(append(dst, 'i'), tok.raw...)
		}
		f, ok := numberValue(tok.raw)
		switch {
		case !ok:
			return append(append(dst, '?'), tok.raw...)
		case f == math.Trunc(f) && math.Abs(f) < 1<<53:
			return strconv.AppendInt(append(dst, 'i'), int64(f), 10)
		}
		dst = append(dst, '0')
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(f))
	}
	return append(dst, tok.kind)
}

// plainInteger reports whether a number token is an integer written plainly
// (an optional minus, then digits without a leading zero) with at most 15
// digits, so that its value is exactly its digits.
func plainInteger(raw []byte) bool {
	d := raw
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ValueDigest is the SHA-256 of a JSON value's canonical form: every token
// in order, strings by their decoded content (length-prefixed), numbers as
// doubles, so that two texts have the same digest exactly when they are the
// same value (sameValue), up to SHA-256 collisions. It stands for a payload
// as sent when what is stored of it is not the whole of it (embeddings
// summarised, a payload truncated): the tail's identity decision still sees
// the vectors and the cut-off part through it. Malformed text is digested
// as its bytes.
func ValueDigest(p []byte) *Digest {
	h := sha256.New()
	sc := jsonScanner{s: p}
	var buf []byte
	ok := writeCanonical(h, &sc, &buf)
	if !ok || sc.bad {
		h.Reset()
		h.Write([]byte{0xff})
		h.Write(p)
	}
	var d Digest
	h.Sum(d[:0])
	return &d
}

func writeCanonical(h hash.Hash, sc *jsonScanner, buf *[]byte) bool {
	for {
		tok, ok := sc.next()
		if !ok {
			return !sc.bad
		}
		b := (*buf)[:0]
		switch tok.kind {
		case '"':
			s := appendUnquoted(nil, tok.raw)
			b = append(b, '"')
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		case '0':
			f, ok := numberValue(tok.raw)
			if !ok {
				return false
			}
			b = append(b, '0')
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(f))
		default:
			b = append(b, tok.kind)
		}
		h.Write(b)
		*buf = b
	}
}
