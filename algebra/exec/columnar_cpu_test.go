//go:build linux

package exec_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
)

// threadCPU is the CPU time the calling thread has used.
func threadCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkColumnarCPU is BenchmarkInterpreterSelectProject's interpreter
// against the fused loop by the CPU time of the goroutine's thread (locked
// to it), medians over b.N interleaved pairs: on a loaded machine, where
// wall time measures the scheduler as much as the code, it says what the
// code costs. It does not count the collector's background work (the
// interpreter allocates its result; the fused loop nothing).
func BenchmarkColumnarCPU(b *testing.B) {
	h := benchHistory(b, 20000, 50)
	tuples := len(h.Table("Process").Rows)
	stmts := testkit.Compile(b, h.Catalog, "q", benchSelectProject, 0)
	f := newFusedSelectProject(h)
	runInterpreter(b, h, stmts) // the columns
	mi, mf := cpuPairs(b, func() { runInterpreter(b, h, stmts) }, func() { f.run() })
	b.ReportMetric(float64(tuples)/mi.Seconds(), "cpu-tuples/s")
	b.ReportMetric(float64(tuples)/mf.Seconds(), "fused-cpu-tuples/s")
	b.ReportMetric(mf.Seconds()/mi.Seconds(), "cpu-vs-fused")
}
