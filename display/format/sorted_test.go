package format

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// TestSortedSettles: a Sorted writes a row once its end is known and a
// later element shows that no row still to come sorts before it; an open
// row holds back those after it; the whole output is Write's, for each
// format and with two results.
func TestSortedSettles(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "P", Type: algebra.TypeString}}}
	ev := &algebra.Relation{Name: "E", Class: algebra.ClassEvent, Attrs: []algebra.Attr{{Name: "N", Type: algebra.TypeInt}}}
	str := func(s string) []algebra.Value { return []algebra.Value{algebra.Str(s)} }
	for _, kind := range []Kind{CSV, JSONL, Table} {
		var b bytes.Buffer
		s := NewSorted(&b, Options{Kind: kind}, []*algebra.Relation{rel, ev})
		lines := func() int { return strings.Count(b.String(), "\n") }
		a, c, d := new(int), new(int), new(int)
		s.Begin(0, a, str("b"), 1)
		s.Begin(0, c, str("a"), 1) // sorts before b at the same begin
		s.Event(1, []algebra.Value{algebra.Int(7)}, 2)
		if err := s.End(0, a, 3); err != nil {
			t.Fatal(err)
		}
		if lines() != 0 {
			t.Fatalf("%d: a row went out while the row before it (a) is open:\n%s", kind, b.String())
		}
		if err := s.End(0, c, 4); err != nil {
			t.Fatal(err)
		}
		s.Begin(0, d, str("c"), 5) // open until the end
		want := map[Kind]int{CSV: 3, JSONL: 2, Table: 0}[kind]
		if lines() != want {
			t.Fatalf("%d: %d lines out once a and b settled, want %d:\n%s", kind, lines(), want, b.String())
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		r := &algebra.Table{Rel: rel}
		r.Add(str("a"), 1, 4)
		r.Add(str("b"), 1, 3)
		r.Add(str("c"), 5, algebra.Forever)
		e := &algebra.Table{Rel: ev}
		e.AddEvent([]algebra.Value{algebra.Int(7)}, 2)
		whole := write(t, r, Options{Kind: kind}) + "\n" + write(t, e, Options{Kind: kind})
		if b.String() != whole {
			t.Errorf("%d: sorted output\n%s\nwant Write's\n%s", kind, b.String(), whole)
		}
	}
}
