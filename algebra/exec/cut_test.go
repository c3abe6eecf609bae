package exec

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestCutAtGaps: a result stream is cut out of the gaps of the relations
// it reads — a tuple across a gap ends at its start and resumes at its
// end, one beginning inside resumes at its end, one inside it goes, an
// event inside goes — and gaps that overlap, or of other relations, are
// handled as their union and not at all; a gap that reaches the end of
// the stream resumes nothing.
func TestCutAtGaps(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "A", Type: algebra.TypeInt}}}
	gaps := map[string][]algebra.Span{
		"S": {{From: 10, To: 20}, {From: 15, To: 25}},
		"T": {{From: 40, To: 45}, {From: 70, To: 80}},
		"U": {{From: 0, To: 100}}, // not read
	}
	col := NewCollector(rel)
	cut := NewCut([]string{"S", "T"}, func(r string) []algebra.Span { return gaps[r] }, col)
	rec := func(a int64, from algebra.Time) *stream.Rec {
		return &stream.Rec{Vals: []algebra.Value{algebra.Int(a)}, From: from}
	}
	across, inside, begins, ev := rec(1, 5), rec(2, 12), rec(3, 22), rec(4, 30)
	evIn, late := rec(5, 42), rec(6, 62)
	steps := []struct {
		elems []stream.Elem
		adv   algebra.Time
	}{
		{[]stream.Elem{{Kind: stream.Begin, T: 5, Rec: across}}, 9},
		{[]stream.Elem{{Kind: stream.Begin, T: 12, Rec: inside}, {Kind: stream.End, T: 14, Rec: inside}}, 19},
		{[]stream.Elem{{Kind: stream.Begin, T: 22, Rec: begins}}, 29},
		{[]stream.Elem{{Kind: stream.Event, T: 30, Rec: ev}, {Kind: stream.Event, T: 42, Rec: evIn}}, 50},
		{[]stream.Elem{{Kind: stream.End, T: 60, Rec: across}}, 61},
		{[]stream.Elem{{Kind: stream.Begin, T: 62, Rec: late}}, 80},
		{nil, algebra.Forever},
	}
	for _, s := range steps {
		for _, e := range s.elems {
			cut.Push(e)
		}
		cut.Advance(s.adv)
	}
	got := testkit.Rows(col.Table())
	want := "1,5,10\n1,25,40\n3,25,40\n4,30,31\n1,45,60\n3,45,70\n6,62,70\n"
	if got != want {
		t.Errorf("cut:\n%s\nwant:\n%s", got, want)
	}
}

// BenchmarkCut measures what the cut costs a result stream when there is
// no gap (a live run's usual case) against the stream alone: -bench
// 'Cut$' gives both, same run.
func BenchmarkCut(b *testing.B) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "A", Type: algebra.TypeInt}}}
	none := func(string) []algebra.Span { return nil }
	for _, cut := range []bool{false, true} {
		name := "alone"
		if cut {
			name = "cut"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				col := NewCollector(rel)
				col.Discard = true
				var r stream.Receiver = col
				if cut {
					r = NewCut([]string{"S", "T"}, none, col)
				}
				for t := algebra.Time(0); t < 1000; t++ {
					rec := &stream.Rec{Vals: []algebra.Value{algebra.Int(t)}, From: t}
					r.Push(stream.Elem{Kind: stream.Begin, T: t, Rec: rec})
					r.Push(stream.Elem{Kind: stream.End, T: t + 1, Rec: rec})
					r.Advance(t + 1)
				}
				r.Advance(algebra.Forever)
			}
		})
	}
}

// TestCutHoldsOpenOnly: a long stream without gaps leaves the cut holding
// about the tuples still open (its bound: twice those, or 64), not every
// tuple it saw.
func TestCutHoldsOpenOnly(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "A", Type: algebra.TypeInt}}}
	col := NewCollector(rel)
	col.Discard = true
	c := NewCut([]string{"S"}, func(string) []algebra.Span { return nil }, col)
	keep := &stream.Rec{Vals: []algebra.Value{algebra.Int(-1)}, From: 0}
	c.Push(stream.Elem{Kind: stream.Begin, T: 0, Rec: keep})
	for i := algebra.Time(1); i < 100000; i++ {
		rec := &stream.Rec{Vals: []algebra.Value{algebra.Int(i)}, From: i}
		c.Push(stream.Elem{Kind: stream.Begin, T: i, Rec: rec})
		c.Push(stream.Elem{Kind: stream.End, T: i + 1, Rec: rec})
		c.Advance(i)
		if len(c.order) > max(64, 2*len(c.open)+1) || len(c.open) > 2 {
			t.Fatalf("after %d tuples the cut holds %d (%d open)", i, len(c.order), len(c.open))
		}
	}
}
