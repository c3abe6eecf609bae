package exec

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestHostCutPerHost: a fleet's result naming its host is cut out of that
// host's gaps only. Host a lost packets in [10, 20): its tuple across the
// gap is cut in two and its event inside it dropped; host b's tuple and
// event over the same times are kept whole. Before any gap is known,
// elements go out at once.
func TestHostCutPerHost(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{
		{Name: "A", Type: algebra.TypeInt}, {Name: algebra.HostAttr, Type: algebra.TypeString}}}
	gaps := map[string][]algebra.Span{}
	col := NewCollector(rel)
	cut := NewHostCut([]string{"S"}, func(r string) []algebra.Span { return gaps[r] }, 1, col)
	rec := func(a int64, host string, from algebra.Time) *stream.Rec {
		return &stream.Rec{Vals: []algebra.Value{algebra.Int(a), algebra.Str(host)}, From: from}
	}
	ta, tb, ea, eb := rec(1, "a", 5), rec(2, "b", 5), rec(3, "a", 12), rec(4, "b", 12)
	cut.Push(stream.Elem{Kind: stream.Begin, T: 5, Rec: ta})
	cut.Push(stream.Elem{Kind: stream.Begin, T: 5, Rec: tb})
	if n := len(col.Table().Rows); n != 2 {
		t.Fatalf("%d rows begun before any gap is known, want both passed at once", n)
	}
	cut.Advance(9)
	gaps["S"] = []algebra.Span{{From: 10, To: 20}}
	gaps[HostPart("S", "a")] = []algebra.Span{{From: 10, To: 20}}
	for _, e := range []stream.Elem{{Kind: stream.Event, T: 12, Rec: ea}, {Kind: stream.Event, T: 12, Rec: eb}} {
		cut.Push(e)
	}
	cut.Advance(29)
	cut.Push(stream.Elem{Kind: stream.End, T: 30, Rec: ta})
	cut.Push(stream.Elem{Kind: stream.End, T: 30, Rec: tb})
	cut.Advance(algebra.Forever)
	got := testkit.Rows(col.Table())
	want := "1,a,5,10\n2,b,5,30\n4,b,12,13\n1,a,20,30\n"
	if got != want {
		t.Errorf("cut:\n%s\nwant:\n%s", got, want)
	}
}
