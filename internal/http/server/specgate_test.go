package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/footprint/footprint/internal/http/gen"
)

var (
	specRouterOnce sync.Once
	specRouter     routers.Router
	specRouterErr  error
)

func init() {
	openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
}

// specGate wraps the server so that EVERY response a test provokes is
// validated against api/openapi.yaml: status declared, headers, content
// type and body schema. The spec and the server cannot drift apart without
// a test failing.
func specGate(t *testing.T, next http.Handler) http.Handler {
	specRouterOnce.Do(func() {
		spec, err := gen.GetSpec()
		if err != nil {
			specRouterErr = err
			return
		}
		spec.Servers = nil
		specRouter, specRouterErr = gorillamux.NewRouter(spec)
	})
	if specRouterErr != nil {
		t.Fatalf("spec router: %v", specRouterErr)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)

		probe := r.Clone(context.Background())
		probe.Body = io.NopCloser(bytes.NewReader(body))
		route, params, err := specRouter.FindRoute(probe)
		// A request whose client went away gets no response at all (the
		// server writes nothing), so there is nothing to validate.
		if err == nil && r.Method != http.MethodOptions && r.Context().Err() == nil {
			input := &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route},
				Status:                 rec.Code,
				Header:                 rec.Header(),
				Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
				Options:                &openapi3filter.Options{IncludeResponseStatus: true},
			}
			if verr := openapi3filter.ValidateResponse(context.Background(), input); verr != nil {
				t.Errorf("response to %s %s does not match the spec (status %d): %v\nbody: %s",
					r.Method, r.URL, rec.Code, verr, truncateForLog(rec.Body.String()))
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func truncateForLog(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return strings.TrimSpace(s)
}
