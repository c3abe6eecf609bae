package rewrite_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// heldAt reports whether table tab has a row valid at t whose attribute
// key equals id and that satisfies ok.
func heldAt(tab *algebra.Table, key int, id algebra.Value, t algebra.Time, ok func(algebra.Tuple) bool) bool {
	for _, r := range tab.Rows {
		if r.From <= t && t < r.To && algebra.Equal(r.Vals[key], id) && ok(r) {
			return true
		}
	}
	return false
}

// acquireChecked runs the plans acquisitionally over h and holds every
// statement's result to the reference evaluator's, which it returns.
func acquireChecked(t *testing.T, seed int, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, ps []plan.Node) ([]*algebra.Table, exec.AcquireStats) {
	t.Helper()
	got, stats := acquire(t, cat, h, stmts, ps, 1)
	want, err := ref.Eval(h, stmts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
			t.Fatalf("seed %d, statement %d: acquired\n%s--- reference\n%s", seed, i+1, g, w)
		}
	}
	return want, stats
}

// sendsWhile counts the sends at instants when their process satisfies
// held.
func sendsWhile(h *algebra.History, held func(p algebra.Value, t algebra.Time) bool) (n, all int) {
	for _, s := range h.Table("SendMessage").Rows {
		all++
		if held(s.Vals[0], s.From) {
			n++
		}
	}
	return n, all
}

// TestEntitySelectEnablesWhileSatisfied runs "the sends of Running
// processes" acquisitionally over random histories and counts SendMessage
// packets: exactly the sends made while the sending process was Running —
// not one more (the sensor is disabled when the process stops running),
// not one fewer (the result equals the reference evaluator's).
func TestEntitySelectEnablesWhileSatisfied(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join("..", "testdata", "differential", "spec.sdl"))
	cfg := histgen.DefaultConfig(0)
	cfg.Integrity = true
	stmts := testkit.Compile(t, cat, "running", `range of p is Process
range of s is SendMessage
retrieve (s.Mailbox, s.Size) where p.Process = s.Process and p.State = "Running"`, cfg.Span)
	opt, _ := plans(t, cat, stmts, true)
	saved, total := 0, 0
	for seed := 0; seed < testkit.Histories(); seed++ {
		cfg.Seed = uint64(seed)
		h := histgen.Random(cat, cfg)
		_, stats := acquireChecked(t, seed, cat, h, stmts, opt)
		procs := h.Table("Process")
		running, all := sendsWhile(h, func(p algebra.Value, at algebra.Time) bool {
			return heldAt(procs, 0, p, at, func(r algebra.Tuple) bool { return r.Vals[1].S == "Running" })
		})
		if got := stats.Packets["SendMessage"]; got != running {
			t.Fatalf("seed %d: %d SendMessage packets, want the %d sends made while Running (of %d)", seed, got, running, all)
		}
		saved += all - running
		total += all
	}
	if saved == 0 {
		t.Errorf("no send was spared over %d histories: the test shows nothing", testkit.Histories())
	}
	t.Logf("%d of %d sends not delivered", saved, total)
}

// TestTwoPhaseEnablesOverThreshold runs two-phase monitoring as one
// program — each mailbox's sends in the last 4 ns counted (phase one, over
// a fully enabled SendMessage sensor), waits traced only on mailboxes over
// the threshold (phase two) — and counts Waiting packets: exactly the waits
// whose packet (a traced-then-disabled interval, reported whole at its
// end) comes when their mailbox has been over the threshold, as phase
// one's result (the reference evaluator's) says. A wait overlaps a busy
// span only if it ends after the span began, and its packet is decided at
// its last chronon: so the argument holds a mailbox from its first busy
// instant on (the join keeps only the waits that overlap a busy span).
func TestTwoPhaseEnablesOverThreshold(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join("..", "testdata", "differential", "spec.sdl"))
	cfg := histgen.DefaultConfig(0)
	cfg.Integrity = true
	stmts := testkit.Compile(t, cat, "two-phase", `range of m is Mailbox
range of s is SendMessage
retrieve into Busy (m.Mailbox, N = count(s.Process by m.Mailbox where s.Mailbox = m.Mailbox for each 4ns))
range of b is Busy
range of w is Waiting
retrieve (w.Process, w.Mailbox) where b.Mailbox = w.Mailbox and b.N > 1`, cfg.Span)
	opt, results := plans(t, cat, stmts, true)
	applied := false
	for _, st := range results[1].Steps {
		applied = applied || st.Rule == "alpha-entity-select"
	}
	if !applied {
		t.Fatal("alpha-entity-select did not apply to the second phase")
	}
	spared := 0
	for seed := 0; seed < testkit.Histories(); seed++ {
		cfg.Seed = uint64(seed)
		h := histgen.Random(cat, cfg)
		want, stats := acquireChecked(t, seed, cat, h, stmts, opt)
		if got, all := stats.Packets["SendMessage"], len(h.Table("SendMessage").Rows); got != all {
			t.Fatalf("seed %d: %d SendMessage packets, want all %d (phase one reads every send)", seed, got, all)
		}
		// The first instant each mailbox is over the threshold.
		first := map[string]algebra.Time{}
		for _, r := range want[0].Rows {
			if r.Vals[1].N > 1 {
				if f, ok := first[r.Vals[0].S]; !ok || r.From < f {
					first[r.Vals[0].S] = r.From
				}
			}
		}
		_, end, _ := h.Extent()
		waits := h.Table("Waiting").Rows
		over := 0
		for _, w := range waits {
			last := w.To - 1 // the chronon its packet is decided at
			if w.To == algebra.Forever {
				last = end // reported when the observation ends
			}
			if f, ok := first[w.Vals[1].S]; ok && f <= last && w.From < w.To {
				over++
			}
		}
		if got := stats.Packets["Waiting"]; got != over {
			t.Fatalf("seed %d: %d Waiting packets, want the %d waits whose mailbox was over the threshold by their end (of %d)", seed, got, over, len(waits))
		}
		spared += len(waits) - over
	}
	if spared == 0 {
		t.Errorf("phase two was spared no wait over %d histories: the test shows nothing", testkit.Histories())
	}
}

// TestOnTimeDepth: whether a derived relation is known on time is decided
// through at most maxOnTimeDepth (16) derivations; a deeper chain is
// taken as not known on time (the rule does not apply, the plan stays
// correct), a shallow one is.
func TestOnTimeDepth(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join("..", "testdata", "differential", "spec.sdl"))
	for _, c := range []struct {
		depth int
		want  bool
	}{{3, true}, {16, true}, {17, false}, {40, false}} {
		var b strings.Builder
		b.WriteString("range of p is Process\nretrieve into D0 (P = p.Process) where p.Prio > 1\n")
		for i := 1; i <= c.depth; i++ {
			fmt.Fprintf(&b, "range of d%d is D%d\nretrieve into D%d (P = d%d.P)\n", i, i-1, i, i)
		}
		fmt.Fprintf(&b, "range of x is D%d\nrange of s is SendMessage\nretrieve (s.Mailbox) where x.P = s.Process\n", c.depth)
		stmts := testkit.Compile(t, cat, "chain", b.String(), 0)
		_, results := plans(t, cat, stmts[len(stmts)-1:], true)
		applied := false
		for _, st := range results[0].Steps {
			applied = applied || st.Rule == "alpha-entity-select"
		}
		if applied != c.want {
			t.Errorf("a chain of %d derivations: alpha-entity-select applied %v, want %v", c.depth, applied, c.want)
		}
	}
}
