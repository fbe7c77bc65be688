package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"

	gen "github.com/footprint/footprint/internal/http/api"
	"github.com/footprint/footprint/internal/http/eventio"
)

// newRequestValidator returns middleware that checks every /v1 request
// against api/openapi.yaml before a handler sees it, and answers with a
// problem that names the offending field.
//
// Event batches (POST /v1/runs/{runId}/events) are the exception for their
// body only: eventio checks it while decoding, in one pass, because the
// generic validator cost more than the rest of that path together. Their
// parameters are still checked here.
func newRequestValidator(logger *slog.Logger) (func(http.Handler) http.Handler, error) {
	spec, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	routes := newSpecRoutes(spec)
	full := specValidator(logger, routes, false)
	paramsOnly := specValidator(logger, routes, true)
	return func(next http.Handler) http.Handler {
		all, params := full(next), paramsOnly(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case isEventBatch(r):
				params.ServeHTTP(w, r)
			case isNDJSON(r.Header.Get("Content-Type")) && r.ContentLength != 0:
				writeProblem(w, r, newProblem(http.StatusUnsupportedMediaType, "unsupported-media-type",
					"Only event batches (POST /v1/runs/{runId}/events) may be sent as NDJSON; send this body as JSON with `Content-Type: application/json`."))
			default:
				all.ServeHTTP(w, r)
			}
		})
	}, nil
}

// eventBatchRoute is appendEvents' path template, as chi matched it.
const eventBatchRoute = "/v1/runs/{runId}/events"

func isEventBatch(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	rc := chi.RouteContext(r.Context())
	return rc != nil && rc.RoutePattern() == eventBatchRoute
}

// specRoutes finds a request's operation in the spec by the route chi already matched: the
// generated router registers every operation under its spec path template, so the template
// chi reports is the spec's key. (kin-openapi's own router would match the path again
// against every operation's regular expression, one after another, on every request.)
type specRoutes struct {
	byRoute map[string]*routers.Route // method + " " + path template
}

func newSpecRoutes(spec *openapi3.T) *specRoutes {
	// Authentication already ran; the validator checks shapes only, so security requirements
	// are dropped from its private copy of the spec rather than checked by a no-op.
	spec.Security = nil
	rs := &specRoutes{byRoute: map[string]*routers.Route{}}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			op.Security = &openapi3.SecurityRequirements{}
			rs.byRoute[method+" "+path] = &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: op}
		}
	}
	return rs
}

// find returns r's operation and its path parameters as they appear in the request's escaped
// path (as kin-openapi's router gives them: the handlers unescape them when binding).
func (rs *specRoutes) find(r *http.Request) (*routers.Route, map[string]string, error) {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return nil, nil, routers.ErrPathNotFound
	}
	pattern := rc.RoutePattern()
	route, ok := rs.byRoute[r.Method+" "+pattern]
	if !ok {
		return nil, nil, routers.ErrPathNotFound
	}
	if !strings.Contains(pattern, "{") {
		return route, nil, nil
	}
	params := make(map[string]string, 2)
	path := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	for i, seg := range strings.Split(strings.TrimPrefix(pattern, "/"), "/") {
		if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' && i < len(path) {
			params[seg[1:len(seg)-1]] = path[i]
		}
	}
	return route, params, nil
}

// specValidator returns middleware that validates a request's parameters and, unless
// paramsOnly, its body against its operation in the spec, and answers a failure with the
// problem validationProblem makes of it.
func specValidator(logger *slog.Logger, routes *specRoutes, paramsOnly bool) func(http.Handler) http.Handler {
	opts := &openapi3filter.Options{
		AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody: paramsOnly,
		// Schema defaults are not written into the body: kin-openapi would re-encode it, sorting
		// object keys and re-escaping strings, and handlers must read the body byte for byte as
		// the client sent it (absent fields are defaulted in core).
		SkipSettingDefaults: true,
		// The body keeps the value the validator decoded, and the generated handlers bind that
		// (runtime.BindJSONBody) instead of decoding the JSON a second time.
		KeepValidatedValue: !paramsOnly,
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			route, params, err := routes.find(r)
			if err == nil {
				err = openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
					Request: r, PathParams: params, Route: route, Options: opts})
			}
			if err == nil {
				next.ServeHTTP(w, r)
				return
			}
			p := validationProblem(err)
			if p.Status >= 500 {
				logger.LogAttrs(r.Context(), slog.LevelError, "request validation failed unexpectedly",
					slog.String("requestId", requestIDFrom(r.Context())), slog.String("error", err.Error()))
			}
			writeProblem(w, r, p)
		})
	}
}

// eventsProblem turns an event batch's decoding error (eventio.FieldError)
// into a problem naming the field, as validationProblem does for the rest;
// nil when err is not one.
func eventsProblem(err error) *Problem {
	var fe *eventio.FieldError
	if !errors.As(err, &fe) {
		return nil
	}
	code := "invalid-request"
	switch fe.Keyword {
	case "syntax":
		code = "invalid-json"
	case "additionalProperties":
		code = "unknown-field"
	}
	path := dottedPath(fe.Pointer)
	if path == "" {
		path = "(body)"
	}
	p := newProblem(http.StatusBadRequest, code, fmt.Sprintf("`%s` %s.", path, strings.TrimSuffix(fe.Reason, ".")))
	p.Path = path
	p.Errors = []ProblemError{{Pointer: "#/" + strings.Join(escapePointer(fe.Pointer), "/"), Detail: fe.Reason}}
	p.Fix = fe.Fix
	return p
}

var unsupportedProperty = regexp.MustCompile(`^property "(.*)" is unsupported$`)
var missingProperty = regexp.MustCompile(`^property "(.*)" is missing$`)

// validationProblem turns a kin-openapi validation error into a problem
// naming the field. kin-openapi's reasons never echo the input value.
func validationProblem(err error) *Problem {
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		return newProblem(http.StatusNotFound, "not-found", "No such endpoint. The API is described at /openapi.yaml.")
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return newProblem(http.StatusMethodNotAllowed, "method-not-allowed", "This method is not supported on this path.")
	}
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) {
		return newProblem(http.StatusBadRequest, "invalid-request", "The request does not match the API description.")
	}
	var pe *openapi3filter.ParseError
	if re.Parameter == nil && errors.As(re.Err, &pe) {
		return newProblem(http.StatusBadRequest, "invalid-json", "The request body is not valid JSON.")
	}
	var se *openapi3.SchemaError
	hasSchemaErr := errors.As(re.Err, &se)
	if re.Parameter != nil {
		detail := fmt.Sprintf("The %s parameter `%s` is invalid", re.Parameter.In, re.Parameter.Name)
		if hasSchemaErr {
			detail += ": " + se.Reason
		} else if re.Reason != "" {
			detail += ": " + re.Reason
		}
		p := newProblem(http.StatusBadRequest, "invalid-parameter", detail+".")
		p.Path = re.Parameter.Name
		p.Errors = []ProblemError{{Pointer: re.Parameter.In + ":" + re.Parameter.Name, Detail: detail}}
		if ex := re.Parameter.Schema; ex != nil && ex.Value != nil && ex.Value.Default != nil {
			p.Fix = ex.Value.Default
		}
		return p
	}
	if re.RequestBody != nil && !hasSchemaErr {
		if re.Err == nil || strings.Contains(re.Reason, "value is required") || strings.Contains(fmt.Sprint(re.Err), "value is required") {
			return newProblem(http.StatusBadRequest, "invalid-request", "This operation needs a JSON request body.")
		}
		return newProblem(http.StatusBadRequest, "invalid-json", "The request body is not valid JSON.")
	}
	if !hasSchemaErr {
		return newProblem(http.StatusBadRequest, "invalid-request", "The request does not match the API description.")
	}
	ptr := se.JSONPointer()
	code := "invalid-request"
	reason := se.Reason
	// kin-openapi reports an unknown property at the object holding it and a
	// missing one at the property itself; both are named in the reason.
	if m := unsupportedProperty.FindStringSubmatch(se.Reason); m != nil {
		ptr = append(ptr, m[1])
		reason = "is not a field of this object; remove it or fix its name"
		code = "unknown-field"
	} else if m := missingProperty.FindStringSubmatch(se.Reason); m != nil {
		if len(ptr) == 0 || ptr[len(ptr)-1] != m[1] {
			ptr = append(ptr, m[1])
		}
		reason = "is required"
	}
	path := dottedPath(ptr)
	if path == "" {
		path = "(body)"
	}
	p := newProblem(http.StatusBadRequest, code, fmt.Sprintf("`%s` %s.", path, strings.TrimSuffix(reason, ".")))
	p.Path = path
	p.Errors = []ProblemError{{Pointer: "#/" + strings.Join(escapePointer(ptr), "/"), Detail: reason}}
	if se.Schema != nil {
		p.Fix = fixFromSchema(se.Schema, se.SchemaField, ptr)
	}
	return p
}

// fixFromSchema offers a value that satisfies the failing schema: its
// example, its default or its first enum value.
func fixFromSchema(s *openapi3.Schema, field string, ptr []string) any {
	if field == "additionalProperties" || field == "required" || field == "properties" {
		if len(ptr) > 0 && s.Properties != nil {
			if prop, ok := s.Properties[ptr[len(ptr)-1]]; ok && prop.Value != nil {
				s = prop.Value
			} else {
				return nil
			}
		} else {
			return nil
		}
	}
	switch {
	case s.Example != nil:
		return s.Example
	case s.Default != nil:
		return s.Default
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	return nil
}

// dottedPath renders ["strategy","strategies","1"] as strategy.strategies[1].
func dottedPath(ptr []string) string {
	var b strings.Builder
	for _, seg := range ptr {
		if _, err := strconv.Atoi(seg); err == nil {
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

func escapePointer(ptr []string) []string {
	out := make([]string, len(ptr))
	for i, s := range ptr {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}

// paramProblem reports a path or query parameter the generated wrapper
// could not bind.
func paramProblem(err error) *Problem {
	name := ""
	var fmtErr *gen.InvalidParamFormatError
	var reqErr *gen.RequiredParamError
	var tooMany *gen.TooManyValuesForParamError
	switch {
	case errors.As(err, &fmtErr):
		name = fmtErr.ParamName
	case errors.As(err, &reqErr):
		name = reqErr.ParamName
	case errors.As(err, &tooMany):
		name = tooMany.ParamName
	}
	detail := "A parameter is invalid."
	if name != "" {
		detail = fmt.Sprintf("The parameter `%s` is invalid.", name)
	}
	p := newProblem(http.StatusBadRequest, "invalid-parameter", detail)
	p.Path = name
	return p
}
