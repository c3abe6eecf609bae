package exec_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
)

// advances counts the watermarks a stream receives.
type advances struct{ n int }

func (a *advances) Push(stream.Elem)     {}
func (a *advances) Advance(algebra.Time) { a.n++ }

// The live driver steps the instants a watermark carries and advances
// the network once per watermark, not once per instant: 1,000 packets
// at 1,000 instants under one watermark make one advance of the α's
// output (1,000 before), with the results of stepping them one
// watermark each.
func TestLiveAdvancesOncePerWatermark(t *testing.T) {
	cat := paperCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: `range of s is SendMessage retrieve (s.Process, s.Mailbox) where s.Process = "P1"`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	run := func(every bool) (string, int) {
		t.Helper()
		rw, err := prog.Rewritten(false)
		if err != nil {
			t.Fatal(err)
		}
		plans := []plan.Node{rw[0].Final}
		net, err := exec.Build(cat, prog.Stmts, plans, prog.ExecOptions())
		if err != nil {
			t.Fatal(err)
		}
		if len(net.Alphas) != 1 {
			t.Fatalf("%d α operators, want 1", len(net.Alphas))
		}
		adv := &advances{}
		net.Alphas[0].Output().Add(adv)
		live := net.Live(0)
		for i := range n {
			p := fmt.Sprintf("P%d", 1+i%2)
			if err := live.Packet("SendMessage", stream.PacketEvent, 0, 0, []algebra.Value{algebra.Entity(p), algebra.Entity("M1")}, algebra.Time(10+i)); err != nil {
				t.Fatal(err)
			}
			if every {
				if err := live.Advance(algebra.Time(10 + i)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := live.Advance(10 + n); err != nil {
			t.Fatal(err)
		}
		k := adv.n
		if _, err := live.Finish(10 + n); err != nil {
			t.Fatal(err)
		}
		rows := net.Stmts[0].Result.Table().Rows
		if len(rows) != n/2 {
			t.Errorf("%d rows, want P1's %d events", len(rows), n/2)
		}
		return fmt.Sprint(rows), k
	}
	each, kEach := run(true)
	once, kOnce := run(false)
	if each != once {
		t.Errorf("one watermark for all:\n%s\none watermark each:\n%s", once, each)
	}
	if kOnce != 1 {
		t.Errorf("%d instants under one watermark advanced α's output %d times, want once", n, kOnce)
	}
	if kEach < n {
		t.Errorf("a watermark per instant advanced α's output %d times, fewer than the %d watermarks", kEach, n)
	}
}

// The αs of one relation that keep the same attributes share one copy of
// each packet's kept values (made once by Live.Packet, not once per α):
// a count of every send (the aggregate's own variable) at each of P1's
// sends (the where clause's), SendMessage read through two αs each
// keeping Process only, is exact at every one of P1's sends.
func TestLiveSharesKeptValues(t *testing.T) {
	cat := paperCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: `range of s is SendMessage retrieve (N = count(s.Process for ever)) where s.Process = "P1"`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := prog.Rewritten(false)
	if err != nil {
		t.Fatal(err)
	}
	net, err := exec.Build(cat, prog.Stmts, []plan.Node{rw[0].Final}, prog.ExecOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(net.Alphas) != 2 || net.Alphas[0].Keep == nil || fmt.Sprint(net.Alphas[0].Keep) != fmt.Sprint(net.Alphas[1].Keep) {
		t.Fatalf("want two αs keeping the same attributes, not all: %d αs", len(net.Alphas))
	}
	const n = 1000
	live := net.Live(0)
	for k, p := range []string{"P1", "P2"} { // traced on initiator: the processes exist
		if err := live.Entity("Process", true, uint64(k), proc(cat, p, "Running"), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		p := fmt.Sprintf("P%d", 1+i%2)
		if err := live.Packet("SendMessage", stream.PacketEvent, 0, 0, []algebra.Value{algebra.Entity(p), algebra.Entity("M1")}, algebra.Time(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := live.Finish(10 + n); err != nil {
		t.Fatal(err)
	}
	rows := net.Stmts[0].Result.Table().Rows
	if len(rows) != n/2 {
		t.Fatalf("%d rows, want one per P1 event: %d", len(rows), n/2)
	}
	for i, r := range rows {
		if r.Vals[0].N != int64(2*i+1) || r.From != algebra.Time(10+2*i) {
			t.Fatalf("row %d is %v from %d, want %d from %d", i, r.Vals, r.From, 2*i+1, 10+2*i)
		}
	}
}

// Values a driver converted only where α keeps them (the others zero:
// remote converts what Network.Kept says) are taken as they are: α's
// record holds the packet's own values, not a copy; values that are not
// (a tap's whole tuples) are copied with the others zeroed, as before.
// The records are the same either way.
func TestKeptValuesShared(t *testing.T) {
	cat := paperCatalog(t)
	net := buildNet(t, cat, `range of s is SendMessage retrieve (s.Process) where s.Process = "P1"`, false)
	if len(net.Alphas) != 1 || fmt.Sprint(net.Alphas[0].Keep) != "[0]" {
		t.Fatalf("want one α keeping Process only")
	}
	if k := net.Kept(); fmt.Sprint(k) != "map[SendMessage:[0]]" {
		t.Errorf("Kept() = %v, want SendMessage's Process", k)
	}
	var recs []*stream.Rec
	net.Alphas[0].Output().Add(recorder(func(e stream.Elem) { recs = append(recs, e.Rec) }))
	live := net.Live(0)
	if err := live.Entity("Process", true, 1, proc(cat, "P1", "Running"), 0); err != nil {
		t.Fatal(err)
	}
	kept := []algebra.Value{algebra.Entity("P1"), {}}
	whole := []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")}
	for i, vals := range [][]algebra.Value{kept, whole} {
		if err := live.Packet("SendMessage", stream.PacketEvent, 0, 0, vals, algebra.Time(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := live.Finish(20); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if &recs[0].Vals[0] != &kept[0] {
		t.Errorf("values zero outside what α keeps were copied")
	}
	if &recs[1].Vals[0] == &whole[0] || recs[1].Vals[1] != (algebra.Value{}) {
		t.Errorf("whole values were not copied with the others zeroed: %v", recs[1].Vals)
	}
	if fmt.Sprint(recs[0].Vals) != fmt.Sprint(recs[1].Vals) {
		t.Errorf("records differ: %v, %v", recs[0].Vals, recs[1].Vals)
	}
}

// recorder is a receiver calling f on each element.
type recorder func(stream.Elem)

func (r recorder) Push(e stream.Elem)   { r(e) }
func (r recorder) Advance(algebra.Time) {}

// With ShareAlphas, plan αs that are the same — a count whose own where
// clause is its retrieve's, over the same variable and attributes — are
// one α operator
// standing for both (Plans), and the results over random sends are
// those of the network with an α each.
func TestShareAlphas(t *testing.T) {
	cat := paperCatalog(t)
	rng := rand.New(rand.NewPCG(16, 5))
	type send struct {
		p, m string
		t    algebra.Time
	}
	var sends []send
	for i, at := 0, algebra.Time(10); i < 2000; i++ {
		at += algebra.Time(rng.IntN(3)) // several at one instant, too
		sends = append(sends, send{fmt.Sprintf("P%d", 1+rng.IntN(2)), fmt.Sprintf("M%d", 1+rng.IntN(3)), at})
	}
	run := func(share bool) (string, int, int) {
		net := buildNet(t, cat, `range of s is SendMessage retrieve (s.Mailbox, N = count(s.Mailbox for ever where s.Process = "P1")) where s.Process = "P1"`, share)
		live := net.Live(0)
		for k, p := range []string{"P1", "P2"} {
			if err := live.Entity("Process", true, uint64(k), proc(cat, p, "Running"), 0); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range sends {
			if err := live.Packet("SendMessage", stream.PacketEvent, 0, 0, []algebra.Value{algebra.Entity(s.p), algebra.Entity(s.m)}, s.t); err != nil {
				t.Fatal(err)
			}
			if i%97 == 0 {
				if err := live.Advance(s.t); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := live.Finish(sends[len(sends)-1].t + 1); err != nil {
			t.Fatal(err)
		}
		rows := net.Stmts[0].Result.Table().Rows
		return fmt.Sprint(rows), len(net.Alphas), len(net.Alphas[0].Plans)
	}
	shared, nShared, plans := run(true)
	apart, nApart, _ := run(false)
	if nShared != 1 || plans != 2 || nApart != 2 {
		t.Errorf("shared: %d αs standing for %d plan αs; apart: %d αs; want 1, 2, 2", nShared, plans, nApart)
	}
	if shared != apart {
		t.Errorf("results differ:\nshared: %.300s\napart:  %.300s", shared, apart)
	}
	if shared == "[]" {
		t.Errorf("no results")
	}
}

// buildNet builds the network of one query's rewritten plan (its αs
// shared when share: Options.ShareAlphas).
func buildNet(t *testing.T, cat *algebra.Catalog, text string, share bool) *exec.Network {
	t.Helper()
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := prog.Rewritten(false)
	if err != nil {
		t.Fatal(err)
	}
	eo := prog.ExecOptions()
	eo.ShareAlphas = share
	net, err := exec.Build(cat, prog.Stmts, []plan.Node{rw[0].Final}, eo)
	if err != nil {
		t.Fatal(err)
	}
	return net
}
