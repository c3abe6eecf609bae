package main

import (
	"runtime/debug"
)

// batchGCPercent is the collector's GOGC for a query over a recording.
// Such a run allocates at a high rate (records, candidates, output rows)
// while the heap it keeps live is small — what is open, tens of MB — so
// at Go's default of 100 it collects every few MB allocated, and marking
// with its write barriers takes a quarter of the whole command's CPU
// (the overlap join of make bench-engine at 1M tuples: 1.12 s of CPU at
// 100, 0.91 at 200, 0.79 at 400, 0.77 at 800; peak RSS 38, 44, 53, 70
// MB). 400 is the knee: five times a small live heap is still a small
// heap.
const batchGCPercent = 400

// liveGCPercent is the collector's GOGC for a live query. A kernel
// consumer allocates ≈400 B an event (records, values) and keeps its
// buffers live — the sessions', the drain's notes, what waits: 30–60 MB
// — and costs less CPU at 200 than at 100 about as much as at 400
// (BenchmarkConsumer/count-bare in resident/kernel, interleaved at load
// 9–12: 470, 410, 414 ns of CPU an event at 100, 200, 400), with less of
// the slack: the heavy test's peak RSS was 195, 289 and 402 MB (it runs
// the resident in process, as the command does).
const liveGCPercent = 200

// tuneGC sets the collector for a query's run: GOGC pct (batchGCPercent
// over a recording, liveGCPercent live), with the query's memory budget (--max-memory) as the
// collector's soft limit, so that the slack never takes the heap past
// what the user allowed — near the budget the collector works harder, as
// at any GOGC, and the watchdog (query.Watch) still judges the live heap.
// The user's GOGC or GOMEMLIMIT, when set, stand. It returns what puts
// the settings back (the command runs in-process in tests, and a run's
// budget must not outlive it).
func tuneGC(getenv func(string) string, budget int64, pct int) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	pct, limit := debug.SetGCPercent(pct), debug.SetMemoryLimit(-1)
	if getenv("GOMEMLIMIT") == "" && budget > 0 {
		debug.SetMemoryLimit(budget)
	}
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}
