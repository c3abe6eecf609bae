package remote

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// TestHostMerge: hostMerge lets a statement's element out only once
// every other running host's frontier of it is past it and its own
// host's watermark is; a host quiet in a statement holds it back until
// it ends, one that never starts holds nothing back; a host lost ends
// its open tuples just after its loss (or its last element, for a loss
// dated earlier) and drops what it held past it.
func TestHostMerge(t *testing.T) {
	var out []string
	opts := LiveOptions{OnElem: func(s int, e stream.Elem) {
		out = append(out, fmt.Sprintf("%d:%v@%d", s, e.Kind, e.T))
	}}
	took := func() string { s := strings.Join(out, " "); out = nil; return s }
	rec := func(from algebra.Time) *stream.Rec { return &stream.Rec{From: from} }
	begin := func(r *stream.Rec) stream.Elem { return stream.Elem{Kind: stream.Begin, T: r.From, Rec: r} }
	ev := func(t algebra.Time) stream.Elem { return stream.Elem{Kind: stream.Event, T: t, Rec: rec(t)} }

	m := newHostMerge(3, 2, opts)
	m.start(0, 10)
	m.add(0, 0, ev(12))
	m.advance(0, 20)
	if g := took(); g != "" {
		t.Fatalf("out before every host started or ended: %q", g)
	}
	m.start(1, 10)
	m.settled = false
	m.finish(2, nil) // never started: holds nothing back
	m.settled = true
	m.release()
	if g := took(); g != "" {
		t.Fatalf("out before host 1 passed 12 in statement 0: %q", g)
	}
	r1 := rec(15)
	m.add(1, 0, begin(r1))
	m.add(1, 1, ev(11))
	m.advance(1, 16)
	// Host 0 may still send statement 0 before 15, statement 1 before 11.
	if g, w := took(), "0:Event@12"; g != w {
		t.Fatalf("out %q, want %q", g, w)
	}
	m.add(0, 1, ev(14))
	m.add(0, 0, ev(18))
	m.advance(0, 30)
	// Host 1's frontiers are 15 and 11: host 0's 18 and 14 wait.
	if g, w := took(), "0:Begin@15 1:Event@11"; g != w {
		t.Fatalf("out %q, want %q", g, w)
	}
	// Host 1 is lost at 17 (its watermark): its open tuple ends at 18;
	// host 0's 14 goes out (host 1 is past it), its 18 after host 1
	// ends; host 1's 16 waits for host 0 (at 14 in statement 1).
	m.add(1, 1, ev(16))
	m.advance(1, 17)
	if cut := m.finish(1, &SessionLostError{Since: 17}); cut != 18 {
		t.Fatalf("cut at %d, want 18", cut)
	}
	if g, w := took(), "1:Event@14 0:Event@18 0:End@18"; g != w {
		t.Fatalf("out %q, want %q", g, w)
	}
	// A host whose loss is dated before what it sent (a fragment that
	// stopped: dated at its start) is cut just after its last element.
	m.add(0, 0, begin(rec(25)))
	if cut := m.finish(0, &SessionLostError{Since: 10}); cut != 26 {
		t.Fatalf("cut at %d, want 26", cut)
	}
	if g, w := took(), "0:Begin@25 0:End@26 1:Event@16"; g != w {
		t.Fatalf("out %q, want %q", g, w)
	}
}
