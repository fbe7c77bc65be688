// Package eventio decodes the body of POST /v1/runs/{runId}/events — a JSON document
// {"events": [...]} or NDJSON, one event object per line — in one pass that also enforces the
// API's EventBatch and EventInput schemas.
//
// Event batches are the service's largest and most frequent bodies (up to 1,000 events per
// request, streamed by every agent run). Checking them with the generic OpenAPI validator and
// then decoding them again into the generated types cost more than everything else on that
// path, storage included. This package does both at once with a streaming tokenizer
// (github.com/go-json-experiment/json/jsontext, the Go team's JSON v2 work): each payload and
// meta object is kept as the exact bytes the client sent, copied into one buffer per batch,
// and nothing else is allocated per event but its type string.
//
// api/openapi.yaml names Batch as the Go type of EventBatch (x-go-type), so the generated
// handler decodes JSON bodies through Batch.UnmarshalJSON. The limits here are the schema's;
// eventio_test.go reads them from the spec so the two cannot drift apart.
//
// Compared with the generic validator, decoding is stricter in two ways that JSON's RFC
// recommends: a payload object with a repeated member name and text that is not valid UTF-8
// are refused, as invalid JSON, rather than silently resolved.
package eventio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/footprint/footprint/internal/core/runs"
	"github.com/go-json-experiment/json/jsontext"
)

// Limits of one batch, as api/openapi.yaml states them (EventBatch, EventType): the runs
// area's own, so that the decoder and the service refuse at the same bounds.
const (
	// MaxEvents is the most events one batch may hold.
	MaxEvents = runs.MaxEventBatch
	// MaxTypeLength is the longest event type, in bytes.
	MaxTypeLength = runs.MaxEventTypeLength
	// TypePattern is the pattern every event type matches; ValidType implements it.
	TypePattern = runs.EventTypePattern
	// ExampleType is the spec's example of an event type, offered as the fix for a bad one.
	ExampleType = "context.injected"
)

// Batch is an event batch: the JSON request body of appendEvents.
type Batch struct {
	Events []Event `json:"events"`
}

// Event is one event to append.
type Event struct {
	// Type matches TypePattern.
	Type string `json:"type"`
	// Payload is any JSON value, exactly as sent (key order matters to the repeat rule);
	// the JSON null is the four bytes "null".
	Payload json.RawMessage `json:"payload"`
	// Meta is a JSON object exactly as sent, or nil when absent.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// FieldError says which part of a batch broke which rule of the schema.
type FieldError struct {
	// Pointer locates the offending value: ["events", "3", "type"]. Empty means the body.
	Pointer []string
	// Reason completes "`events[3].type` ...": "is required", "must be a string".
	Reason string
	// Keyword is the schema rule broken: "syntax" (not JSON at all), "type", "required",
	// "additionalProperties", "pattern", "maxItems" or "nullable".
	Keyword string
	// Fix is a value that would satisfy the rule, when there is an obvious one.
	Fix any
}

func (e *FieldError) Error() string {
	if len(e.Pointer) == 0 {
		return "event batch: " + e.Reason
	}
	return "event batch: /" + strings.Join(e.Pointer, "/") + " " + e.Reason
}

// UnmarshalJSON decodes and checks a {"events": [...]} document. Every error it returns is a
// *FieldError.
func (b *Batch) UnmarshalJSON(data []byte) error {
	p := newParser(data)
	events, err := p.document()
	if err != nil {
		return preferSyntax(data, false, err)
	}
	b.Events = events
	return nil
}

// DecodeNDJSON decodes and checks newline-delimited events: one EventInput object per line,
// blank lines skipped. Errors are *FieldError values whose pointer names the event as
// events/i, i counting events (not lines) from 0, so they read like the JSON form's.
func DecodeNDJSON(data []byte) ([]Event, error) {
	p := newParser(data)
	var events []Event
	for {
		// The decoder reads a stream of top-level values separated by whitespace; newlines
		// are whitespace, so each line's object is one value. A line holding two objects is
		// caught below by comparing line numbers.
		if p.dec.PeekKind() == 0 {
			if _, err := p.dec.ReadToken(); errors.Is(err, io.EOF) {
				return events, nil
			} else if err != nil {
				return nil, p.syntax(err, []string{"events", strconv.Itoa(len(events))})
			}
		}
		if len(events) == MaxEvents {
			return nil, preferSyntax(data, true, &FieldError{Pointer: []string{"events"}, Keyword: "maxItems",
				Reason: fmt.Sprintf("may hold at most %d events (lines); send the rest in another batch", MaxEvents)})
		}
		start := skipSpace(data, p.dec.InputOffset())
		p.line = []string{"events", strconv.Itoa(len(events))}
		ev, err := p.event(len(events))
		if err != nil {
			return nil, preferSyntax(data, true, err)
		}
		end := p.dec.InputOffset()
		if bytes.IndexByte(data[start:end], '\n') >= 0 || !restOfLineBlank(data[end:]) {
			return nil, &FieldError{Pointer: []string{"events", strconv.Itoa(len(events))}, Keyword: "syntax",
				Reason: "must be one JSON object alone on its line (NDJSON)"}
		}
		events = append(events, ev)
	}
}

// preferSyntax returns the first syntax error of the whole body when it has one, and err
// otherwise: a schema error found early must not hide that the body is not JSON at all.
func preferSyntax(data []byte, ndjson bool, err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Keyword == "syntax" {
		return err
	}
	p := newParser(data)
	for i := 0; ; i++ {
		if ndjson {
			p.line = []string{"events", strconv.Itoa(i)}
		}
		if _, rerr := p.dec.ReadValue(); errors.Is(rerr, io.EOF) {
			return err
		} else if rerr != nil {
			return p.syntax(rerr, p.line)
		}
		if !ndjson {
			if _, rerr := p.dec.ReadToken(); !errors.Is(rerr, io.EOF) {
				return &FieldError{Keyword: "syntax", Reason: "must hold one JSON value, with nothing after it"}
			}
			return err
		}
	}
}

// skipSpace returns the offset of the first byte at or after off that is not JSON whitespace.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n':
			off++
		default:
			return off
		}
	}
	return off
}

// restOfLineBlank reports whether rest holds only blanks up to its first newline.
func restOfLineBlank(rest []byte) bool {
	for _, c := range rest {
		switch c {
		case '\n':
			return true
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
	return true
}

// ValidType reports whether t matches TypePattern.
func ValidType(t string) bool { return runs.ValidEventType(t) }

type parser struct {
	dec   *jsontext.Decoder
	arena []byte // every payload and meta, back to back; never grows past len(data)
	// line, for NDJSON, is the pointer to the event being read: the tokenizer's own
	// pointers start at each line's value.
	line []string
}

func newParser(data []byte) *parser {
	return &parser{
		dec:   jsontext.NewDecoder(bytes.NewBuffer(data)),
		arena: make([]byte, 0, len(data)),
	}
}

// keep copies v into the arena and returns the copy, capped so appends never alias.
func (p *parser) keep(v jsontext.Value) json.RawMessage {
	start := len(p.arena)
	p.arena = append(p.arena, v...)
	return p.arena[start:len(p.arena):len(p.arena)]
}

// document reads {"events": [...]}.
func (p *parser) document() ([]Event, error) {
	if k := p.dec.PeekKind(); k != '{' {
		return nil, p.mismatch(nil, k, "must be a JSON object with an `events` array", map[string]any{"events": []any{}})
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, nil)
	}
	var events []Event
	seen := false
	for p.dec.PeekKind() != '}' {
		name, err := p.name(nil)
		if err != nil {
			return nil, err
		}
		if name != "events" {
			return nil, unknown(nil, name)
		}
		seen = true
		if events, err = p.events(); err != nil {
			return nil, err
		}
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, nil)
	}
	if !seen {
		return nil, &FieldError{Pointer: []string{"events"}, Keyword: "required", Reason: "is required"}
	}
	if _, err := p.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, &FieldError{Keyword: "syntax", Reason: "must hold one JSON value, with nothing after it"}
	}
	if events == nil {
		events = []Event{}
	}
	return events, nil
}

// events reads the array of the events member.
func (p *parser) events() ([]Event, error) {
	ptr := []string{"events"}
	if k := p.dec.PeekKind(); k != '[' {
		return nil, p.mismatch(ptr, k, "must be an array of events", []any{})
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, ptr)
	}
	events := make([]Event, 0, 16)
	for p.dec.PeekKind() != ']' {
		if len(events) == MaxEvents {
			return nil, &FieldError{Pointer: ptr, Keyword: "maxItems",
				Reason: fmt.Sprintf("may hold at most %d events; send the rest in another batch", MaxEvents)}
		}
		ev, err := p.event(len(events))
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, ptr)
	}
	return events, nil
}

// event reads one {type, payload, meta?} object, the i-th of the batch.
func (p *parser) event(i int) (Event, error) {
	ptr := []string{"events", strconv.Itoa(i)}
	if k := p.dec.PeekKind(); k != '{' {
		return Event{}, p.mismatch(ptr, k, "must be an event object: {type, payload, meta?}",
			map[string]any{"type": ExampleType, "payload": map[string]any{}})
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return Event{}, p.syntax(err, ptr)
	}
	var (
		ev         Event
		hasPayload bool
	)
	for p.dec.PeekKind() != '}' {
		name, err := p.name(ptr)
		if err != nil {
			return Event{}, err
		}
		field := append(ptr[:len(ptr):len(ptr)], name)
		switch name {
		case "type":
			if ev.Type, err = p.eventType(field); err != nil {
				return Event{}, err
			}
		case "payload":
			v, err := p.dec.ReadValue()
			if err != nil {
				return Event{}, p.syntax(err, field)
			}
			ev.Payload, hasPayload = p.keep(v), true
		case "meta":
			if k := p.dec.PeekKind(); k != '{' {
				return Event{}, p.mismatch(field, k, "must be an object, such as {\"wallClockMs\": 1796019302433}",
					map[string]any{"wallClockMs": 1796019302433})
			}
			v, err := p.dec.ReadValue()
			if err != nil {
				return Event{}, p.syntax(err, field)
			}
			ev.Meta = p.keep(v)
		default:
			return Event{}, unknown(ptr, name)
		}
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return Event{}, p.syntax(err, ptr)
	}
	switch {
	case ev.Type == "":
		return Event{}, &FieldError{Pointer: append(ptr, "type"), Keyword: "required", Reason: "is required", Fix: ExampleType}
	case !hasPayload:
		return Event{}, &FieldError{Pointer: append(ptr, "payload"), Keyword: "required",
			Reason: "is required (any JSON value; send null for none)", Fix: map[string]any{}}
	}
	return ev, nil
}

// eventType reads and checks an event's type.
func (p *parser) eventType(field []string) (string, error) {
	if k := p.dec.PeekKind(); k != '"' {
		return "", p.mismatch(field, k, "must be a string", ExampleType)
	}
	v, err := p.dec.ReadValue()
	if err != nil {
		return "", p.syntax(err, field)
	}
	t, err := unquote(v)
	if err != nil {
		return "", p.syntax(err, field)
	}
	if !ValidType(t) {
		return "", &FieldError{Pointer: field, Keyword: "pattern", Fix: ExampleType,
			Reason: "must be a letter, then up to 127 letters, digits and `_` `.` `:` `-` (pattern " + TypePattern + ")"}
	}
	return t, nil
}

// name reads an object member's name.
func (p *parser) name(ptr []string) (string, error) {
	v, err := p.dec.ReadValue()
	if err != nil {
		return "", p.syntax(err, ptr)
	}
	name, err := unquote(v)
	if err != nil {
		return "", p.syntax(err, ptr)
	}
	return name, nil
}

// unquote returns a JSON string's text; names and types are nearly always escape-free.
func unquote(v jsontext.Value) (string, error) {
	if len(v) >= 2 && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

// mismatch reports a value of the wrong JSON type at ptr. The value is consumed first, so a
// body that is not JSON at all is reported as such rather than as a type mismatch.
func (p *parser) mismatch(ptr []string, k jsontext.Kind, want string, fix any) error {
	if _, err := p.dec.ReadValue(); err != nil {
		return p.syntax(err, ptr)
	}
	kw := "type"
	if k == 'n' {
		kw = "nullable"
	}
	return &FieldError{Pointer: ptr, Keyword: kw, Reason: want + ", not " + kindName(k), Fix: fix}
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "nothing"
}

func unknown(ptr []string, name string) error {
	return &FieldError{Pointer: append(ptr[:len(ptr):len(ptr)], name), Keyword: "additionalProperties",
		Reason: "is not a field of this object; remove it or fix its name"}
}

// syntax reports text that is not JSON, at the deepest place the tokenizer could name.
func (p *parser) syntax(err error, at []string) error {
	var se *jsontext.SyntacticError
	reason := "is not valid JSON"
	if errors.As(err, &se) {
		if ptr := pointerTokens(se.JSONPointer); len(ptr) > 0 {
			at = append(slices.Clip(p.line), ptr...)
		}
		reason = fmt.Sprintf("is not valid JSON (at byte %d: %s)", se.ByteOffset, describe(se.Err))
	} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		reason = "is not valid JSON (the body ends too soon)"
	}
	return &FieldError{Pointer: at, Keyword: "syntax", Reason: reason}
}

// describe says what the tokenizer found wrong, in this API's words: its own messages quote
// the client's input back (`invalid character 'x'`, a stretch of the body after a bad escape),
// which a problem must not echo.
func describe(err error) string {
	if err == nil {
		return "unexpected input"
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "surrogate"):
		return "an escape of half a UTF-16 surrogate pair alone; \\ud800-\\udfff are valid only as a high-low pair"
	case strings.Contains(msg, "UTF-8"):
		return "bytes that are not UTF-8"
	case strings.Contains(msg, "escape"):
		return "an invalid escape sequence in a string"
	case strings.Contains(msg, "duplicate"):
		return "a name that appears twice in one object"
	case strings.Contains(msg, "control character"):
		return "a control character that a JSON string must escape"
	case strings.Contains(msg, "invalid character"):
		return "a character that cannot appear there"
	case strings.Contains(msg, "EOF") || strings.Contains(msg, "end of"):
		return "the input ends too soon"
	}
	return "malformed JSON"
}

func pointerTokens(p jsontext.Pointer) []string {
	if p == "" {
		return nil
	}
	var out []string
	for tok := range p.Tokens() {
		out = append(out, tok)
	}
	return out
}
