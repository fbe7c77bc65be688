package mcp

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The tools' input and output schemas are the contract's own schemas, api/openapi.yaml's,
// translated from OpenAPI 3.0's dialect to the JSON Schema 2020-12 that MCP speaks. They are
// taken from the spec rather than reflected from the generated Go types because the spec is
// what the REST layer validates every request against (validate.go) and the Go types are
// generated from it losing most of it: lengths, patterns, bounds, enums, descriptions and
// examples have no Go spelling. A client reading a tool's schema therefore sees exactly the
// rules a refusal would quote.

const componentPrefix = "#/components/schemas/"

// converter turns OpenAPI schemas into JSON Schema values, collecting the components they
// reference as $defs so that recursive schemas (an Explanation holds earlier Explanations)
// stay finite.
type converter struct {
	components openapi3.Schemas
	defs       map[string]any
	pending    []string
}

func newConverter(spec *openapi3.T) *converter {
	return &converter{components: spec.Components.Schemas, defs: map[string]any{}}
}

// ref converts a schema reference: a component becomes a $ref to its $defs entry.
func (c *converter) ref(r *openapi3.SchemaRef) map[string]any {
	if r == nil {
		return map[string]any{}
	}
	if name, ok := strings.CutPrefix(r.Ref, componentPrefix); ok {
		if _, seen := c.defs[name]; !seen {
			c.defs[name] = nil // reserved; filled by finish
			c.pending = append(c.pending, name)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return c.schema(r.Value)
}

// schema converts one schema's own keywords (its references go through ref).
func (c *converter) schema(s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	if s.Type != nil && len(*s.Type) > 0 {
		types := append([]string(nil), *s.Type...)
		if s.Nullable && !contains(types, "null") {
			types = append(types, "null")
		}
		if len(types) == 1 {
			out["type"] = types[0]
		} else {
			out["type"] = types
		}
	}
	set := func(k string, v any, ok bool) {
		if ok {
			out[k] = v
		}
	}
	set("title", s.Title, s.Title != "")
	set("description", s.Description, s.Description != "")
	// OpenAPI's own formats (int32, int64, float, double) are not JSON Schema's, and strict
	// validators refuse unknown ones; the bounds that matter are spelled as minimum/maximum.
	set("format", s.Format, jsonSchemaFormats[s.Format])
	if len(s.Enum) > 0 {
		enum := append([]any(nil), s.Enum...)
		if s.Nullable && !containsAny(enum, nil) {
			enum = append(enum, nil)
		}
		out["enum"] = enum
	}
	set("default", s.Default, s.Default != nil)
	switch {
	case len(s.Examples) > 0:
		out["examples"] = s.Examples
	case s.Example != nil:
		out["examples"] = []any{s.Example}
	}
	set("deprecated", true, s.Deprecated)
	set("readOnly", true, s.ReadOnly)
	set("writeOnly", true, s.WriteOnly)
	set("minimum", deref(s.Min), s.Min != nil)
	set("maximum", deref(s.Max), s.Max != nil)
	if s.Min != nil && s.ExclusiveMin.Bool != nil && *s.ExclusiveMin.Bool {
		delete(out, "minimum")
		out["exclusiveMinimum"] = *s.Min
	}
	if s.Max != nil && s.ExclusiveMax.Bool != nil && *s.ExclusiveMax.Bool {
		delete(out, "maximum")
		out["exclusiveMaximum"] = *s.Max
	}
	set("exclusiveMinimum", deref(s.ExclusiveMin.Value), s.ExclusiveMin.Value != nil)
	set("exclusiveMaximum", deref(s.ExclusiveMax.Value), s.ExclusiveMax.Value != nil)
	set("multipleOf", deref(s.MultipleOf), s.MultipleOf != nil)
	set("minLength", s.MinLength, s.MinLength > 0)
	set("maxLength", deref(s.MaxLength), s.MaxLength != nil)
	set("pattern", s.Pattern, s.Pattern != "")
	set("minItems", s.MinItems, s.MinItems > 0)
	set("maxItems", deref(s.MaxItems), s.MaxItems != nil)
	set("uniqueItems", true, s.UniqueItems)
	if s.Items != nil {
		out["items"] = c.ref(s.Items)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			props[name] = c.ref(p)
		}
		out["properties"] = props
	}
	set("required", s.Required, len(s.Required) > 0)
	set("minProperties", s.MinProps, s.MinProps > 0)
	set("maxProperties", deref(s.MaxProps), s.MaxProps != nil)
	switch ap := s.AdditionalProperties; {
	case ap.Schema != nil:
		out["additionalProperties"] = c.ref(ap.Schema)
	case ap.Has != nil:
		out["additionalProperties"] = *ap.Has
	}
	for key, group := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		if len(group) == 0 {
			continue
		}
		subs := make([]any, len(group))
		for i, g := range group {
			subs[i] = c.ref(g)
		}
		out[key] = subs
	}
	if s.Not != nil {
		out["not"] = c.ref(s.Not)
	}
	set("const", s.Const, s.Const != nil)
	return out
}

// finish converts every component referenced so far (and those they reference) and returns
// them as a $defs object, or nil when none was.
func (c *converter) finish() map[string]any {
	for len(c.pending) > 0 {
		name := c.pending[0]
		c.pending = c.pending[1:]
		c.defs[name] = c.schema(c.components[name].Value)
	}
	if len(c.defs) == 0 {
		return nil
	}
	return c.defs
}

// jsonSchemaFormats are the formats of JSON Schema 2020-12 that the spec uses and that a
// validator may check; OpenAPI's numeric formats are left out.
var jsonSchemaFormats = map[string]bool{
	"date-time": true, "date": true, "time": true, "duration": true, "email": true,
	"uri": true, "uri-reference": true, "uuid": true, "hostname": true, "ipv4": true, "ipv6": true,
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsAny(xs []any, x any) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
