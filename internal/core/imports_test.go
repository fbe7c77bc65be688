package core_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/footprint/footprint/internal/"

// areaImports is the one-way picture of doc.go: which domain packages each area may import.
var areaImports = map[string][]string{
	".":          {},
	"strategies": {"core"},
	"memories":   {"core", "core/strategies"},
	"turns":      {"core", "core/strategies"},
	"recall":     {"core", "core/strategies"},
	"runs":       {"core"},
	"explain":    {"core", "core/recall", "core/runs"},
}

// TestCoreImportsNoTransportOrDriver enforces the one-way dependency rules: no package of the
// domain imports HTTP, database drivers, generated code, stores or adapters, and each area
// imports only the domain packages below it in doc.go's picture.
func TestCoreImportsNoTransportOrDriver(t *testing.T) {
	t.Parallel()
	// The domain may speak the OpenTelemetry API (its retrieval spans) but builds no SDK or
	// exporter, and reports metrics through its observers, never to Prometheus.
	forbidden := []string{"net/http", "github.com/jackc/", "github.com/pgvector/", "github.com/go-chi/",
		"github.com/oapi-codegen/", "github.com/getkin/", module + "http", module + "store",
		module + "embedder", module + "llm", module + "providerclient", module + "app", module + "telemetry",
		"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/contrib/",
		"github.com/prometheus/"}
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		area := filepath.Dir(path)
		allowed, ok := areaImports[area]
		if !ok {
			t.Errorf("%s: package %s is not in the picture of doc.go (areaImports)", path, area)
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		parsed, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		for _, imp := range parsed.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if strings.HasPrefix(p, bad) {
					t.Errorf("%s imports %s: the domain must not depend on transports, drivers, generated code, stores or adapters", path, p)
				}
			}
			if strings.HasPrefix(p, module+"core/") && !strings.HasSuffix(path, "_test.go") {
				dep := strings.TrimPrefix(p, module)
				if !slices.Contains(allowed, dep) {
					t.Errorf("%s imports %s: %s may import only %v (dependencies between areas point one way)", path, dep, area, allowed)
				}
			}
		}
		return nil
	})
	if err != nil || seen == 0 {
		t.Fatalf("walking the domain's files: %v (%d files)", err, seen)
	}
}
