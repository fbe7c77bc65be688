package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"

	"github.com/footprint/footprint/internal/http/eventio"
	"github.com/footprint/footprint/internal/http/gen"
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

// float32Format checks a `format: float` number (a vector component: the generated types hold
// vectors as []float32) against float32's range, which would otherwise be found only when the
// body failed to bind, in a problem that named no field. A number that merely loses precision
// (1e-50 becomes 0) is accepted, as a float32 conversion would.
type float32Format struct{}

// numberFormats are the validator's number formats. One map for every request:
// WithNumberFormatValidator would allocate a new one on every validation.
var numberFormats = map[string]openapi3.NumberFormatValidator{"float": float32Format{}}

// errFloat32Range is float32Format's answer, recognised by validationProblem.
var errFloat32Range = errors.New("outside the float32 range")

// float32Overflow is the smallest magnitude that rounds past math.MaxFloat32 (2^128 - 2^104):
// halfway to the next step, 2^128, where round-half-to-even goes up.
const float32Overflow = 0x1p128 - 0x1p103

func (float32Format) Validate(v float64) error {
	if math.Abs(v) >= float32Overflow {
		return errFloat32Range
	}
	return nil
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
		// Per validation, not kin-openapi's process-wide format table.
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.WithNumberFormatValidators(numberFormats)},
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
// into a problem naming the field, as validationProblem does for the rest,
// and otherwise answers bindProblem's problem; nil when err is neither.
//
// It is the hook the strict handler's RequestErrorHandlerFunc (server.go)
// calls on every body that passed validation but did not decode, which is
// why bindProblem is reached through it.
func eventsProblem(err error) *Problem {
	var fe *eventio.FieldError
	if !errors.As(err, &fe) {
		return bindProblem(err)
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

// bindProblem names the member of a body that passed validation but holds a number the
// generated types cannot: one past float64's range (1e999) inside a value the spec leaves
// schema-less (decision evidence, tool arguments, a strategy's parameters), where the
// validator checks no numbers. encoding/json reports the member's path, dotted, with array
// indices as members. nil for any other error.
func bindProblem(err error) *Problem {
	var ute *json.UnmarshalTypeError
	if !errors.As(err, &ute) || !strings.HasPrefix(ute.Value, "number") || ute.Field == "" {
		return nil
	}
	ptr := strings.Split(ute.Field, ".")
	path := dottedPath(ptr)
	p := newProblem(http.StatusBadRequest, "invalid-request", fmt.Sprintf("`%s` %s.", path, notAFloat64))
	p.Path = path
	p.Errors = []ProblemError{{Pointer: "#/" + strings.Join(escapePointer(ptr), "/"), Detail: notAFloat64}}
	return p
}

// notAFloat64 is the reason for a number past float64's range where any number would do.
const notAFloat64 = "is not a number this API can hold; send one within ±1.7976931348623157e308"

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
	reason := schemaReason(se)
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

// schemaReason says why a body value failed its schema, in this API's words where
// kin-openapi's would describe its own workings ("cannot convert json.Number to float64") or
// its formats rather than the client's mistake.
func schemaReason(se *openapi3.SchemaError) string {
	s := se.Schema
	switch {
	case errors.Is(se.Origin, errFloat32Range),
		errors.Is(se.Origin, strconv.ErrRange) && s != nil && s.Format == "float":
		return "is outside the range of a 32-bit float (at most ±3.4028235e38 in magnitude); vectors are stored as float32"
	case errors.Is(se.Origin, strconv.ErrRange):
		// The body's number does not fit a float64 (1e999, a 400-digit integer). kin-openapi
		// converts it before it checks the type, so the field may not take numbers at all.
		switch {
		case s == nil || s.Type == nil || len(*s.Type) == 0:
			return notAFloat64
		case s.Type.Permits(openapi3.TypeNumber) || s.Type.Permits(openapi3.TypeInteger):
			return "is not a number this API can hold" + numberHint(s)
		default:
			kinds := make([]string, len(*s.Type))
			for i, k := range *s.Type {
				kinds[i] = "a " + k
				if k == openapi3.TypeObject || k == openapi3.TypeArray {
					kinds[i] = "an " + k
				}
			}
			return "must be " + strings.Join(kinds, " or ") + ", not a number"
		}
	case se.SchemaField == "format" && s != nil && s.Type.Is(openapi3.TypeInteger) && s.Format == "int64":
		return "is not an integer this API can hold" + numberHint(s)
	case se.SchemaField == "nullable":
		return "must not be null; send a value or, if the field is optional, leave it out"
	case se.SchemaField == "maximum" && s != nil && s.Max != nil:
		// kin-openapi writes bounds with %g: 2147483646 would read 2.147483646e+09.
		return "must be at most " + strconv.FormatFloat(*s.Max, 'f', -1, 64)
	case se.SchemaField == "minimum" && s != nil && s.Min != nil:
		return "must be at least " + strconv.FormatFloat(*s.Min, 'f', -1, 64)
	}
	return se.Reason
}

// numberHint says what a number field takes: "; send an integer from 1 to 500, like 20".
func numberHint(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	b := strings.Builder{}
	b.WriteString("; send ")
	if s.Type.Is(openapi3.TypeInteger) {
		b.WriteString("an integer")
	} else {
		b.WriteString("a number")
	}
	bound := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	switch {
	case s.Min != nil && s.Max != nil:
		b.WriteString(" from " + bound(*s.Min) + " to " + bound(*s.Max))
	case s.Max != nil:
		b.WriteString(" up to " + bound(*s.Max))
	case s.Min != nil:
		b.WriteString(" of at least " + bound(*s.Min))
	}
	if ex, ok := s.Example.(float64); ok {
		b.WriteString(", like " + bound(ex))
	}
	return b.String()
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
