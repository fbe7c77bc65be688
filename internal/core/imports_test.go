package core_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCoreImportsNoTransportOrDriver enforces the one-way dependency rule:
// core must not import HTTP, database drivers or generated code.
func TestCoreImportsNoTransportOrDriver(t *testing.T) {
	t.Parallel()
	forbidden := []string{"net/http", "github.com/jackc/", "github.com/pgvector/", "github.com/go-chi/",
		"github.com/oapi-codegen/", "github.com/getkin/", "github.com/footprint/footprint/internal/http/server",
		"github.com/footprint/footprint/internal/store"}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if strings.HasPrefix(path, bad) {
					t.Errorf("%s imports %s: core must not depend on transports, drivers or generated code", f, path)
				}
			}
		}
	}
}
