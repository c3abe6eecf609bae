package exec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// sweepQueries are overlap joins the sweep evaluates (join_sweep.go): no,
// one and two key columns, a join of a relation with itself, conjuncts
// over both variables besides the keys, the default clauses written out,
// and results that coalesce.
var sweepQueries = []string{
	`range of p is Process
range of r is RunningOn
retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`,
	`range of w is Waiting
range of r is RunningOn
retrieve (w.Mailbox, r.Cpu) where r.Process = w.Process`,
	`range of p is Process
range of q is Process
retrieve (p.Process, p.State, N = p.Prio - q.Prio) where p.Process = q.Process and q.State = p.State`,
	`range of p is Process
range of r is RunningOn
retrieve (p.State, r.Cpu) where p.Process = r.Process and p.Prio > 1 and r.Cpu != "C1"
when p overlap r valid from begin of (p overlap r) to end of (p overlap r)`,
	`range of p is Process
range of q is Process
retrieve (p.Process, Q = q.Process) where p.State = q.State and p.Prio < q.Prio when q overlap p`,
	`range of r is RunningOn
range of s is RunningOn
retrieve (r.Cpu) where r.Cpu = s.Cpu`,
	`range of w is Waiting
range of r is RunningOn
retrieve (Waiter = w.Process, Runner = r.Process)`,
	`range of w is Waiting
range of r is RunningOn
retrieve (Waiter = w.Process, r.Cpu) where w.Process != r.Process`,
}

// TestSweepJoinAgrees holds the overlap equi-join sweep to the general
// join and the reference evaluator: over random histories (across the
// epoch and at the ends of time too), each query gives the reference's
// results with the sweep, with the general path (Options.generalJoin) and
// with the sweep under colliding hashes, and the sweep is the path taken.
func TestSweepJoinAgrees(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	n := max(testkit.Histories()/2, 10)
	for qi, q := range sweepQueries {
		cfg := histgen.DefaultConfig(0)
		cfg.Edges = true
		stmts := testkit.Compile(t, cat, "q", q, cfg.Span)
		plans := []plan.Node{plan.Translate(stmts[0])}
		nonEmpty := 0
		for seed := 0; seed < n; seed++ {
			cfg.Seed = uint64(seed)
			h := histgen.Random(cat, cfg)
			want, err := ref.Eval(h, stmts)
			if err != nil {
				t.Fatalf("query %d, seed %d: reference: %v", qi, seed, err)
			}
			if len(want[0].Rows) > 0 {
				nonEmpty++
			}
			for _, o := range []Options{{}, {generalJoin: true}, {collide: true}} {
				net, err := Build(cat, stmts, plans, o)
				if err != nil {
					t.Fatal(err)
				}
				swept := 0
				for _, hd := range net.holders {
					if j, ok := hd.h.(*Join); ok && j.sw != nil {
						swept++
					}
				}
				if want := 1; o.generalJoin {
					if swept != 0 {
						t.Fatalf("query %d: generalJoin, yet %d joins swept", qi, swept)
					}
				} else if swept != want {
					t.Fatalf("query %d: %d joins swept, want %d", qi, swept, want)
				}
				if err := net.RunHistory(h); err != nil {
					t.Fatalf("query %d, seed %d: %v", qi, seed, err)
				}
				if got, w := dump(net.Stmts[0].Result.Table()), dump(want[0]); got != w {
					t.Fatalf("query %d, seed %d, %+v: interpreter and reference differ\n%s\nwant\n%s", qi, seed, o, got, w)
				}
				for _, hd := range net.holders {
					if j, ok := hd.h.(*Join); ok && j.Held() != 0 {
						t.Fatalf("query %d, seed %d, %+v: the join holds %d at the end", qi, seed, o, j.Held())
					}
				}
			}
		}
		if nonEmpty < n/4 {
			t.Errorf("query %d: %d of %d results non-empty: the query tests little", qi, nonEmpty, n)
		}
	}
}

// TestSweepKeyNodesBounded tries to break the bound on the sweep's key
// nodes: 20,000 processes, one after another, each with a Running state
// and a RunningOn interval that overlap — every key new, a few open at
// once. The nodes the sweep ever held at once (its node slots) stay within
// twice idleMin, not one per key seen.
func TestSweepKeyNodesBounded(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	h := algebra.NewHistory(cat)
	running := cat.Lookup("Process").Attrs[1].Type.Enum
	const procs = 20000
	for p := range procs {
		id := algebra.Entity(fmt.Sprintf("P%d", p))
		at := algebra.Time(10 * p)
		h.Table("Process").Add([]algebra.Value{id, algebra.Enum("Running", running.Ordinal("Running")), algebra.Int(1)}, at, at+25)
		h.Table("RunningOn").Add([]algebra.Value{id, algebra.Entity("C1")}, at+5, at+30)
	}
	stmts := testkit.Compile(t, cat, "q", sweepQueries[0], 0)
	net, err := Build(cat, stmts, []plan.Node{plan.Translate(stmts[0])}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := net.RunHistory(h); err != nil {
		t.Fatal(err)
	}
	if n := len(net.Stmts[0].Result.Table().Rows); n != procs {
		t.Fatalf("%d results, want %d", n, procs)
	}
	for _, hd := range net.holders {
		if j, ok := hd.h.(*Join); ok {
			if j.sw == nil {
				t.Fatal("the join is not swept")
			}
			if n := len(j.sw.knHead); n > 2*idleMin+16 {
				t.Errorf("the sweep held up to %d key nodes for %d keys, a few open at once", n, procs)
			}
		}
	}
}
