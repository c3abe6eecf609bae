//go:build linux

package exec_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
)

// cpuPairs runs interp and then fused (nil: none) b.N times, interleaved,
// on the goroutine's thread (locked to it), and returns the median thread
// CPU time of each (threadCPU): what the code costs on a loaded machine,
// without the collector's background work.
func cpuPairs(b *testing.B, interp, fused func()) (mi, mf time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ti, tf []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := threadCPU(b)
		interp()
		ti = append(ti, threadCPU(b)-s)
		if fused != nil {
			s = threadCPU(b)
			fused()
			tf = append(tf, threadCPU(b)-s)
		}
	}
	slices.Sort(ti)
	slices.Sort(tf)
	mi = ti[len(ti)/2]
	if len(tf) > 0 {
		mf = tf[len(tf)/2]
	}
	return mi, mf
}

// BenchmarkJoinCPU is BenchmarkInterpreterTemporalJoin's interpreter
// against the fused sweep by thread CPU time (cpuPairs).
func BenchmarkJoinCPU(b *testing.B) {
	h := benchHistory(b, 10000, 50)
	tuples := len(h.Table("Process").Rows) + len(h.Table("RunningOn").Rows)
	stmts := testkit.Compile(b, h.Catalog, "q", benchTemporalJoin, 0)
	f := newFusedTemporalJoin(h)
	runInterpreter(b, h, stmts)
	mi, mf := cpuPairs(b, func() { runInterpreter(b, h, stmts) }, func() { f.run() })
	b.ReportMetric(float64(tuples)/mi.Seconds(), "cpu-tuples/s")
	b.ReportMetric(float64(tuples)/mf.Seconds(), "fused-cpu-tuples/s")
	b.ReportMetric(mf.Seconds()/mi.Seconds(), "cpu-vs-fused")
}

// BenchmarkAggregateCPU is BenchmarkAggregate's interpreter by thread CPU
// time (cpuPairs): updates (an inner tuple's Begin and End, an event's
// arrival and expiry) per CPU second.
func BenchmarkAggregateCPU(b *testing.B) {
	h := aggHistory(b, 2000, 500)
	for _, c := range []struct{ name, query, rel string }{
		{"CountByInstant", aggCountBy, "Process"},
		{"CountByMovingWindow", aggMoving, "SendMessage"},
	} {
		stmts := testkit.Compile(b, h.Catalog, c.name, c.query, 0)
		tuples := len(h.Table(c.rel).Rows)
		b.Run(c.name, func(b *testing.B) {
			runAggregate(b, h, stmts)
			mi, _ := cpuPairs(b, func() { runAggregate(b, h, stmts) }, nil)
			b.ReportMetric(float64(2*tuples)/mi.Seconds(), "cpu-updates/s")
		})
	}
}
