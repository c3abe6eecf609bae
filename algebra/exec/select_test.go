package exec_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestOneVariableBlocksRunAsSelect: a one-variable block whose results are
// valid at their tuples' own times runs as a Select, not a Join; blocks
// that must wait for an end, or have more variables, stay Joins. (That the
// Select computes what the Join did is the differential corpus's select-*
// queries.)
func TestOneVariableBlocksRunAsSelect(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/differential/spec.sdl"))
	for _, c := range []struct {
		q   string
		sel bool
	}{
		{`range of p is Process retrieve (p.Process, X = p.Prio * 2) where p.State = "Running" and p.Prio > 1`, true},
		{`range of s is SendMessage retrieve (s.Process) when s precede "12"`, true},
		{`range of w is Waiting retrieve (w.Process) valid at begin of w`, true},
		{`range of p is Process retrieve (p.Process, B = begin of p) where begin of p > "4"`, true},
		{`range of i is Interrupt retrieve (i.Cpu, T = end of i) where end of i > "3"`, true},
		// An interval's end is not known when it begins.
		{`range of w is Waiting retrieve (w.Process) valid at end of w`, false},
		{`range of p is Process retrieve (p.Process, E = end of p)`, false},
		{`range of p is Process retrieve (p.Process) when p overlap "7"`, false},
		{`range of p is Process retrieve (p.Process) valid from begin of p to "forever"`, false},
		// An event valid elsewhere than at itself.
		{`range of s is SendMessage retrieve (s.Process) valid at "5"`, false},
		{`range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process`, false},
	} {
		stmts := testkit.Compile(t, cat, "q", c.q, 0)
		net, err := exec.Build(cat, stmts, []plan.Node{plan.Translate(stmts[0])}, exec.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		s := net.Stmts[0]
		if got := s.Select != nil; got != c.sel || (s.Join == nil) != c.sel {
			t.Errorf("%s: Select %v, Join %v; want a Select: %v", c.q, s.Select != nil, s.Join != nil, c.sel)
		}
	}
}

// TestSelectAllocatesNothingPerTuple: a σ/π run over ten times the tuples
// (the same processes, so the same groups open at once) allocates almost
// nothing more — results are built in blocks, coalesced under integer
// keys, and rejected tuples are never played.
func TestSelectAllocatesNothingPerTuple(t *testing.T) {
	allocs := func(perProc int) (uint64, int) {
		h := benchHistory(t, 200, perProc)
		stmts := testkit.Compile(t, h.Catalog, "q", benchSelectProject, 0)
		net, err := exec.Build(h.Catalog, stmts, []plan.Node{plan.Translate(stmts[0])}, exec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if net.Stmts[0].Select == nil {
			t.Fatal("the query does not run as a Select")
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := net.RunHistory(h); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs, len(h.Table("Process").Rows)
	}
	small, n1 := allocs(20)
	large, n2 := allocs(200)
	per := float64(int64(large)-int64(small)) / float64(n2-n1)
	t.Logf("%d allocations for %d tuples, %d for %d: %.4f per tuple", small, n1, large, n2, per)
	if per > 0.01 {
		t.Errorf("%.4f allocations per tuple, want ≈ 0 (at most 0.01)", per)
	}
}

// TestDriversSkipRejectedTuples: RunHistory and RunSource do not play the
// tuples every reader of their relation rejects for their values alone
// (the where conjuncts over its variable), and the results are the same
// as when every tuple is played; a reader that does not screen (an
// aggregate) gets every tuple.
func TestDriversSkipRejectedTuples(t *testing.T) {
	h := benchHistory(t, 30, 6)
	notRunning := 0
	for _, row := range h.Table("Process").Rows {
		if row.Vals[1].S != "Running" {
			notRunning++
		}
	}
	for _, c := range []struct {
		q    string
		skip int
	}{
		{benchSelectProject, -1}, // counted below: State and Prio
		{benchTemporalJoin, notRunning},
		{`range of p is Process retrieve (p.State, N = count(p.Process by p.State)) where p.State = "Running"`, 0},
	} {
		want := c.skip
		if want < 0 {
			want = 0
			for _, row := range h.Table("Process").Rows {
				if row.Vals[1].S != "Running" || row.Vals[2].N <= 1 {
					want++
				}
			}
		}
		stmts := testkit.Compile(t, h.Catalog, "q", c.q, 0)
		want0, err := ref.Eval(h, stmts)
		if err != nil {
			t.Fatal(err)
		}
		for _, viaSource := range []bool{false, true} {
			net, err := exec.Build(h.Catalog, stmts, []plan.Node{plan.Translate(stmts[0])}, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if viaSource {
				_, err = net.RunSource(stream.TableSource(h), nil)
			} else {
				err = net.RunHistory(h)
			}
			if err != nil {
				t.Fatal(err)
			}
			if net.Skipped != want {
				t.Errorf("%s (RunSource %v): %d tuples skipped, want %d", c.q, viaSource, net.Skipped, want)
			}
			if viaSource {
				continue
			}
			// With gaps RunHistory plays every tuple: each is an instant
			// a Cut must see pass (TestHistoryLostCuts in subject).
			gapped, err := exec.Build(h.Catalog, stmts, []plan.Node{plan.Translate(stmts[0])},
				exec.Options{Gaps: func(string) []algebra.Span { return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if err := gapped.RunHistory(h); err != nil {
				t.Fatal(err)
			}
			if gapped.Skipped != 0 {
				t.Errorf("%s: %d tuples skipped in a run with gaps", c.q, gapped.Skipped)
			}
			if got := render(net.Stmts[0].Result.Table()); got != render(want0[0]) {
				t.Errorf("%s (RunSource %v): results differ from the reference", c.q, viaSource)
			}
		}
	}
}
