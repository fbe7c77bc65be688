//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// The Node test files TestNodeClients runs, each with an API key of its own tenant, so that
// their memories never meet: the TypeScript client, the TypeScript agent example, and the
// official TypeScript MCP SDK against /mcp.
var nodeTests = []struct {
	file, tenant, key string
}{
	{"clients/typescript/test/client.test.js", "ts-client", "ts-client-key-0123456789"},
	{"examples/agent-ts/test/agent.test.js", "ts-agent", "ts-agent-key-0123456789"},
	{"examples/mcp-ts/test/mcp.test.js", "ts-mcp", "ts-mcp-key-0123456789"},
}

// TestNodeClients runs the Node tests (node --test) against the real program, started through
// run() on a free port with API keys, on the in-memory store and on Postgres. It installs the
// npm packages from package-lock.json and builds the TypeScript first (scripts/node-setup.sh,
// idempotent). Without Node.js it skips, unless FOOTPRINT_REQUIRE_NODE is set (make test sets
// it): then it fails.
func TestNodeClients(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("FOOTPRINT_REQUIRE_NODE") != "" {
			t.Fatal("node is not installed; the TypeScript client and MCP tests need Node.js 20+ and npm")
		}
		t.Skip("node is not installed (set FOOTPRINT_REQUIRE_NODE=1 to fail instead)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	setup := exec.Command(filepath.Join(root, "scripts", "node-setup.sh"))
	if out, err := setup.CombinedOutput(); err != nil {
		t.Fatalf("scripts/node-setup.sh: %v\n%s", err, out)
	}
	var keys []string
	for _, n := range nodeTests {
		keys = append(keys, n.tenant+":"+n.key)
	}
	stores := map[string]func(t *testing.T) string{
		"memory":   func(*testing.T) string { return "" },
		"postgres": pgtest.DSN,
	}
	for name, dsn := range stores {
		t.Run(name, func(t *testing.T) {
			base, _, _ := start(t, map[string]string{
				"FOOTPRINT_ADDR": "127.0.0.1:0", "DATABASE_URL": dsn(t), "FOOTPRINT_API_KEYS": strings.Join(keys, ","),
			})
			for _, n := range nodeTests {
				t.Run(filepath.Base(n.file), func(t *testing.T) {
					t.Parallel()
					out, err := runNode(t, root, base, n.key, n.file)
					if err != nil {
						t.Fatalf("node --test %s: %v\n%s", n.file, err, out)
					}
					if testing.Verbose() {
						t.Logf("node --test %s:\n%s", n.file, out)
					}
				})
			}
		})
	}
}

// runNode runs one test file with Node's test runner against base, in the file's package
// directory, and returns its output.
func runNode(t *testing.T, root, base, key, file string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(root, filepath.Dir(filepath.Dir(file)))
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", filepath.Join(root, file))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FOOTPRINT_URL="+base, "FOOTPRINT_API_KEY="+key, "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	return string(out), err
}
