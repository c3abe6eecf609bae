package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: a run over a recording collects at GOGC 400 with the
// memory budget as the soft limit; a GOGC or GOMEMLIMIT the user set
// stands.
func TestTuneGC(t *testing.T) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(limit) }()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	if !tuneGC(env(nil), 1<<30) {
		t.Fatal("tuneGC changed nothing with no GOGC set")
	}
	if got := debug.SetGCPercent(100); got != batchGCPercent {
		t.Errorf("GOGC %d, want %d", got, batchGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != 1<<30 {
		t.Errorf("memory limit %d, want the budget %d", got, 1<<30)
	}

	if tuneGC(env(map[string]string{"GOGC": "100"}), 1<<30) || debug.SetGCPercent(100) != 100 {
		t.Error("the user's GOGC did not stand")
	}
	tuneGC(env(map[string]string{"GOMEMLIMIT": "2GiB"}), 1<<30)
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("the user's GOMEMLIMIT did not stand: limit set to %d", got)
	}
	tuneGC(env(nil), 0) // no budget: no limit
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("no budget, yet a limit of %d", got)
	}
}
