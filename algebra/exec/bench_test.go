package exec_test

import (
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// benchHistory generates a history of the differential spec at scale:
// procs processes, each a run of back-to-back Process states, and as many
// RunningOn intervals per process, scattered.
func benchHistory(tb testing.TB, procs, perProc int) *algebra.History {
	cat := testkit.LoadCatalog(tb, filepath.Join(testkit.Root(tb), "testdata/differential/spec.sdl"))
	h := algebra.NewHistory(cat)
	r := rand.New(rand.NewPCG(1, 2))
	states := cat.Lookup("Process").Attrs[1].Type.Enum
	ps, rs := h.Table("Process"), h.Table("RunningOn")
	cpus := []algebra.Value{algebra.Entity("C1"), algebra.Entity("C2"), algebra.Entity("C3"), algebra.Entity("C4")}
	for p := 0; p < procs; p++ {
		id := algebra.Entity("P" + itoa(p))
		at := algebra.Time(r.IntN(1000))
		for i := 0; i < perProc; i++ {
			st := r.IntN(4)
			end := at + 1 + algebra.Time(r.IntN(2000))
			ps.Add([]algebra.Value{id, algebra.Enum(states.Members[st], st), algebra.Int(int64(r.IntN(5)))}, at, end)
			from := at + algebra.Time(r.IntN(1500))
			rs.Add([]algebra.Value{id, cpus[r.IntN(len(cpus))]}, from, from+1+algebra.Time(r.IntN(1500)))
			at = end
		}
	}
	// A recording is in time order.
	ps.SortRows()
	rs.SortRows()
	return h
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func runInterpreter(tb testing.TB, h *algebra.History, stmts []*check.Retrieve) *algebra.Table {
	plans := []plan.Node{plan.Translate(stmts[0])}
	net, err := exec.Build(h.Catalog, stmts, plans, exec.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := net.RunHistory(h); err != nil {
		tb.Fatal(err)
	}
	return net.Stmts[0].Result.Table()
}

func reportRate(b *testing.B, tuples int, start time.Time) {
	b.ReportMetric(float64(tuples)*float64(b.N)/time.Since(start).Seconds(), "tuples/s")
}

// BenchmarkInterpreterSelectProject: σ and π (with arithmetic) over one
// relation of 1M tuples, coalesced — the interpreter against a hand-written
// loop computing the same result.
func BenchmarkInterpreterSelectProject(b *testing.B) {
	h := benchHistory(b, 20000, 50) // 1,000,000 Process tuples
	tuples := len(h.Table("Process").Rows)
	const q = `range of p is Process
retrieve (p.Process, X = p.Prio * 2) where p.State = "Running" and p.Prio > 1`
	stmts := testkit.Compile(b, h.Catalog, "q", q, 0)
	want := render(handSelectProject(h))
	if got := render(runInterpreter(b, h, stmts)); got != want {
		b.Fatal("interpreter and hand-written loop differ")
	}
	b.Run("interpreter", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			runInterpreter(b, h, stmts)
		}
		reportRate(b, tuples, start)
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			handSelectProject(h)
		}
		reportRate(b, tuples, start)
	})
}

// handSelectProject is what a programmer would write for that query:
// filter, project, then coalesce per value.
func handSelectProject(h *algebra.History) *algebra.Table {
	type key struct {
		p string
		x int64
	}
	groups := map[key][]algebra.Tuple{}
	for _, t := range h.Table("Process").Rows {
		if t.Vals[1].S != "Running" || t.Vals[2].N <= 1 {
			continue
		}
		k := key{t.Vals[0].S, t.Vals[2].N * 2}
		groups[k] = append(groups[k], algebra.Tuple{From: t.From, To: t.To})
	}
	rel := &algebra.Relation{Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "Process"}, {Name: "X"}}}
	out := &algebra.Table{Rel: rel}
	for k, list := range groups {
		vals := []algebra.Value{algebra.Entity(k.p), algebra.Int(k.x)}
		for _, t := range coalesceSorted(list) {
			out.Add(vals, t.From, t.To)
		}
	}
	out.SortRows()
	return out
}

func coalesceSorted(list []algebra.Tuple) []algebra.Tuple {
	sort.Slice(list, func(i, j int) bool { return list[i].From < list[j].From })
	out := list[:0:0]
	for _, t := range list {
		if n := len(out); n > 0 && t.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, t.To)
			continue
		}
		out = append(out, t)
	}
	return out
}

// BenchmarkInterpreterTemporalJoin: docs/tquel.md example 1 — an equi-join of two
// interval relations (1M tuples in all) under the default when and valid
// clauses, coalesced — against a hand-written per-key overlap join.
func BenchmarkInterpreterTemporalJoin(b *testing.B) {
	h := benchHistory(b, 10000, 50) // 500,000 Process + 500,000 RunningOn
	tuples := len(h.Table("Process").Rows) + len(h.Table("RunningOn").Rows)
	const q = `range of p is Process
range of r is RunningOn
retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`
	stmts := testkit.Compile(b, h.Catalog, "q", q, 0)
	want := render(handTemporalJoin(h))
	if got := render(runInterpreter(b, h, stmts)); got != want {
		b.Fatal("interpreter and hand-written join differ")
	}
	b.Run("interpreter", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			runInterpreter(b, h, stmts)
		}
		reportRate(b, tuples, start)
	})
	b.Run("handwritten", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			handTemporalJoin(h)
		}
		reportRate(b, tuples, start)
	})
}

// handTemporalJoin groups both relations by process, overlaps each
// running state with the process's RunningOn intervals, and coalesces.
func handTemporalJoin(h *algebra.History) *algebra.Table {
	type side struct{ ps, rs []algebra.Tuple }
	by := map[string]*side{}
	get := func(p string) *side {
		s := by[p]
		if s == nil {
			s = &side{}
			by[p] = s
		}
		return s
	}
	for _, t := range h.Table("Process").Rows {
		if t.Vals[1].S == "Running" {
			s := get(t.Vals[0].S)
			s.ps = append(s.ps, t)
		}
	}
	for _, t := range h.Table("RunningOn").Rows {
		s := get(t.Vals[0].S)
		s.rs = append(s.rs, t)
	}
	type key struct{ p, cpu string }
	groups := map[key][]algebra.Tuple{}
	for p, s := range by {
		sort.Slice(s.rs, func(i, j int) bool { return s.rs[i].From < s.rs[j].From })
		for _, pt := range s.ps {
			for _, rt := range s.rs {
				if rt.From >= pt.To {
					break
				}
				if rt.To <= pt.From {
					continue
				}
				k := key{p, rt.Vals[1].S}
				groups[k] = append(groups[k], algebra.Tuple{From: max(pt.From, rt.From), To: min(pt.To, rt.To)})
			}
		}
	}
	rel := &algebra.Relation{Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "Process"}, {Name: "Cpu"}}}
	out := &algebra.Table{Rel: rel}
	for k, list := range groups {
		vals := []algebra.Value{algebra.Entity(k.p), algebra.Entity(k.cpu)}
		for _, t := range coalesceSorted(list) {
			out.Add(vals, t.From, t.To)
		}
	}
	out.SortRows()
	return out
}

// TestBenchmarkQueriesAgreeWithReference keeps the benchmark workloads
// honest on a small scale: interpreter, hand-written loop and reference
// evaluator agree.
func TestBenchmarkQueriesAgreeWithReference(t *testing.T) {
	h := benchHistory(t, 30, 6)
	for _, c := range []struct {
		q    string
		hand func(*algebra.History) *algebra.Table
	}{
		{`range of p is Process
retrieve (p.Process, X = p.Prio * 2) where p.State = "Running" and p.Prio > 1`, handSelectProject},
		{`range of p is Process
range of r is RunningOn
retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`, handTemporalJoin},
	} {
		stmts := testkit.Compile(t, h.Catalog, "q", c.q, 0)
		want, err := ref.Eval(h, stmts)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(runInterpreter(t, h, stmts)); got != render(want[0]) {
			t.Errorf("interpreter differs from reference for %s", c.q)
		}
		if got := render(c.hand(h)); got != render(want[0]) {
			t.Errorf("hand-written loop differs from reference for %s:\n%s\nwant\n%s", c.q, got, render(want[0]))
		}
	}
}
