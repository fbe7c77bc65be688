package mcp

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// tool is one tool as read from its operation in the spec.
type tool struct {
	spec   toolSpec
	method string
	path   string // the spec's path template, e.g. /v1/conversations/{conversationId}/turns
	params []param
	// body lists the members of the operation's JSON body; each is an argument of its name.
	body    map[string]bool
	hasBody bool
	input   map[string]any
	output  map[string]any
	// headers are the response headers the spec declares per success status (Location,
	// ETag, Idempotent-Replayed, ...): a tool result carries them in its _meta.
	headers map[int][]string
}

// param is a path, query or header parameter, and the argument that carries it.
type param struct {
	arg      string // the argument's name: the parameter's, or a header's in lowerCamel
	name     string // the parameter's name in the spec
	in       string // path, query or header
	required bool
	array    bool // a query parameter that takes several values
}

// skippedHeaders are parameters that make no sense for a tool: a conditional request would
// answer a bodiless 304, and Last-Event-ID resumes an event stream.
var skippedHeaders = map[string]bool{"If-None-Match": true, "Last-Event-ID": true}

// buildTools reads every tool's operation from the spec.
func buildTools(spec *openapi3.T) ([]*tool, error) {
	type located struct {
		method, path string
		item         *openapi3.PathItem
		op           *openapi3.Operation
	}
	ops := map[string]located{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			ops[op.OperationID] = located{method, path, item, op}
		}
	}
	var tools []*tool
	for _, s := range toolSpecs {
		l, ok := ops[s.op]
		if !ok {
			return nil, fmt.Errorf("mcp: tool %s: no operation %q in the spec", s.name, s.op)
		}
		t, err := newTool(spec, s, l.method, l.path, l.item, l.op)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s (%s %s): %w", s.name, l.method, l.path, err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

func newTool(spec *openapi3.T, s toolSpec, method, path string, item *openapi3.PathItem, op *openapi3.Operation) (*tool, error) {
	t := &tool{spec: s, method: method, path: path, body: map[string]bool{}, headers: map[int][]string{}}
	for status, r := range op.Responses.Map() {
		code, err := strconv.Atoi(status)
		if err != nil || !successStatus(code) || r.Value == nil {
			continue
		}
		t.headers[code] = sortedKeys(r.Value.Headers)
	}
	in := newConverter(spec)
	props := map[string]any{}
	var required []string

	// The operation's parameters override the path item's of the same name and location.
	all := map[string]*openapi3.Parameter{}
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range list {
			all[p.Value.In+" "+p.Value.Name] = p.Value
		}
	}
	for _, key := range sortedKeys(all) {
		p := all[key]
		if p.In == openapi3.ParameterInCookie || (p.In == openapi3.ParameterInHeader && skippedHeaders[p.Name]) {
			continue
		}
		arg := p.Name
		if p.In == openapi3.ParameterInHeader {
			arg = lowerCamel(p.Name)
		}
		if _, dup := props[arg]; dup {
			return nil, fmt.Errorf("two parameters are both argument %q", arg)
		}
		schema := in.ref(p.Schema)
		if p.Description != "" {
			schema["description"] = p.Description
		}
		if p.In == openapi3.ParameterInHeader {
			schema["description"] = strings.TrimSpace(fmt.Sprint(schema["description"]) + "\n\nSent as the `" + p.Name + "` header of the REST API.")
		}
		props[arg] = schema
		array := p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Type.Is(openapi3.TypeArray)
		t.params = append(t.params, param{arg: arg, name: p.Name, in: p.In, required: p.Required, array: array})
		if p.Required {
			required = append(required, arg)
		}
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		mt := rb.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
			return nil, fmt.Errorf("the request body has no application/json schema")
		}
		body := mt.Schema.Value
		if !body.Type.Is(openapi3.TypeObject) || len(body.Properties) == 0 {
			return nil, fmt.Errorf("the JSON body is not an object with properties, so it has no arguments to spread")
		}
		t.hasBody = true
		for _, name := range sortedKeys(body.Properties) {
			if _, dup := props[name]; dup {
				return nil, fmt.Errorf("body member %q has the name of a parameter", name)
			}
			props[name] = in.ref(body.Properties[name])
			t.body[name] = true
		}
		if rb.Value.Required {
			required = append(required, body.Required...)
		}
	}
	sort.Strings(required)
	t.input = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		t.input["required"] = required
	}
	if defs := in.finish(); defs != nil {
		t.input["$defs"] = defs
	}

	out, err := outputSchema(spec, op)
	if err != nil {
		return nil, err
	}
	t.output = out
	return t, nil
}

// outputSchema is the schema of the operation's JSON success answers. MCP wants an object
// schema at the root, so a single answer's component is inlined there; several are its anyOf.
func outputSchema(spec *openapi3.T, op *openapi3.Operation) (map[string]any, error) {
	c := newConverter(spec)
	var refs []*openapi3.SchemaRef
	seen := map[string]bool{}
	for _, status := range sortedKeys(op.Responses.Map()) {
		if !strings.HasPrefix(status, "2") {
			continue
		}
		r := op.Responses.Value(status)
		if r == nil || r.Value == nil {
			continue
		}
		mt := r.Value.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			continue
		}
		key := mt.Schema.Ref
		if key == "" {
			key = fmt.Sprintf("%p", mt.Schema.Value)
		}
		if !seen[key] {
			seen[key] = true
			refs = append(refs, mt.Schema)
		}
	}
	var out map[string]any
	switch len(refs) {
	case 0:
		return nil, fmt.Errorf("no JSON success answer")
	case 1:
		out = c.schema(refs[0].Value)
		if out["type"] != "object" {
			return nil, fmt.Errorf("the success answer is not an object")
		}
	default:
		subs := make([]any, len(refs))
		for i, r := range refs {
			subs[i] = c.ref(r)
		}
		out = map[string]any{"type": "object", "anyOf": subs}
	}
	if defs := c.finish(); defs != nil {
		out["$defs"] = defs
	}
	return out, nil
}

// successStatus reports whether an answer is one the tool returns as its result.
func successStatus(code int) bool { return code >= http.StatusOK && code < http.StatusMultipleChoices }
