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
	return runInterpreterOpts(tb, h, stmts, exec.Options{})
}

func runInterpreterOpts(tb testing.TB, h *algebra.History, stmts []*check.Retrieve, opts exec.Options) *algebra.Table {
	plans := []plan.Node{plan.Translate(stmts[0])}
	net, err := exec.Build(h.Catalog, stmts, plans, opts)
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

// againstFused runs the interpreter (interp) b.N times, each followed by
// the fused loop computing the same (fused) with the timer stopped, and
// reports the interpreter's tuples/s and its rate as a fraction of the
// fused loop's measured in the same run, interleaved (vs-fused: 1 is the
// physical limit), so that the ratio holds under any load. It returns the
// time the interpreter took in all.
func againstFused(b *testing.B, tuples int, interp, fused func()) time.Duration {
	b.ReportAllocs()
	var ti, tf time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		interp()
		ti += time.Since(start)
		b.StopTimer()
		start = time.Now()
		fused()
		tf += time.Since(start)
		b.StartTimer()
	}
	b.ReportMetric(float64(tuples)*float64(b.N)/ti.Seconds(), "tuples/s")
	b.ReportMetric(tf.Seconds()/ti.Seconds(), "vs-fused")
	return ti
}

// BenchmarkInterpreterSelectProject: σ and π (with arithmetic) over one
// relation of 1M tuples, coalesced — the interpreter against a fused loop
// computing the same result (the physical-limit reference, below).
//
// What is timed: building the network, RunHistory and the result table
// (Collector.Table), as a command's run over a loaded history does. The
// interpreter takes its columnar path (columnar.go) over the relation's
// columns, which the history keeps once built (algebra.History.Columns):
// "interpreter" times runs after the first, which read them again, as the
// fused loop reads columns made before it is timed; "interpreter-cold"
// times each run building them too (the table is marked changed between
// runs, untimed); "rows" is the row operators alone (Options.NoColumnar),
// the path every statement the columnar path does not take runs on. The
// fused loop keeps its results as codes and decodes nothing; the
// interpreter builds a table of values.
func BenchmarkInterpreterSelectProject(b *testing.B) {
	h := benchHistory(b, 20000, 50) // 1,000,000 Process tuples
	tuples := len(h.Table("Process").Rows)
	stmts := testkit.Compile(b, h.Catalog, "q", benchSelectProject, 0)
	f := newFusedSelectProject(h)
	want := render(f.table(f.run()))
	if got := render(runInterpreter(b, h, stmts)); got != want {
		b.Fatal("interpreter and fused loop differ")
	}
	b.Run("interpreter", func(b *testing.B) {
		againstFused(b, tuples, func() { runInterpreter(b, h, stmts) }, func() { f.run() })
	})
	b.Run("interpreter-cold", func(b *testing.B) {
		b.ReportAllocs()
		var ti, tf time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			h.Table("Process").SortRows() // sorted already: only marks the table changed
			b.StartTimer()
			start := time.Now()
			runInterpreter(b, h, stmts)
			ti += time.Since(start)
			b.StopTimer()
			start = time.Now()
			f.run()
			tf += time.Since(start)
			b.StartTimer()
		}
		b.ReportMetric(float64(tuples)*float64(b.N)/ti.Seconds(), "tuples/s")
		b.ReportMetric(tf.Seconds()/ti.Seconds(), "vs-fused")
	})
	b.Run("rows", func(b *testing.B) {
		againstFused(b, tuples, func() { runInterpreterOpts(b, h, stmts, exec.Options{NoColumnar: true}) }, func() { f.run() })
	})
	b.Run("fused", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			f.run()
		}
		reportRate(b, tuples, start)
	})
}

// BenchmarkInterpreterTemporalJoin: docs/tquel.md example 1 — an equi-join of two
// interval relations (1M tuples in all) under the default when and valid
// clauses, coalesced — against a fused sweep over both relations.
func BenchmarkInterpreterTemporalJoin(b *testing.B) {
	h := benchHistory(b, 10000, 50) // 500,000 Process + 500,000 RunningOn
	tuples := len(h.Table("Process").Rows) + len(h.Table("RunningOn").Rows)
	stmts := testkit.Compile(b, h.Catalog, "q", benchTemporalJoin, 0)
	f := newFusedTemporalJoin(h)
	want := render(f.table(f.run()))
	if got := render(runInterpreter(b, h, stmts)); got != want {
		b.Fatal("interpreter and fused loop differ")
	}
	b.Run("interpreter", func(b *testing.B) {
		againstFused(b, tuples, func() { runInterpreter(b, h, stmts) }, func() { f.run() })
	})
	b.Run("fused", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			f.run()
		}
		reportRate(b, tuples, start)
	})
}

// The benchmarks' queries.
const (
	benchSelectProject = `range of p is Process
retrieve (p.Process, X = p.Prio * 2) where p.State = "Running" and p.Prio > 1`
	benchTemporalJoin = `range of p is Process
range of r is RunningOn
retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`
)

// TestBenchmarkQueriesAgreeWithReference keeps the benchmark workloads
// honest on a small scale: interpreter, fused loop and reference evaluator
// agree.
func TestBenchmarkQueriesAgreeWithReference(t *testing.T) {
	h := benchHistory(t, 30, 6)
	ah := aggHistory(t, 30, 20)
	sp, tj, cb := newFusedSelectProject(h), newFusedTemporalJoin(h), newFusedCountBy(ah)
	for _, c := range []struct {
		h     *algebra.History
		q     string
		fused func() *algebra.Table
	}{
		{h, benchSelectProject, func() *algebra.Table { return sp.table(sp.run()) }},
		{h, benchTemporalJoin, func() *algebra.Table { return tj.table(tj.run()) }},
		{ah, aggCountBy, func() *algebra.Table { return cb.table(cb.run()) }},
	} {
		stmts := testkit.Compile(t, c.h.Catalog, "q", c.q, 0)
		want, err := ref.Eval(c.h, stmts)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(runInterpreter(t, c.h, stmts)); got != render(want[0]) {
			t.Errorf("interpreter differs from reference for %s", c.q)
		}
		if got := render(c.fused()); got != render(want[0]) {
			t.Errorf("fused loop differs from reference for %s:\n%s\nwant\n%s", c.q, got, render(want[0]))
		}
	}
}

// ---- fused loops: the physical-limit reference ----
//
// A fused loop is what the query compiles to at best: one pass over the
// input in time order, predicate, projection, join and coalescing in a
// single loop body, no maps, no sorting, no allocation once its buffers
// have grown. It reads the relations as columns, entities and enums as
// dense integer codes — the representation of columnar batches; making the
// columns is not timed, as building the interpreter's input tables is not.
// Results are kept as codes and decoded only for the check (table).

// columns is a relation as the fused loops read it: per attribute, a
// column of codes (an entity's index in its type's dictionary, an enum's
// ordinal, an int's value), and the valid times.
type columns struct {
	col      [][]int64
	from, to []algebra.Time
}

// dictionary numbers the identifiers of one entity type densely.
type dictionary struct {
	code  map[string]int64
	names []string
}

func (d *dictionary) encode(s string) int64 {
	c, ok := d.code[s]
	if !ok {
		c = int64(len(d.names))
		d.code[s] = c
		d.names = append(d.names, s)
	}
	return c
}

// columnar makes columns of a table; dicts holds a dictionary per entity
// type, shared by every relation encoded with it so that codes compare.
func columnar(t *algebra.Table, dicts map[string]*dictionary) *columns {
	c := &columns{col: make([][]int64, len(t.Rel.Attrs))}
	for _, row := range t.Rows {
		for i, a := range t.Rel.Attrs {
			v := row.Vals[i]
			code := v.N // enum ordinal, int
			if a.Type.Kind == algebra.KindEntity {
				d := dicts[a.Type.Entity]
				if d == nil {
					d = &dictionary{code: map[string]int64{}}
					dicts[a.Type.Entity] = d
				}
				code = d.encode(v.S)
			}
			c.col[i] = append(c.col[i], code)
		}
		c.from = append(c.from, row.From)
		c.to = append(c.to, row.To)
	}
	return c
}

// span is a valid time being coalesced; to == algebra.Beginning when none.
type span struct{ from, to algebra.Time }

// coded is one result row: its group's code and its valid time.
type coded struct {
	group    int64
	from, to algebra.Time
}

// coalesceInto extends group g's open span by [from, to) when they overlap
// or meet, and otherwise emits the open span and starts another. Spans of
// a group must arrive in order of from.
func coalesceInto(open []span, out []coded, g int64, from, to algebra.Time) []coded {
	o := &open[g]
	if o.to != algebra.Beginning && from <= o.to {
		o.to = max(o.to, to)
		return out
	}
	if o.to != algebra.Beginning {
		out = append(out, coded{g, o.from, o.to})
	}
	*o = span{from, to}
	return out
}

// flushOpen emits every group's open span and clears it.
func flushOpen(open []span, out []coded) []coded {
	for g := range open {
		if open[g].to != algebra.Beginning {
			out = append(out, coded{int64(g), open[g].from, open[g].to})
			open[g].to = algebra.Beginning
		}
	}
	return out
}

func resetOpen(open []span) {
	for g := range open {
		open[g].to = algebra.Beginning
	}
}

// fusedSelectProject is benchSelectProject as a fused loop: a group is a
// (process, priority) pair, code process·nPrio + priority.
type fusedSelectProject struct {
	p              *columns
	procs          *dictionary
	running, nPrio int64
	open           []span
	out            []coded
}

func newFusedSelectProject(h *algebra.History) *fusedSelectProject {
	dicts := map[string]*dictionary{}
	t := h.Table("Process")
	p := columnar(t, dicts)
	nPrio := int64(0)
	for _, v := range p.col[2] {
		nPrio = max(nPrio, v+1)
	}
	f := &fusedSelectProject{p: p, procs: dicts["Process"], nPrio: nPrio,
		running: int64(t.Rel.Attrs[1].Type.Enum.Ordinal("Running"))}
	f.open = make([]span, int64(len(f.procs.names))*nPrio)
	return f
}

func (f *fusedSelectProject) run() []coded {
	resetOpen(f.open)
	out := f.out[:0]
	proc, state, prio := f.p.col[0], f.p.col[1], f.p.col[2]
	from, to := f.p.from, f.p.to
	for i := range proc {
		if state[i] != f.running || prio[i] <= 1 {
			continue
		}
		out = coalesceInto(f.open, out, proc[i]*f.nPrio+prio[i], from[i], to[i])
	}
	out = flushOpen(f.open, out)
	f.out = out
	return out
}

func (f *fusedSelectProject) table(rows []coded) *algebra.Table {
	return codedTable(rows, []string{"Process", "X"}, func(g int64) []algebra.Value {
		return []algebra.Value{algebra.Entity(f.procs.names[g/f.nPrio]), algebra.Int(g % f.nPrio * 2)}
	})
}

// codedTable decodes result rows into a table of interval relation attrs,
// in order; vals gives a group's values.
func codedTable(rows []coded, attrs []string, vals func(group int64) []algebra.Value) *algebra.Table {
	rel := &algebra.Relation{Class: algebra.ClassInterval}
	for _, a := range attrs {
		rel.Attrs = append(rel.Attrs, algebra.Attr{Name: a})
	}
	out := &algebra.Table{Rel: rel}
	for _, r := range rows {
		out.Add(vals(r.group), r.from, r.to)
	}
	out.SortRows()
	return out
}

// fusedTemporalJoin is benchTemporalJoin as a fused sweep over both
// relations in order of from. A process's states are back to back, so it
// has at most one Running state open; its RunningOn intervals are kept
// while they can still overlap. Each overlapping pair is found once, when
// its later tuple arrives, and its intersection then begins at the sweep's
// time — in order, so it coalesces at once. A group is a (process, cpu)
// pair, code process·nCPU + cpu.
type fusedTemporalJoin struct {
	p, r         *columns
	procs, cpus  *dictionary
	running      int64
	runningState []span     // per process: its open Running state
	runningOn    [][]cpuRun // per process: RunningOn intervals that may still overlap
	open         []span
	out          []coded
}

type cpuRun struct {
	cpu      int64
	from, to algebra.Time
}

func newFusedTemporalJoin(h *algebra.History) *fusedTemporalJoin {
	dicts := map[string]*dictionary{}
	pt := h.Table("Process")
	p, r := columnar(pt, dicts), columnar(h.Table("RunningOn"), dicts)
	f := &fusedTemporalJoin{p: p, r: r, procs: dicts["Process"], cpus: dicts["Cpu"],
		running: int64(pt.Rel.Attrs[1].Type.Enum.Ordinal("Running"))}
	n := len(f.procs.names)
	f.runningState = make([]span, n)
	f.runningOn = make([][]cpuRun, n)
	f.open = make([]span, n*len(f.cpus.names))
	return f
}

func (f *fusedTemporalJoin) run() []coded {
	resetOpen(f.open)
	resetOpen(f.runningState)
	for i := range f.runningOn {
		f.runningOn[i] = f.runningOn[i][:0]
	}
	out := f.out[:0]
	nCPU := int64(len(f.cpus.names))
	pProc, pState, pFrom, pTo := f.p.col[0], f.p.col[1], f.p.from, f.p.to
	rProc, rCPU, rFrom, rTo := f.r.col[0], f.r.col[1], f.r.from, f.r.to
	i, k := 0, 0
	for i < len(pProc) || k < len(rProc) {
		if k == len(rProc) || i < len(pProc) && pFrom[i] <= rFrom[k] {
			if pState[i] == f.running {
				proc, from, to := pProc[i], pFrom[i], pTo[i]
				f.runningState[proc] = span{from, to}
				runs := f.runningOn[proc]
				kept := runs[:0]
				for _, ro := range runs {
					if ro.to <= from {
						continue // ended: can overlap nothing to come
					}
					kept = append(kept, ro)
					out = coalesceInto(f.open, out, proc*nCPU+ro.cpu, from, min(to, ro.to))
				}
				f.runningOn[proc] = kept
			}
			i++
			continue
		}
		proc, from, to := rProc[k], rFrom[k], rTo[k]
		if st := f.runningState[proc]; st.to != algebra.Beginning && st.to > from {
			out = coalesceInto(f.open, out, proc*nCPU+rCPU[k], from, min(to, st.to))
		}
		f.runningOn[proc] = append(f.runningOn[proc], cpuRun{rCPU[k], from, to})
		k++
	}
	out = flushOpen(f.open, out)
	f.out = out
	return out
}

func (f *fusedTemporalJoin) table(rows []coded) *algebra.Table {
	nCPU := int64(len(f.cpus.names))
	return codedTable(rows, []string{"Process", "Cpu"}, func(g int64) []algebra.Value {
		return []algebra.Value{algebra.Entity(f.procs.names[g/nCPU]), algebra.Entity(f.cpus.names[g%nCPU])}
	})
}
