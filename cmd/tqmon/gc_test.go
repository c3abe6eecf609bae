package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: a run over a recording collects at GOGC 400 with the
// memory budget as the soft limit, and the settings are put back after;
// a GOGC or GOMEMLIMIT the user set stands.
func TestTuneGC(t *testing.T) {
	pct, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(limit) }()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	restore := tuneGC(env(nil), 1<<30, batchGCPercent)
	if got, lim := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1); got != batchGCPercent || lim != 1<<30 {
		t.Errorf("GOGC %d, limit %d; want %d and the budget %d", got, lim, batchGCPercent, 1<<30)
	}
	debug.SetGCPercent(batchGCPercent)
	restore()
	if got, lim := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); got != 100 || lim != math.MaxInt64 {
		t.Errorf("after the run GOGC %d, limit %d; want 100 and none", got, lim)
	}

	tuneGC(env(map[string]string{"GOGC": "100"}), 1<<30, batchGCPercent)
	if debug.SetGCPercent(100) != 100 {
		t.Error("the user's GOGC did not stand")
	}
	tuneGC(env(map[string]string{"GOMEMLIMIT": "2GiB"}), 1<<30, batchGCPercent)
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("the user's GOMEMLIMIT did not stand: limit set to %d", got)
	}
	tuneGC(env(nil), 0, batchGCPercent) // no budget: no limit
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("no budget, yet a limit of %d", got)
	}
}
