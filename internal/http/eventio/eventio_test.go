package eventio_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/footprint/footprint/internal/http/eventio"
	"github.com/footprint/footprint/internal/http/gen"
)

func schemas(t testing.TB) openapi3.Schemas {
	t.Helper()
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	return spec.Components.Schemas
}

// TestLimitsMatchSpec keeps the hand-written decoder and api/openapi.yaml in step: every
// limit and field eventio enforces is read back from the spec here.
func TestLimitsMatchSpec(t *testing.T) {
	s := schemas(t)
	batch, input, typ := s["EventBatch"].Value, s["EventInput"].Value, s["EventType"].Value
	if batch.AdditionalProperties.Has == nil || *batch.AdditionalProperties.Has ||
		!slices.Equal(batch.Required, []string{"events"}) || len(batch.Properties) != 1 {
		t.Errorf("EventBatch is no longer a closed object with one required `events`: update eventio")
	}
	events := batch.Properties["events"].Value
	if events.MaxItems == nil || *events.MaxItems != eventio.MaxEvents {
		t.Errorf("events maxItems = %v, eventio.MaxEvents = %d", events.MaxItems, eventio.MaxEvents)
	}
	if input.AdditionalProperties.Has == nil || *input.AdditionalProperties.Has {
		t.Errorf("EventInput is no longer closed: update eventio")
	}
	var props []string
	for k := range input.Properties {
		props = append(props, k)
	}
	slices.Sort(props)
	req := slices.Sorted(slices.Values(input.Required))
	if !slices.Equal(props, []string{"meta", "payload", "type"}) || !slices.Equal(req, []string{"payload", "type"}) {
		t.Errorf("EventInput fields %v required %v: update eventio", props, req)
	}
	if m := input.Properties["meta"].Value; !m.Type.Is("object") || m.Nullable {
		t.Errorf("meta is no longer a non-null object: update eventio")
	}
	for _, v := range []any{nil, true, 1.5, "text", []any{}, map[string]any{}} {
		if err := input.Properties["payload"].Value.VisitJSON(v); err != nil {
			t.Errorf("payload is no longer any JSON value (%v): update eventio", err)
		}
	}
	if typ.Pattern != eventio.TypePattern || typ.MaxLength == nil || *typ.MaxLength != eventio.MaxTypeLength ||
		typ.Example != eventio.ExampleType {
		t.Errorf("EventType pattern %q maxLength %v example %v; eventio has %q %d %q",
			typ.Pattern, typ.MaxLength, typ.Example, eventio.TypePattern, eventio.MaxTypeLength, eventio.ExampleType)
	}
}

func TestDecodeBatch(t *testing.T) {
	var b eventio.Batch
	body := `{"events":[
		{"type":"context.injected","payload":{"z":1,"a":[1,2],"s":"\u00e9"},"meta":{"wallClockMs":1796019302417}},
		{"payload":null,"type":"llm\u002erequest"},
		{"type":"x","payload":"text"}]}`
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		t.Fatal(err)
	}
	want := []eventio.Event{
		{Type: "context.injected", Payload: json.RawMessage(`{"z":1,"a":[1,2],"s":"\u00e9"}`), Meta: json.RawMessage(`{"wallClockMs":1796019302417}`)},
		{Type: "llm.request", Payload: json.RawMessage(`null`)},
		{Type: "x", Payload: json.RawMessage(`"text"`)},
	}
	if fmt.Sprintf("%q", b.Events) != fmt.Sprintf("%q", want) {
		t.Errorf("got  %q\nwant %q", b.Events, want)
	}
	// The payload bytes are the client's, escapes and key order included.
	if string(b.Events[0].Payload) != `{"z":1,"a":[1,2],"s":"\u00e9"}` {
		t.Errorf("payload rewritten: %s", b.Events[0].Payload)
	}
	var empty eventio.Batch
	if err := json.Unmarshal([]byte(`{"events":[]}`), &empty); err != nil || empty.Events == nil || len(empty.Events) != 0 {
		t.Errorf("empty batch: %v %#v", err, empty.Events)
	}
}

func TestDecodeBatchErrors(t *testing.T) {
	many := `{"events":[` + strings.Repeat(`{"type":"a","payload":1},`, eventio.MaxEvents) + `{"type":"a","payload":1}]}`
	for _, tc := range []struct {
		name, body, ptr, keyword string
	}{
		{"not an object", `[]`, "", "type"},
		{"events missing", `{}`, "/events", "required"},
		{"events null", `{"events":null}`, "/events", "nullable"},
		{"events not an array", `{"events":{}}`, "/events", "type"},
		{"unknown top-level field", `{"events":[],"run":1}`, "/run", "additionalProperties"},
		{"event not an object", `{"events":[1]}`, "/events/0", "type"},
		{"type missing", `{"events":[{"payload":1}]}`, "/events/0/type", "required"},
		{"payload missing", `{"events":[{"type":"a"},{"type":"b"}]}`, "/events/0/payload", "required"},
		{"type not a string", `{"events":[{"type":"a","payload":1},{"type":7,"payload":1}]}`, "/events/1/type", "type"},
		{"type pattern", `{"events":[{"type":"9lives","payload":1}]}`, "/events/0/type", "pattern"},
		{"type empty", `{"events":[{"type":"","payload":1}]}`, "/events/0/type", "pattern"},
		{"type too long", `{"events":[{"type":"` + strings.Repeat("a", 129) + `","payload":1}]}`, "/events/0/type", "pattern"},
		{"type escaped NUL", `{"events":[{"type":"a\u0000","payload":1}]}`, "/events/0/type", "pattern"},
		{"meta not an object", `{"events":[{"type":"a","payload":1,"meta":[]}]}`, "/events/0/meta", "type"},
		{"meta null", `{"events":[{"type":"a","payload":1,"meta":null}]}`, "/events/0/meta", "nullable"},
		{"unknown event field", `{"events":[{"type":"a","payload":1,"metadata":{}}]}`, "/events/0/metadata", "additionalProperties"},
		{"duplicate field", `{"events":[{"type":"a","type":"b","payload":1}]}`, "/events/0/type", "syntax"},
		{"duplicate payload key", `{"events":[{"type":"a","payload":{"k":1,"k":2}}]}`, "/events/0/payload/k", "syntax"},
		{"invalid UTF-8", "{\"events\":[{\"type\":\"a\",\"payload\":\"\xff\"}]}", "/events/0/payload", "syntax"},
		{"too many", many, "/events", "maxItems"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b eventio.Batch
			wantFieldError(t, b.UnmarshalJSON([]byte(tc.body)), tc.ptr, tc.keyword)
		})
	}
}

// A syntax error's reason never quotes the body back.
func TestSyntaxReasonsDoNotEchoInput(t *testing.T) {
	for _, body := range []string{
		`{"events":[{"type":"a","payload":"\ud800 SECRET-TEXT"}]}`,
		`{"events":[{"type":"a","payload":"\uZZZZ SECRET-TEXT"}]}`,
		`{"events":[{"type":"a","payload":xSECRET-TEXT}]}`,
		"{\"events\":[{\"type\":\"a\",\"payload\":\"\xffSECRET-TEXT\"}]}",
	} {
		var b eventio.Batch
		var fe *eventio.FieldError
		if err := b.UnmarshalJSON([]byte(body)); !errors.As(err, &fe) || fe.Keyword != "syntax" {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if strings.Contains(fe.Reason, "SECR") || strings.Contains(fe.Reason, "ZZZZ") || strings.Contains(fe.Reason, "'x'") || strings.Contains(fe.Reason, "jsontext") {
			t.Errorf("%s: the reason quotes the input: %s", body, fe.Reason)
		}
	}
}

func TestDecodeNDJSON(t *testing.T) {
	got, err := eventio.DecodeNDJSON([]byte("{\"type\":\"a\",\"payload\":{\"b\":1,\"a\":2}}\r\n\n  \n{\"type\":\"b\",\"payload\":null,\"meta\":{\"wallClockMs\":5}}"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "a" || string(got[0].Payload) != `{"b":1,"a":2}` ||
		got[1].Type != "b" || string(got[1].Payload) != "null" || string(got[1].Meta) != `{"wallClockMs":5}` {
		t.Errorf("got %q", got)
	}
	if got, err := eventio.DecodeNDJSON(nil); err != nil || len(got) != 0 {
		t.Errorf("empty body: %v %v", got, err)
	}
	for _, tc := range []struct {
		name, body, ptr, keyword string
	}{
		{"bad type on the second event", "{\"type\":\"a\",\"payload\":1}\n\n{\"type\":\"-\",\"payload\":1}\n", "/events/1/type", "pattern"},
		{"two objects on one line", `{"type":"a","payload":1} {"type":"b","payload":1}`, "/events/0", "syntax"},
		{"an object over two lines", "{\"type\":\"a\",\n\"payload\":1}", "/events/0", "syntax"},
		{"not JSON", "{\"type\":\"a\",\"payload\":1}\nnope\n", "/events/1", "syntax"},
		{"an array line", "[1]\n", "/events/0", "type"},
		{"cut short", `{"type":"a","payload":`, "/events/0/payload", "syntax"},
		{"too many", strings.Repeat("{\"type\":\"a\",\"payload\":1}\n", eventio.MaxEvents+1), "/events", "maxItems"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eventio.DecodeNDJSON([]byte(tc.body))
			wantFieldError(t, err, tc.ptr, tc.keyword)
		})
	}
}

// wantFieldError checks that err is a *FieldError at pointer ptr ("/events/0/type") for keyword.
func wantFieldError(t *testing.T, err error, ptr, keyword string) {
	t.Helper()
	var fe *eventio.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T), want a *FieldError", err, err)
	}
	got := ""
	if len(fe.Pointer) > 0 {
		got = "/" + strings.Join(fe.Pointer, "/")
	}
	if got != ptr || fe.Keyword != keyword {
		t.Errorf("pointer %q keyword %q (%s), want %q %q", got, fe.Keyword, fe.Reason, ptr, keyword)
	}
}

// FuzzBatchAgreesWithSchema checks the hand-written decoder against the spec itself: on any
// body that is valid JSON (RFC 8259 strict: UTF-8, no repeated names), eventio accepts exactly
// what kin-openapi's validation of the EventBatch schema accepts, and keeps every event's type
// and payload as sent. Bodies that are not strict JSON are refused as syntax errors.
func FuzzBatchAgreesWithSchema(f *testing.F) {
	for _, seed := range []string{
		`{"events":[]}`,
		`{"events":[{"type":"context.injected","payload":{"slot":"system","contentHash":"h"},"meta":{"wallClockMs":1}}]}`,
		`{"events":[{"type":"a","payload":null},{"type":"b.c:d-e_f","payload":[1,"x",{"k":true}]}]}`,
		`{"events":[{"type":"a"}]}`,
		`{"events":[{"type":"1","payload":1}]}`,
		`{"events":[{"type":"a","payload":1,"meta":null}]}`,
		`{"events":[{"type":"a","payload":1,"x":1}]}`,
		`{"events":[{"type":"a","payload":{"k":1,"k":2}}]}`,
		`{"events":{}}`, `[]`, `null`, `{"events":[1,2]}`, `{"events":[{"type":"\u00e9","payload":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	schema := schemas(f)["EventBatch"].Value
	f.Fuzz(func(t *testing.T, body []byte) {
		var b eventio.Batch
		err := b.UnmarshalJSON(body)
		var fe *eventio.FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		if !jsontext.Value(body).IsValid() {
			if err == nil || fe.Keyword != "syntax" {
				t.Fatalf("accepted or misreported (%v) a body that is not strict JSON: %q", err, body)
			}
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // numbers beyond float64 are still JSON
		if dec.Decode(&v) != nil {
			t.Fatalf("encoding/json refuses a valid body: %q", body)
		}
		kinErr := schema.VisitJSON(v, openapi3.MultiErrors())
		if (kinErr == nil) != (err == nil) {
			t.Fatalf("schema says %v, eventio says %v, for %q", kinErr, err, body)
		}
		if err != nil {
			return
		}
		var ref struct {
			Events []struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
				Meta    json.RawMessage `json:"meta"`
			} `json:"events"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatal(err)
		}
		if len(ref.Events) != len(b.Events) {
			t.Fatalf("%d events, want %d", len(b.Events), len(ref.Events))
		}
		for i, e := range ref.Events {
			g := b.Events[i]
			if g.Type != e.Type || !bytes.Equal(g.Payload, e.Payload) || !bytes.Equal(g.Meta, e.Meta) {
				t.Fatalf("event %d: got %q %s %s, want %q %s %s", i, g.Type, g.Payload, g.Meta, e.Type, e.Payload, e.Meta)
			}
		}
	})
}
