package exec_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// Queries whose existential RunningOn variable r has an interval witness
// summary (join_semi.go): read by one overlap (a covering set per
// process), and only through its begin under precede (the earliest begin
// per process).
const (
	coverQuery = `range of w is Waiting
range of r is RunningOn
retrieve (w.Process) valid at end of w where r.Process = w.Process when r overlap end of w`
	precedeQuery = `range of w is Waiting
range of r is RunningOn
retrieve (w.Process) valid at end of w where r.Process = w.Process when begin of r precede end of w`
)

// denseWitnesses is a history of the differential spec where each of procs
// processes has perProc RunningOn intervals beginning every few chronons
// and lasting hundreds (about a hundred open at once), and a Waiting
// interval every 20 chronons.
func denseWitnesses(tb testing.TB, procs, perProc int) *algebra.History {
	cat := testkit.LoadCatalog(tb, filepath.Join(testkit.Root(tb), "testdata/differential/spec.sdl"))
	h := algebra.NewHistory(cat)
	r := rand.New(rand.NewPCG(3, 4))
	rs, ws := h.Table("RunningOn"), h.Table("Waiting")
	for p := range procs {
		id := algebra.Entity("P" + itoa(p))
		for i := range perProc {
			from := algebra.Time(5*i + r.IntN(5))
			rs.Add([]algebra.Value{id, algebra.Entity("C" + itoa(r.IntN(4)))}, from, from+200+algebra.Time(r.IntN(500)))
			if i%4 == 0 {
				// Gaps in the runs now and then, so spans end and begin anew.
				if i%400 == 0 {
					from += 800
				}
				ws.Add([]algebra.Value{id, algebra.Entity("M" + itoa(r.IntN(3)))}, from, from+1+algebra.Time(r.IntN(30)))
			}
		}
	}
	rs.SortRows()
	ws.SortRows()
	return h
}

// runStored runs stmts with the Stored rewrite (semi-joins) over h and
// checks the results against the reference evaluator; it returns the
// network's peak of held tuples.
func runStored(tb testing.TB, h *algebra.History, stmts []*check.Retrieve, checkRef bool) int {
	tb.Helper()
	plans, semi := storedPlans(tb, h.Catalog, stmts)
	if !semi {
		tb.Fatal("the plan has no semi-join")
	}
	got, net, err := interpretPlans(h.Catalog, h, stmts, plans, exec.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if checkRef {
		want, err := ref.Eval(h, stmts)
		if err != nil {
			tb.Fatal(err)
		}
		for i := range want {
			if g, w := render(got[i]), render(want[i]); g != w {
				tb.Fatalf("statement %d: interpreter and reference differ\n--- interpreter\n%s--- reference\n%s", i+1, g, w)
			}
		}
	}
	return net.PeakHeld()
}

// TestCoveringSet: 1,000 RunningOn intervals of one process, all open at
// once, are witnesses of an existential variable under overlap: merged
// into one span, the join stores one entry for them, not 1,000.
func TestCoveringSet(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/differential/spec.sdl"))
	h := algebra.NewHistory(cat)
	state := cat.Lookup("Process").Attrs[1].Type.Enum
	h.Table("Process").Add([]algebra.Value{algebra.Entity("P1"), algebra.Enum(state.Members[1], 1), algebra.Int(0)}, 0, 100_000)
	const n = 1000
	for i := range n {
		h.Table("RunningOn").Add([]algebra.Value{algebra.Entity("P1"), algebra.Entity("C1")}, algebra.Time(10+i), algebra.Time(50_000+i))
	}
	stmts := testkit.Compile(t, cat, "q", `range of p is Process
range of r is RunningOn
retrieve (p.Process, p.State) valid from begin of p to end of p where p.Process = r.Process when p overlap r`, 0)
	if held := runStored(t, h, stmts, true); held > 10 {
		t.Errorf("the run held %d tuples at its peak with %d overlapping witnesses; want them stored as one span", held, n)
	}
}

// TestIntervalWitnessDense: over dense, overlapping witnesses of many
// processes, both summaries give the reference's results and hold a few
// entries per process rather than every interval (the precede query's
// intervals can never be purged: every later wait may use them).
func TestIntervalWitnessDense(t *testing.T) {
	const procs, perProc = 8, 1500
	h := denseWitnesses(t, procs, perProc)
	for _, q := range []struct{ name, text string }{{"overlap", coverQuery}, {"precede", precedeQuery}} {
		stmts := testkit.Compile(t, h.Catalog, q.name, q.text, 0)
		held := runStored(t, h, stmts, true)
		t.Logf("%s: peak held %d over %d intervals", q.name, held, procs*perProc)
		if bound := procs * 40; held > bound {
			t.Errorf("%s: the run held %d tuples at its peak over %d intervals; want at most %d", q.name, held, procs*perProc, bound)
		}
	}
}

// BenchmarkIntervalWitness runs the two summarized queries over dense
// witnesses: 20 processes × 2,000 intervals, about a hundred open at once
// per process.
func BenchmarkIntervalWitness(b *testing.B) {
	h := denseWitnesses(b, 20, 2000)
	for _, q := range []struct{ name, text string }{{"overlap", coverQuery}, {"precede", precedeQuery}} {
		stmts := testkit.Compile(b, h.Catalog, q.name, q.text, 0)
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				runStored(b, h, stmts, false)
			}
		})
	}
}
