package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core"
)

// PrepareEvents turns input events into stored ones: embedding arrays
// summarised (unless recordEmbeddings), payloads over MaxEventPayloadBytes
// truncated, meta.wallClockMs read, receivedAt (the server's clock) set on
// each. It does no I/O.
//
// An announcement whose stored payload is not the payload as sent (its
// vectors summarised, or truncated) gets the digest of the payload as sent
// as its Identity, so the tail decides repeats on what was sent, vectors
// included: redaction is for storage and display, after the decision.
func PrepareEvents(in []RunEventInput, recordEmbeddings bool, receivedAt time.Time) []RunEvent {
	out := make([]RunEvent, len(in))
	for i, e := range in {
		sent := e.Payload
		if len(bytes.TrimSpace(sent)) == 0 {
			sent = json.RawMessage("null")
		}
		p := sent
		if !recordEmbeddings {
			p = RedactEmbeddings(p)
		}
		ev := RunEvent{Event: Event{Type: e.Type, Payload: p, Received: ReceivedMs(receivedAt)}}
		if len(p) > MaxEventPayloadBytes {
			ev.Payload, ev.Truncated = TruncatePayload(p, MaxEventPayloadBytes)
		}
		if IsAnnouncement(e.Type) && !sameSlice(ev.Payload, sent) {
			ev.Identity = ValueDigest(sent)
		}
		if len(e.Meta) > 0 && !bytes.Equal(bytes.TrimSpace(e.Meta), []byte("null")) {
			ev.Meta = e.Meta
			ev.WallClock = wallClockOf(e.Meta)
		}
		out[i] = ev
	}
	return out
}

// sameSlice reports whether a and b are the same bytes in memory (a payload
// left as it was sent), not merely equal ones.
func sameSlice(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func wallClockOf(meta []byte) time.Time {
	if !bytes.Contains(meta, []byte(`"wallClockMs"`)) {
		return time.Time{}
	}
	var m struct {
		WallClockMs *float64 `json:"wallClockMs"`
	}
	if json.Unmarshal(meta, &m) != nil || m.WallClockMs == nil {
		return time.Time{}
	}
	ms := *m.WallClockMs
	if math.IsNaN(ms) || math.IsInf(ms, 0) || ms < 0 || ms > 8.64e15 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// TruncatePayload keeps an over-limit payload as a JSON string holding the
// start of its JSON text (at most limit bytes encoded, cut on a UTF-8
// boundary), with the original's length and SHA-256.
func TruncatePayload(p []byte, limit int) (json.RawMessage, *EventTruncation) {
	sum := sha256.Sum256(p)
	tr := &EventTruncation{OriginalBytes: int64(len(p)), SHA256: hex.EncodeToString(sum[:])}
	n := min(len(p), limit-2)
	for {
		for n > 0 && !utf8.RuneStart(p[n]) && n < len(p) {
			n--
		}
		s := encodeString(p[:n])
		if len(s) <= limit || n == 0 {
			return s, tr
		}
		// Escapes made it longer: shrink by the overshoot and retry.
		n -= len(s) - limit
		if n < 0 {
			n = 0
		}
	}
}

func encodeString(b []byte) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(b)) // a string always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// RedactEmbeddings replaces numeric arrays under "embedding"/"embeddings"
// keys, at any depth, with {"dims":n,"norm":x} (an array of numeric arrays
// under "embeddings" becomes an array of those). Everything else keeps its
// tokens and key order; insignificant whitespace is dropped only when a
// replacement is made. A payload without such a key is returned as is.
func RedactEmbeddings(p json.RawMessage) json.RawMessage {
	if !bytes.Contains(p, []byte(`"embedding`)) {
		return p
	}
	trimmed := bytes.TrimSpace(p)
	out, changed, ok := redactValue(make([]byte, 0, len(trimmed)/2), trimmed)
	if !ok || !changed {
		return p
	}
	return out
}

// redactValue appends v (one complete JSON value, trimmed) to dst with
// embeddings summarised.
func redactValue(dst, v []byte) ([]byte, bool, bool) {
	if len(v) == 0 {
		return dst, false, false
	}
	switch v[0] {
	case '{':
		changed := false
		dst = append(dst, '{')
		i := skipSpace(v, 1)
		if i < len(v) && v[i] == '}' {
			return append(dst, '}'), false, true
		}
		for first := true; ; first = false {
			if i >= len(v) || v[i] != '"' {
				return dst, false, false
			}
			kEnd := skipString(v, i)
			if kEnd < 0 {
				return dst, false, false
			}
			key := v[i:kEnd]
			i = skipSpace(v, kEnd)
			if i >= len(v) || v[i] != ':' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
			vEnd := skipValue(v, i)
			if vEnd < 0 {
				return dst, false, false
			}
			val := v[i:vEnd]
			if !first {
				dst = append(dst, ',')
			}
			dst = append(dst, key...)
			dst = append(dst, ':')
			k := string(key)
			if sum, ok := digestEmbeddingKey(k, val); ok {
				dst = append(dst, sum...)
				changed = true
			} else {
				var c, ok bool
				dst, c, ok = redactValue(dst, val)
				if !ok {
					return dst, false, false
				}
				changed = changed || c
			}
			i = skipSpace(v, vEnd)
			if i >= len(v) {
				return dst, false, false
			}
			if v[i] == '}' {
				return append(dst, '}'), changed, true
			}
			if v[i] != ',' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
		}
	case '[':
		changed := false
		dst = append(dst, '[')
		i := skipSpace(v, 1)
		if i < len(v) && v[i] == ']' {
			return append(dst, ']'), false, true
		}
		for first := true; ; first = false {
			end := skipValue(v, i)
			if end < 0 {
				return dst, false, false
			}
			if !first {
				dst = append(dst, ',')
			}
			var c, ok bool
			dst, c, ok = redactValue(dst, v[i:end])
			if !ok {
				return dst, false, false
			}
			changed = changed || c
			i = skipSpace(v, end)
			if i >= len(v) {
				return dst, false, false
			}
			if v[i] == ']' {
				return append(dst, ']'), changed, true
			}
			if v[i] != ',' {
				return dst, false, false
			}
			i = skipSpace(v, i+1)
		}
	}
	return append(dst, v...), false, true
}

func digestEmbeddingKey(key string, val []byte) ([]byte, bool) {
	if key != `"embedding"` && key != `"embeddings"` {
		return nil, false
	}
	return digestEmbedding(val, key == `"embeddings"`)
}

// summarise returns {"dims":n,"norm":x} for a non-empty array of numbers,
// or (nested) an array of those for a non-empty array of such arrays.
func digestEmbedding(v []byte, nested bool) ([]byte, bool) {
	if len(v) == 0 || v[0] != '[' {
		return nil, false
	}
	var dims int
	var sq float64
	var parts [][]byte
	i := skipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return nil, false
	}
	for {
		end := skipValue(v, i)
		if end < 0 {
			return nil, false
		}
		tok := v[i:end]
		if tok[0] == '[' && nested {
			s, ok := digestEmbedding(tok, false)
			if !ok {
				return nil, false
			}
			parts = append(parts, s)
		} else {
			if nested && len(parts) > 0 {
				return nil, false
			}
			f, err := strconv.ParseFloat(string(tok), 64)
			if err != nil || tok[0] == '"' {
				return nil, false
			}
			dims++
			sq += f * f
		}
		i = skipSpace(v, end)
		if i >= len(v) {
			return nil, false
		}
		if v[i] == ']' {
			break
		}
		if v[i] != ',' {
			return nil, false
		}
		i = skipSpace(v, i+1)
	}
	if len(parts) > 0 {
		if dims > 0 {
			return nil, false
		}
		out := []byte{'['}
		for j, p := range parts {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(out, p...)
		}
		return append(out, ']'), true
	}
	norm := math.Round(math.Sqrt(sq)*1e6) / 1e6
	out := []byte(`{"dims":`)
	out = strconv.AppendInt(out, int64(dims), 10)
	out = append(out, `,"norm":`...)
	out = strconv.AppendFloat(out, norm, 'g', -1, 64)
	return append(out, '}'), true
}

// ValidEventType reports whether s is an event type: a letter, then up to 127 letters, digits
// and _ . : - (EventTypePattern).
func ValidEventType(s string) bool {
	if len(s) < 1 || len(s) > MaxEventTypeLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if i == 0 {
			if !letter {
				return false
			}
			continue
		}
		if !letter && (c < '0' || c > '9') && c != '_' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

func validRunID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '@', c == '+', c == '=', c == '-':
		default:
			return false
		}
	}
	return true
}

func newRunID() string { return core.NewID("run-", 15) }
