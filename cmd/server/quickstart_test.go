//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// quickstartStep is one ```sh block of the README's Quickstart section and, when a ```text
// block follows it, the lines its output must contain.
type quickstartStep struct {
	line   int // the README line of the block's opening fence
	script string
	want   []string
}

// quickstartSteps extracts the Quickstart section's blocks. A fence with any other info string
// is an error, so that no block in the section can escape the test by its spelling.
func quickstartSteps(readme string) ([]quickstartStep, error) {
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "## Quickstart" {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("README.md has no \"## Quickstart\" section")
	}
	var steps []quickstartStep
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		open := i + 1
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("README.md:%d: unclosed code block", open)
		}
		switch info {
		case "sh":
			steps = append(steps, quickstartStep{line: open, script: strings.Join(body, "\n")})
		case "text":
			if len(steps) == 0 || steps[len(steps)-1].want != nil {
				return nil, fmt.Errorf("README.md:%d: a text block (expected output) must follow an sh block", open)
			}
			want := []string{}
			for _, w := range body {
				if w = strings.TrimSpace(w); w != "" && w != "…" {
					want = append(want, w)
				}
			}
			steps[len(steps)-1].want = want
		default:
			return nil, fmt.Errorf("README.md:%d: code block %q in the Quickstart: use sh (run by this test) or text (its expected output)", open, info)
		}
	}
	return steps, nil
}

var stepMarker = regexp.MustCompile(`(?m)^::quickstart-step (\d+)::$`)

// runQuickstart runs the steps in order in ONE bash process, as a reader pasting them into one
// shell would, with FOOTPRINT_URL pointing at base, and returns each step's output (stdout and
// stderr together) and the index of the step that failed, or -1.
func runQuickstart(t *testing.T, base string, steps []quickstartStep) ([]string, int, error) {
	t.Helper()
	var script strings.Builder
	script.WriteString("exec 2>&1\n")
	for i, s := range steps {
		fmt.Fprintf(&script, "printf '\\n::quickstart-step %d::\\n'\n%s\n", i, s.script)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "quickstart.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FOOTPRINT_URL="+base, "TMPDIR="+dir)
	cmd.Stdout = out // a file, not a pipe: Wait returns when bash does, whatever its children hold
	// Its own process group, so that a timeout, or a step that failed with its SSE follower still
	// in the background, leaves nothing running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}

	outputs := make([]string, len(steps))
	failed := -1
	text := string(b)
	marks := stepMarker.FindAllStringSubmatchIndex(text, -1)
	for k, m := range marks {
		var i int
		fmt.Sscan(text[m[2]:m[3]], &i)
		end := len(text)
		if k+1 < len(marks) {
			end = marks[k+1][0]
		}
		outputs[i] = text[m[1]:end]
		failed = i
	}
	if runErr == nil {
		failed = -1
	}
	return outputs, failed, runErr
}

// missingLines returns the first wanted line that does not match, in order, one of the
// output's lines (both trimmed), or "". A `…` inside a wanted line matches any text.
func missingLines(output string, want []string) string {
	got := strings.Split(output, "\n")
	j := 0
	for _, w := range want {
		parts := strings.Split(w, "…")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		for j < len(got) && !re.MatchString(strings.TrimSpace(got[j])) {
			j++
		}
		if j == len(got) {
			return w
		}
		j++
	}
	return ""
}

// checkKeyOutputs checks what the quickstart must show whatever its text blocks say: the
// explanation of turn 3 names snap-1 as the origin of its top suspect, and the ablations
// confirm it.
func checkKeyOutputs(t *testing.T, steps []quickstartStep, outputs []string) {
	t.Helper()
	for _, c := range []struct{ step, want string }{
		{"/explain?depth=2", `"entryId":\s*"snap-1"`},
		{"/ablations", `"verdict":\s*"confirmed"`},
	} {
		found := false
		for i, s := range steps {
			if strings.Contains(s.script, c.step) {
				found = true
				if !regexp.MustCompile(c.want).MatchString(outputs[i]) {
					t.Errorf("README.md:%d: the step that calls %s does not show %s; its output:\n%s", s.line, c.step, c.want, outputs[i])
				}
				break
			}
		}
		if !found {
			t.Errorf("no quickstart step calls %s", c.step)
		}
	}
}

// TestQuickstart runs the README's Quickstart exactly as written: every ```sh block of the
// section, in order, in one `bash -euo pipefail` against the real program started through
// run() on a free port, on the in-memory store as `make run` starts it, and on Postgres. The
// blocks use `curl -f`, so an HTTP error fails its step. On the in-memory store, each ```text
// block lists lines the output of the block before it must contain, in order (a `…` line
// stands for lines left out, a `…` in a line for any text). Then it checks through the API
// what the quickstart did.
func TestQuickstart(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README's quickstart uses %s, which is not installed: scripts/install-test-tools.sh installs it (make test runs it)", tool)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := quickstartSteps(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) < 8 {
		t.Fatalf("found %d sh blocks in the README's Quickstart; the extraction is broken or the quickstart lost its steps", len(steps))
	}
	stores := map[string]func(t *testing.T) string{
		"memory":   func(*testing.T) string { return "" },
		"postgres": pgtest.DSN,
	}
	for name, dsn := range stores {
		t.Run(name, func(t *testing.T) {
			base, _, _ := start(t, map[string]string{"FOOTPRINT_ADDR": "127.0.0.1:0", "DATABASE_URL": dsn(t)})
			outputs, failed, err := runQuickstart(t, base, steps)
			if err != nil {
				if failed < 0 {
					t.Fatalf("the quickstart did not run: %v", err)
				}
				t.Fatalf("README.md:%d: the quickstart's step %d failed (%v):\n%s\n--- its output:\n%s",
					steps[failed].line, failed+1, err, steps[failed].script, outputs[failed])
			}
			for i, s := range steps {
				if name != "memory" {
					break // the text blocks show make run's output; Postgres orders JSON keys its own way
				}
				if w := missingLines(outputs[i], s.want); w != "" {
					t.Errorf("README.md:%d: the output of step %d lacks the line\n\t%s\n(or has it out of order); it was:\n%s",
						s.line, i+1, w, outputs[i])
				}
			}
			checkKeyOutputs(t, steps, outputs)
			checkQuickstartState(t, base)
		})
	}
}

// checkQuickstartState reads back what the quickstart left: turn 3's wrong answer explained
// by snap-1 (now forgotten, the receipts kept), the suspect confirmed by the recorded
// ablations, and run-3's recording finished with the announcement of snap-1 in its context.
func checkQuickstartState(t *testing.T, base string) {
	t.Helper()
	const conv = "/v1/conversations/support-4821"
	code, ex := call(t, "GET", base+conv+"/turns/3/explain", "", "")
	if code != 200 {
		t.Fatalf("explain turn 3 after the quickstart: %d %v", code, ex)
	}
	var origin map[string]any
	for _, o := range ex["origins"].([]any) {
		if o := o.(map[string]any); o["injectionId"] == "memory:why#snap-1" {
			origin = o
		}
	}
	if origin == nil || origin["entryId"] != "snap-1" || origin["status"] != "forgotten" || origin["recallId"] == nil {
		t.Errorf("turn 3's origin memory:why#snap-1 = %v (want entry snap-1, linked to a recall, forgotten at the end)", origin)
	}
	if code, run := call(t, "GET", base+"/v1/runs/run-3", "", ""); code != 200 || run["run"].(map[string]any)["complete"] != true {
		t.Errorf("run-3 after the quickstart: %d %v", code, run)
	}
	code, rc := call(t, "GET", base+"/v1/runs/run-3/context", "", "")
	if code != 200 || !strings.Contains(fmt.Sprint(rc["calls"]), "memory:why#snap-1") {
		t.Errorf("run-3's context does not show memory:why#snap-1: %d %v", code, rc)
	}
	if code, entries := call(t, "GET", base+conv+"/entries", "", ""); code != 200 || len(entries["entries"].([]any)) != 0 {
		t.Errorf("entries after the quickstart forgot the conversation: %d %v", code, entries)
	}
}
