package exec_test

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
)

// TestObservedDropsForever: an observation's result has no event at
// forever and no tuple beginning there (the end of the run is not the
// end of time); a tuple still open stays open. Without Observed, the
// language's answer keeps them.
func TestObservedDropsForever(t *testing.T) {
	rel := &algebra.Relation{Name: "R", Class: algebra.ClassEvent, Attrs: []algebra.Attr{{Name: "P", Type: algebra.TypeString}}}
	iv := &algebra.Relation{Name: "I", Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "P", Type: algebra.TypeString}}}
	rec := func(s string, from algebra.Time) *stream.Rec {
		return &stream.Rec{Vals: []algebra.Value{algebra.Str(s)}, From: from}
	}
	for _, observed := range []bool{true, false} {
		ev := exec.NewCollector(rel)
		ev.Observed = observed
		var seen int
		ev.OnElem = func(stream.Elem) { seen++ }
		ev.Push(stream.Elem{Kind: stream.Event, T: 5, Rec: rec("a", 5)})
		ev.Push(stream.Elem{Kind: stream.Event, T: algebra.Forever, Rec: rec("b", algebra.Forever)})
		in := exec.NewCollector(iv)
		in.Observed = observed
		in.Push(stream.Elem{Kind: stream.Begin, T: 3, Rec: rec("c", 3)})
		in.Push(stream.Elem{Kind: stream.Begin, T: algebra.Forever, Rec: rec("d", algebra.Forever)})
		want := 2
		if observed {
			want = 1
		}
		if n := len(ev.Table().Rows); n != want || seen != want {
			t.Errorf("observed %v: %d events kept, %d seen, want %d", observed, n, seen, want)
		}
		rows := in.Table().Rows
		if len(rows) != want || rows[0].To != algebra.Forever {
			t.Errorf("observed %v: intervals %v, want %d, the first open", observed, rows, want)
		}
	}
}
