package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envServe makes the test binary the server: started with it set to 1, the binary runs main()
// instead of the tests, so that a test can run the real program in processes of its own
// (serveProcess) without building it.
const envServe = "FOOTPRINT_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(envServe) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := run(ctx, []string{"footprint"}, os.Getenv, os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "footprint:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveProcess runs the program in a process of its own with env as its whole configuration
// (plus PATH and HOME), waits until it listens, and returns its base URL. It is stopped with
// SIGTERM when the test ends; a non-zero exit then fails the test.
func serveProcess(t *testing.T, env map[string]string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{envServe + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{}) // closed once the process has exited (waitErr set)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("server process: %v\nstderr: %s", waitErr, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("server process did not stop on SIGTERM\nstderr: %s", stderr.String())
		}
	})
	select {
	case base := <-found:
		return base
	case <-exited:
		t.Fatalf("server process exited before listening: %v\nstderr: %s", waitErr, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server process did not listen within a minute\nstderr: %s", strings.TrimSpace(stderr.String()))
	}
	return ""
}
