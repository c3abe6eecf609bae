package stream_test

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// TestOrder: elements order by time, and at equal times Ends and Wholes
// come before Begins, Events and Lates; Less and Compare agree.
func TestOrder(t *testing.T) {
	at := func(k stream.Kind, tm algebra.Time) stream.Elem { return stream.Elem{Kind: k, T: tm} }
	ordered := []stream.Elem{at(stream.Begin, 1), at(stream.End, 2), at(stream.Whole, 2), at(stream.Begin, 2), at(stream.Event, 2), at(stream.Late, 2), at(stream.End, 3)}
	for i, a := range ordered {
		for j, b := range ordered {
			c := stream.Compare(a, b)
			if stream.Less(a, b) != (c < 0) {
				t.Errorf("%v@%d vs %v@%d: Less %v, Compare %d", a.Kind, a.T, b.Kind, b.T, stream.Less(a, b), c)
			}
			samePhase := a.T == b.T && a.Phase() == b.Phase()
			if !samePhase && (i < j) != (c < 0) {
				t.Errorf("%v@%d before %v@%d expected (i=%d j=%d), Compare %d", a.Kind, a.T, b.Kind, b.T, i, j, c)
			}
		}
	}
}

// TestTableElems: a table's tuples as elements, an interval's Rec shared by
// its Begin and End, no End for an open tuple, Ends first at equal times.
func TestTableElems(t *testing.T) {
	rel := &algebra.Relation{Name: "R"}
	tab := &algebra.Table{Rel: rel, Rows: []algebra.Tuple{
		{From: 5, To: 10},
		{From: 10, To: algebra.Forever},
		{From: 1, To: 5},
	}}
	got := stream.TableElems(tab)
	want := []struct {
		k  stream.Kind
		tm algebra.Time
	}{{stream.Begin, 1}, {stream.End, 5}, {stream.Begin, 5}, {stream.End, 10}, {stream.Begin, 10}}
	if len(got) != len(want) {
		t.Fatalf("got %d elements, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Kind != w.k || got[i].T != w.tm {
			t.Errorf("element %d: %v@%d, want %v@%d", i, got[i].Kind, got[i].T, w.k, w.tm)
		}
	}
	if got[0].Rec != got[1].Rec || got[2].Rec != got[3].Rec {
		t.Error("an interval's Begin and End must carry one Rec")
	}
}
