package plans

import (
	"strings"
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

// A fragment is joinable while it has said nothing a joiner would miss:
// a joiner is given its start and the tuples open; once a tuple ended it
// is not; a session over its output bound is dropped alone, told so; the
// last to leave stops the fragment; the registry counts it until Stop.
func TestSharedFragment(t *testing.T) {
	g := NewRegistry(4)
	stopped := false
	sp := &shared{g: g, key: "k", cancel: func() { stopped = true }, open: map[uint64]wire.Packet{}}
	g.byKey["k"], g.runs = sp, 1
	out := func() *Out { return &Out{done: make(chan struct{}), max: g.queue} }
	a, b, c := out(), out(), out()
	if !sp.join(a) {
		t.Fatal("a fresh fragment is not joinable")
	}
	sp.Put([]wire.Packet{{Kind: wire.PResultStart, TS: 10}, {Kind: wire.PResultBegin, Tuple: 1, TS: 11}}, 12)
	if !sp.join(b) {
		t.Fatal("a fragment that said only its start and a begin is not joinable")
	}
	if bb, _ := b.next(); bb == nil || len(bb.Packets) != 2 || bb.Packets[0].Kind != wire.PResultStart || bb.Packets[1].Tuple != 1 {
		t.Fatalf("the joiner was given %v, want the start and the open tuple", bb)
	}
	sp.Put([]wire.Packet{{Kind: wire.PResultEnd, Tuple: 1, TS: 13}}, 14)
	if sp.join(c) {
		t.Fatal("joined a fragment that ended a tuple")
	}
	// a reads; b does not: past its bound (4 packets) it is dropped alone.
	for bb, _ := a.next(); bb != nil; bb, _ = a.next() {
	}
	ev := wire.Packet{Kind: wire.PResultEvent}
	if !sp.Put([]wire.Packet{ev, ev, ev, ev}, 15) {
		t.Fatal("the fragment stopped while a reader is left")
	}
	var last *wire.Batch
	for bb, _ := b.next(); bb != nil; bb, _ = b.next() {
		last = bb
	}
	if last == nil || last.Packets[0].Kind != wire.PResultLost || !strings.Contains(last.Packets[0].Vals[0].S, "output bound") {
		t.Fatalf("the slow session's last batch %v, want its loss named", last)
	}
	if len(sp.subs) != 1 || sp.subs[0] != a {
		t.Fatalf("%d sessions left, want a alone", len(sp.subs))
	}
	a.Finish()
	if !stopped || !sp.closing {
		t.Fatal("the last session left, the fragment runs on")
	}
	sp.Stop(16, "")
	if g.Runs() != 0 || g.byKey["k"] != nil {
		t.Fatalf("%d fragments counted after the stop", g.Runs())
	}
}
