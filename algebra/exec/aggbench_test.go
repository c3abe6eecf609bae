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
// TestAggregateStateBounded); the instantaneous count against a fused
// loop computing the same (the physical-limit reference).
func BenchmarkAggregate(b *testing.B) {
	h := aggHistory(b, 2000, 500) // 1,000,000 Process tuples and 1,000,000 sends
	for _, c := range []struct {
		name, query, rel string
		fused            *fusedCountBy // the fused loop computing the same, if any
	}{
		{"CountByInstant", aggCountBy, "Process", newFusedCountBy(h)},
		{"CountByMovingWindow", aggMoving, "SendMessage", nil},
	} {
		stmts := testkit.Compile(b, h.Catalog, c.name, c.query, 0)
		tuples := len(h.Table(c.rel).Rows)
		report := func(b *testing.B, start time.Time) {
			secs := time.Since(start).Seconds()
			b.ReportMetric(float64(2*tuples)*float64(b.N)/secs, "updates/s")
			b.ReportMetric(float64(tuples)*float64(b.N)/secs, "tuples/s")
		}
		if c.fused != nil {
			if got, _ := runAggregate(b, h, stmts); render(got) != render(c.fused.table(c.fused.run())) {
				b.Fatalf("%s: interpreter and fused loop differ", c.name)
			}
		}
		b.Run(c.name+"/interpreter", func(b *testing.B) {
			peak := 0
			interp := func() { _, peak = runAggregate(b, h, stmts) }
			if c.fused != nil {
				ti := againstFused(b, tuples, interp, func() { c.fused.run() })
				b.ReportMetric(float64(2*tuples)*float64(b.N)/ti.Seconds(), "updates/s")
			} else {
				b.ReportAllocs()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					interp()
				}
				report(b, start)
			}
			b.ReportMetric(float64(peak), "peak-held")
		})
		if c.fused != nil {
			b.Run(c.name+"/fused", func(b *testing.B) {
				b.ReportAllocs()
				start := time.Now()
				for i := 0; i < b.N; i++ {
					c.fused.run()
				}
				report(b, start)
			})
		}
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

// fusedCountBy is aggCountBy as a fused loop (see bench_test.go): a sweep
// over the Process states in order of from, with their ends waiting in a
// binary heap, a count per state, and, per state, the value and the time
// since which it has held. All changes at a time are applied before the
// counts are compared, so a state that ends as another begins makes no
// split. A group is a (state, count) pair, code count·nStates + state.
type fusedCountBy struct {
	p       *columns
	states  []string
	n, last []int64
	since   []algebra.Time
	ends    []stateEnd // a binary min-heap on at
	out     []coded
}

type stateEnd struct {
	at    algebra.Time
	state int64
}

func newFusedCountBy(h *algebra.History) *fusedCountBy {
	t := h.Table("Process")
	states := t.Rel.Attrs[1].Type.Enum.Members
	return &fusedCountBy{p: columnar(t, map[string]*dictionary{}), states: states,
		n: make([]int64, len(states)), last: make([]int64, len(states)), since: make([]algebra.Time, len(states))}
}

func (f *fusedCountBy) run() []coded {
	clear(f.n)
	clear(f.last)
	f.ends = f.ends[:0]
	out := f.out[:0]
	nStates := int64(len(f.states))
	state, from, to := f.p.col[1], f.p.from, f.p.to
	for i := 0; i < len(state) || len(f.ends) > 0; {
		t := algebra.Forever
		if len(f.ends) > 0 {
			t = f.ends[0].at
		}
		if i < len(state) && from[i] < t {
			t = from[i]
		}
		for len(f.ends) > 0 && f.ends[0].at == t {
			f.n[f.ends[0].state]--
			f.popEnd()
		}
		for ; i < len(state) && from[i] == t; i++ {
			f.n[state[i]]++
			f.pushEnd(stateEnd{to[i], state[i]})
		}
		for s := range f.n {
			if f.n[s] == f.last[s] {
				continue
			}
			if f.last[s] > 0 {
				out = append(out, coded{f.last[s]*nStates + int64(s), f.since[s], t})
			}
			f.last[s], f.since[s] = f.n[s], t
		}
		if t == algebra.Forever {
			break
		}
	}
	f.out = out
	return out
}

func (f *fusedCountBy) pushEnd(e stateEnd) {
	h := append(f.ends, e)
	for j := len(h) - 1; j > 0; {
		parent := (j - 1) / 2
		if h[parent].at <= h[j].at {
			break
		}
		h[parent], h[j] = h[j], h[parent]
		j = parent
	}
	f.ends = h
}

func (f *fusedCountBy) popEnd() {
	h := f.ends
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for j := 0; ; {
		c := 2*j + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].at < h[c].at {
			c++
		}
		if h[j].at <= h[c].at {
			break
		}
		h[j], h[c] = h[c], h[j]
		j = c
	}
	f.ends = h
}

func (f *fusedCountBy) table(rows []coded) *algebra.Table {
	nStates := int64(len(f.states))
	return codedTable(rows, []string{"State", "N"}, func(g int64) []algebra.Value {
		s := int(g % nStates)
		return []algebra.Value{algebra.Enum(f.states[s], s), algebra.Int(g / nStates)}
	})
}
