package main

import (
	"runtime/debug"
)

// batchGCPercent is the collector's GOGC for a query over a recording
// (and live).
// Such a run allocates at a high rate (records, candidates, output rows)
// while the heap it keeps live is small — what is open, tens of MB — so
// at Go's default of 100 it collects every few MB allocated, and marking
// with its write barriers takes a quarter of the whole command's CPU
// (the overlap join of make bench-engine at 1M tuples: 1.12 s of CPU at
// 100, 0.91 at 200, 0.79 at 400, 0.77 at 800; peak RSS 38, 44, 53, 70
// MB). 400 is the knee: five times a small live heap is still a small
// heap. A live run is the same: a kernel consumer allocates ≈400 B an
// event (records, values) and keeps what is open, and at 100 the
// collector's marking and write barriers took a quarter of its CPU
// (BenchmarkConsumer/count-bare, in resident/kernel: 551 → 473 ns of
// CPU an event at 400, interleaved, load 3).
const batchGCPercent = 400

// tuneGC sets the collector for a query's run, over a recording or live: GOGC
// batchGCPercent, with the query's memory budget (--max-memory) as the
// collector's soft limit, so that the slack never takes the heap past
// what the user allowed — near the budget the collector works harder, as
// at any GOGC, and the watchdog (query.Watch) still judges the live heap.
// The user's GOGC or GOMEMLIMIT, when set, stand. It returns what puts
// the settings back (the command runs in-process in tests, and a run's
// budget must not outlive it).
func tuneGC(getenv func(string) string, budget int64) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	pct, limit := debug.SetGCPercent(batchGCPercent), debug.SetMemoryLimit(-1)
	if getenv("GOMEMLIMIT") == "" && budget > 0 {
		debug.SetMemoryLimit(budget)
	}
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
