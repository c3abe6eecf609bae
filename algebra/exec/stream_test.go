package exec_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// probe remembers the latest input time the driver has delivered.
type probe struct{ now algebra.Time }

func (p *probe) Push(e stream.Elem)     { p.now = max(p.now, e.T) }
func (p *probe) Advance(t algebra.Time) {}

// arrival records, for each result element, the input time at which it came
// out of the network.
type arrival struct {
	e   stream.Elem
	now algebra.Time
}

// runProbed runs one retrieve over h and reports when each result element
// left the network, measured in input time.
func runProbed(t *testing.T, h *algebra.History, query string) ([]arrival, *exec.Network) {
	t.Helper()
	stmts := testkit.Compile(t, h.Catalog, "q", query, 0)
	plans := []plan.Node{plan.Translate(stmts[0])}
	net, err := exec.Build(h.Catalog, stmts, plans, exec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pr := &probe{now: algebra.Beginning}
	for _, tee := range net.Sources {
		tee.Add(pr)
	}
	var got []arrival
	net.Stmts[0].Result.OnElem = func(e stream.Elem) { got = append(got, arrival{e, pr.now}) }
	if err := net.RunHistory(h); err != nil {
		t.Fatal(err)
	}
	return got, net
}

func paperCatalog(t *testing.T) *algebra.Catalog {
	return testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/tquel/os.sdl"))
}

func proc(cat *algebra.Catalog, name, state string) []algebra.Value {
	st := cat.Lookup("Process").Attrs[1].Type.Enum
	v, _ := st.Value(state)
	return []algebra.Value{algebra.Entity(name), v}
}

// fill adds a send and a short process state at every chronon of [from,
// to), for another process, so the driver's time moves one chronon at a
// time through the relations the queries read.
func fill(h *algebra.History, from, to algebra.Time) {
	cat := h.Catalog
	for at := from; at < to; at++ {
		h.Table("SendMessage").AddEvent([]algebra.Value{algebra.Entity("Px"), algebra.Entity("Mx")}, at)
		h.Table("Process").Add(proc(cat, "Px", "Done"), at, at+1)
	}
}

// TestStreamingDefaultJoin: with the default clauses a result begins when
// its last tuple arrives and is released at once, not at the end of input.
func TestStreamingDefaultJoin(t *testing.T) {
	cat := paperCatalog(t)
	h := algebra.NewHistory(cat)
	h.Table("Process").Add(proc(cat, "P1", "Running"), 1, algebra.Forever)
	h.Table("RunningOn").Add([]algebra.Value{algebra.Entity("P1"), algebra.Entity("A")}, 5, 20)
	got, _ := runProbed(t, h, `range of p is Process range of r is RunningOn
retrieve (p.Process, r.Processor) where p.Process = r.Process`)
	if len(got) != 2 || got[0].e.Kind != stream.Begin || got[0].e.T != 5 || got[1].e.Kind != stream.End || got[1].e.T != 20 {
		t.Fatalf("got %+v", got)
	}
	if got[0].now > 6 || got[1].now > 21 {
		t.Errorf("results left late: Begin at input time %d, End at %d", got[0].now, got[1].now)
	}
}

// TestStreamingHorizonDecides: `p overlap "5"` for an interval open since 1
// is decided once time passes 5, long before the interval ends.
func TestStreamingHorizonDecides(t *testing.T) {
	cat := paperCatalog(t)
	h := algebra.NewHistory(cat)
	h.Table("Process").Add(proc(cat, "P1", "Running"), 1, algebra.Forever)
	fill(h, 0, 100)
	got, _ := runProbed(t, h, `range of p is Process retrieve (p.Process) where p.Process = "P1" when p overlap "5"`)
	if len(got) != 1 || got[0].e.Kind != stream.Begin || got[0].e.T != 1 { // open: no End at forever
		t.Fatalf("got %+v", got)
	}
	if got[0].now > 7 {
		t.Errorf("Begin at 1 left at input time %d; the horizon decides it at 6", got[0].now)
	}
}

// TestStreamingHeldUntilEnd: `valid at end of w` is held until w's End, then
// released at once.
func TestStreamingHeldUntilEnd(t *testing.T) {
	cat := paperCatalog(t)
	h := algebra.NewHistory(cat)
	h.Table("Waiting").Add([]algebra.Value{algebra.Entity("P2"), algebra.Entity("M7")}, 10, 40)
	h.Table("SendMessage").AddEvent([]algebra.Value{algebra.Entity("P1"), algebra.Entity("M7")}, 30)
	fill(h, 0, 100)
	got, _ := runProbed(t, h, `range of S is SendMessage range of W is Waiting
retrieve (Process = W.Process) valid at end of W where S.Mailbox = W.Mailbox and S.Process = "P1" when S precede end of W`)
	if len(got) != 1 || got[0].e.Kind != stream.Event || got[0].e.T != 40 {
		t.Fatalf("got %+v", got)
	}
	if got[0].now > 41 {
		t.Errorf("result at 40 left at input time %d", got[0].now)
	}
}

// TestStateBounded: a default join over a long history of short intervals
// holds a bounded number of tuples, not one per tuple seen.
func TestStateBounded(t *testing.T) {
	cat := paperCatalog(t)
	peak := func(n int) int {
		h := algebra.NewHistory(cat)
		for i := 0; i < n; i++ {
			at := algebra.Time(i * 10)
			p := "P" + string(rune('1'+i%5))
			h.Table("Process").Add(proc(cat, p, "Running"), at, at+7)
			h.Table("RunningOn").Add([]algebra.Value{algebra.Entity(p), algebra.Entity("A")}, at+2, at+9)
		}
		_, net := runProbed(t, h, `range of p is Process range of r is RunningOn
retrieve (p.Process, r.Processor) where p.Process = r.Process`)
		return net.PeakHeld()
	}
	small, large := peak(1000), peak(20000)
	if large > 2*small+50 || large > 400 {
		t.Errorf("peak state grows with history length: %d tuples for 1k, %d for 20k", small, large)
	}
	t.Logf("peak held: %d (1k intervals), %d (20k intervals)", small, large)
}
