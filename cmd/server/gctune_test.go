package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestGCForPostgres(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	got := gcForPostgres(func(string) string { return "" })
	if now := debug.SetGCPercent(100); now != postgresGCPercent || !strings.HasPrefix(got, "GOGC=400 ") {
		t.Errorf("without GOGC: percent %d, %q; want %d", now, got, postgresGCPercent)
	}
	got = gcForPostgres(func(k string) string {
		if k == "GOGC" {
			return "150"
		}
		return ""
	})
	if now := debug.SetGCPercent(100); now != 100 || got != "GOGC=150 (from the environment)" {
		t.Errorf("with GOGC=150: percent %d, %q; want it left alone", now, got)
	}
}
