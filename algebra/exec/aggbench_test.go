package exec_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
)

// aggHistory is a long recording of the differential spec: procs
// processes, each a run of perProc back-to-back states, and as many sends
// per process, spread over the same time at a steady rate.
func aggHistory(tb testing.TB, procs, perProc int) *algebra.History {
	cat := testkit.LoadCatalog(tb, filepath.Join(testkit.Root(tb), "testdata/differential/spec.sdl"))
	h := algebra.NewHistory(cat)
	r := rand.New(rand.NewPCG(3, 4))
	states := cat.Lookup("Process").Attrs[1].Type.Enum
	ps, ss := h.Table("Process"), h.Table("SendMessage")
	boxes := []algebra.Value{algebra.Entity("M1"), algebra.Entity("M2"), algebra.Entity("M3")}
	for p := 0; p < procs; p++ {
		id := algebra.Entity("P" + itoa(p))
		at := algebra.Time(r.IntN(100))
		for i := 0; i < perProc; i++ {
			st := r.IntN(4)
			end := at + 1 + algebra.Time(r.IntN(200))
			ps.Add([]algebra.Value{id, algebra.Enum(states.Members[st], st), algebra.Int(int64(r.IntN(5)))}, at, end)
			ss.AddEvent([]algebra.Value{id, boxes[r.IntN(len(boxes))], algebra.Int(int64(r.IntN(100)))}, at+algebra.Time(r.IntN(200)))
			at = end
		}
	}
	ps.SortRows()
	ss.SortRows()
	return h
}

// The two aggregate shapes the benchmarks and the bounded-state test run:
// an instantaneous count by group (the queue-length shape) and a moving
// window per group (the rate shape).
const (
	aggCountBy = `range of p is Process
retrieve (p.State, N = count(p.Process by p.State))`
	aggMoving = `range of s is SendMessage
retrieve (s.Process, R = count(s.Mailbox by s.Process for each 1000ns))`
)

func runAggregate(tb testing.TB, h *algebra.History, stmts []*check.Retrieve) (*algebra.Table, int) {
	plans := []plan.Node{plan.Translate(stmts[0])}
	net, err := exec.Build(h.Catalog, stmts, plans, exec.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := net.RunHistory(h); err != nil {
		tb.Fatal(err)
	}
	return net.Stmts[0].Result.Table(), net.PeakHeld()
}

// BenchmarkAggregate measures the updates per second the incremental
// aggregate absorbs — inner tuples entering and leaving groups, each a
// Begin and an End (an event: its arrival and its window's expiry) — over
// a recording of one million tuples, and reports the most tuples the
// operators held at once (independent of the recording's length; see
// TestAggregateStateBounded).
func BenchmarkAggregate(b *testing.B) {
	h := aggHistory(b, 2000, 500) // 1,000,000 Process tuples and 1,000,000 sends
	for _, c := range []struct {
		name, query, rel string
	}{
		{"CountByInstant", aggCountBy, "Process"},
		{"CountByMovingWindow", aggMoving, "SendMessage"},
	} {
		b.Run(c.name, func(b *testing.B) {
			stmts := testkit.Compile(b, h.Catalog, c.name, c.query, 0)
			tuples := len(h.Table(c.rel).Rows)
			b.ReportAllocs()
			peak := 0
			start := time.Now()
			for i := 0; i < b.N; i++ {
				_, peak = runAggregate(b, h, stmts)
			}
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(2*tuples)*float64(b.N)/secs, "updates/s")
			b.ReportMetric(float64(tuples)*float64(b.N)/secs, "tuples/s")
			b.ReportMetric(float64(peak), "peak-held")
		})
	}
}

// TestAggregateStateBounded: the state of both aggregate shapes depends on
// the tuples open (and inside the window) at once, not on the length of
// the recording — ten and a hundred times longer recordings of the same
// system peak at about the same number of held tuples.
func TestAggregateStateBounded(t *testing.T) {
	for _, q := range []string{aggCountBy, aggMoving} {
		var peaks []int
		for _, perProc := range []int{20, 200, 2000} {
			h := aggHistory(t, 50, perProc)
			stmts := testkit.Compile(t, h.Catalog, "q", q, 0)
			_, peak := runAggregate(t, h, stmts)
			peaks = append(peaks, peak)
		}
		if peaks[2] > peaks[0]*3/2+10 {
			t.Errorf("%s: peak held %v over recordings 1×, 10×, 100× as long: grows with the history", q, peaks)
		}
		t.Logf("peak held %v over 1×, 10×, 100×", peaks)
	}
}
