package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/gen"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// TestSpecIsTheGate walks every operation of api/openapi.yaml that takes a
// JSON body and, starting from each of its request examples, breaks ONE
// thing at a time: a required field missing, a field of the wrong JSON
// type, a string one longer than its maxLength, a number just outside its
// minimum/maximum, an unknown field where the schema closes the object.
// Each must be a 4xx problem whose `path` or `errors[].pointer` names the
// field, and every response passes through specGate.
func TestSpecIsTheGate(t *testing.T) {
	t.Parallel()
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.NewServer(server.Deps{
		App: app.New(memory.New(), core.Capabilities{
			Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true}},
		}, app.WithEmbedders(hash)),
		MaxBodyBytes: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(specGate(t, h))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv}

	kinds := map[string]int{}
	ops := 0
	for _, template := range spec.Paths.InMatchingOrder() {
		item := spec.Paths.Value(template)
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			ops++
			path := fillPath(template)
			var examples []any
			if mt.Example != nil {
				examples = append(examples, mt.Example)
			}
			for _, name := range sortedKeys(mt.Examples) {
				if ex := mt.Examples[name]; ex != nil && ex.Value != nil {
					examples = append(examples, ex.Value.Value)
				}
			}
			if len(examples) == 0 {
				t.Errorf("%s: no request example to start from", op.OperationID)
				continue
			}
			seen := map[string]bool{}
			for _, ex := range examples {
				base := roundTrip(t, ex)
				// The example itself passes the spec's own validation.
				r := e.do(method, path, "", mustJSON(t, base))
				if r.status == 400 {
					t.Errorf("%s: its own example is refused: %s", op.OperationID, r.body)
				}
				for _, c := range mutations(mt.Schema.Value, base) {
					name := op.OperationID + "/" + c.kind + "/" + dottedOf(c.ptr)
					if seen[name] {
						continue
					}
					seen[name] = true
					kinds[c.kind]++
					t.Run(name, func(t *testing.T) {
						body := mustJSON(t, c.body)
						r := e.do(method, path, "", body)
						if r.status < 400 || r.status >= 500 {
							t.Fatalf("%s %s: status %d, want 4xx\nbody sent: %.300s\nanswer: %s", method, path, r.status, body, r.body)
						}
						p := r.json(t)
						if !namesField(p, c.ptr) {
							t.Errorf("%s %s: the problem does not name %q (path %v, errors %v)\nanswer: %s",
								method, path, dottedOf(c.ptr), p["path"], p["errors"], r.body)
						}
					})
				}
			}
		}
	}
	if ops < 9 {
		t.Errorf("walked %d operations with a JSON body; the spec has at least 9", ops)
	}
	for _, k := range []string{"missing", "wrong-type", "too-long", "out-of-range", "unknown"} {
		if kinds[k] == 0 {
			t.Errorf("no %s case generated from the spec", k)
		}
	}
	t.Logf("walked %d operations: %v", ops, kinds)
}

type mutation struct {
	kind string
	ptr  []string
	body any
}

// mutations breaks base one field at a time, guided by schema.
func mutations(schema *openapi3.Schema, base any) []mutation {
	var out []mutation
	var walk func(s *openapi3.Schema, v any, ptr []string)
	walk = func(s *openapi3.Schema, v any, ptr []string) {
		if s == nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			props, required := objectShape(s)
			for _, r := range required {
				if _, ok := v[r]; ok {
					out = append(out, mutation{"missing", at(ptr, r), edit(base, at(ptr, r), nil, true)})
				}
			}
			if len(s.AllOf) == 0 && s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
				out = append(out, mutation{"unknown", at(ptr, "zzUnknownField"), edit(base, at(ptr, "zzUnknownField"), 1, false)})
			}
			for _, name := range sortedKeys(props) {
				ps := props[name].Value
				if ps == nil {
					continue
				}
				fp := at(ptr, name)
				child, present := v[name]
				if present {
					if w, ok := wrongType(ps); ok {
						out = append(out, mutation{"wrong-type", fp, edit(base, fp, w, false)})
					}
				}
				if ps.Type.Is("string") && ps.MaxLength != nil && *ps.MaxLength < 100_000 {
					out = append(out, mutation{"too-long", fp, edit(base, fp, strings.Repeat("x", int(*ps.MaxLength)+1), false)})
				}
				if n, ok := outOfRange(ps); ok {
					out = append(out, mutation{"out-of-range", fp, edit(base, fp, n, false)})
				}
				if present {
					walk(ps, child, fp)
				}
			}
		case []any:
			if s.Items != nil && s.Items.Value != nil && len(v) > 0 {
				walk(s.Items.Value, v[0], at(ptr, "0"))
			}
		}
	}
	walk(schema, base, nil)
	return out
}

// objectShape merges an object schema's properties and required fields
// with those of its allOf parts.
func objectShape(s *openapi3.Schema) (openapi3.Schemas, []string) {
	props := openapi3.Schemas{}
	required := slices.Clone(s.Required)
	for k, v := range s.Properties {
		props[k] = v
	}
	for _, part := range s.AllOf {
		if part.Value == nil {
			continue
		}
		p, r := objectShape(part.Value)
		for k, v := range p {
			props[k] = v
		}
		required = append(required, r...)
	}
	slices.Sort(required)
	return props, slices.Compact(required)
}

// wrongType returns a value of a JSON type the schema does not allow.
func wrongType(s *openapi3.Schema) (any, bool) {
	if s.Type == nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 || len(s.Type.Slice()) != 1 {
		return nil, false
	}
	switch {
	case s.Type.Is("string"):
		return 12345, true
	case s.Type.Is("number"), s.Type.Is("integer"):
		return "not-a-number", true
	case s.Type.Is("boolean"):
		return "yes", true
	case s.Type.Is("object"):
		return "not-an-object", true
	case s.Type.Is("array"):
		return "not-an-array", true
	}
	return nil, false
}

// outOfRange returns a number just outside the schema's bounds.
func outOfRange(s *openapi3.Schema) (any, bool) {
	if s.Type == nil || !s.Type.Is("number") && !s.Type.Is("integer") {
		return nil, false
	}
	integer := s.Type.Is("integer")
	step := 1.0
	if !integer {
		step = 0.5
	}
	switch {
	case s.Max != nil:
		if s.ExclusiveMax.Bool != nil && *s.ExclusiveMax.Bool {
			return *s.Max, true
		}
		if integer {
			return math.Floor(*s.Max) + 1, true
		}
		return *s.Max + step, true
	case s.Min != nil:
		if s.ExclusiveMin.Bool != nil && *s.ExclusiveMin.Bool {
			return *s.Min, true
		}
		if integer {
			return math.Ceil(*s.Min) - 1, true
		}
		return *s.Min - step, true
	}
	return nil, false
}

// namesField reports whether a problem names the field at ptr, by its
// dotted `path` or an `errors[].pointer`.
func namesField(p map[string]any, ptr []string) bool {
	if path, _ := p["path"].(string); path == dottedOf(ptr) {
		return true
	}
	want := "#/" + strings.Join(escapePtr(ptr), "/")
	errs, _ := p["errors"].([]any)
	for _, e := range errs {
		if m, _ := e.(map[string]any); m != nil && m["pointer"] == want {
			return true
		}
	}
	return false
}

func dottedOf(ptr []string) string {
	var b strings.Builder
	for _, seg := range ptr {
		if strings.Trim(seg, "0123456789") == "" && seg != "" {
			b.WriteString("[" + seg + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

func escapePtr(ptr []string) []string {
	out := make([]string, len(ptr))
	for i, s := range ptr {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}

func at(ptr []string, seg string) []string {
	return append(slices.Clone(ptr), seg)
}

// edit returns a deep copy of root with the value at ptr set (or deleted).
func edit(root any, ptr []string, v any, del bool) any {
	var cp any
	b, _ := json.Marshal(root)
	_ = json.Unmarshal(b, &cp)
	cur := cp
	for i, seg := range ptr {
		last := i == len(ptr)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, seg)
				} else {
					c[seg] = v
				}
				return cp
			}
			cur = c[seg]
		case []any:
			var idx int
			_, _ = fmt.Sscan(seg, &idx)
			if last {
				c[idx] = v
				return cp
			}
			cur = c[idx]
		}
	}
	return cp
}

func roundTrip(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func fillPath(template string) string {
	values := map[string]string{"conversationId": "c1", "memoryId": "chat", "runId": "run-1", "turn": "1"}
	return pathParam.ReplaceAllStringFunc(template, func(m string) string {
		if v, ok := values[m[1:len(m)-1]]; ok {
			return v
		}
		return "x1"
	})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
