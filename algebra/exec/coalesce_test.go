package exec_test

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Coalesce keeps one event per value at each time however many come:
// the first few are compared one by one, the rest through an index built
// when they outgrow the scan — 40 events at one time over 13 values, each
// value repeated, in an order that puts repeats on both sides of the
// switch, leave 13; the next time starts afresh.
func TestCoalesceEventsAtOneTime(t *testing.T) {
	rel := &algebra.Relation{Class: algebra.ClassEvent, Attrs: []algebra.Attr{{Name: "N"}}}
	col := exec.NewCollector(rel)
	c := exec.NewCoalesce(col)
	for _, at := range []algebra.Time{5, 6} {
		for i := range 40 {
			v := []algebra.Value{algebra.Int(int64(i * 7 % 13))}
			c.Push(stream.Elem{Kind: stream.Event, T: at, Rec: &stream.Rec{Vals: v, From: at}})
		}
	}
	c.Advance(algebra.Forever)
	rows := col.Table().Rows
	if len(rows) != 26 {
		t.Fatalf("%d events, want 13 at each of two times: %v", len(rows), rows)
	}
	seen := map[[2]int64]bool{}
	for _, r := range rows {
		k := [2]int64{int64(r.From), r.Vals[0].N}
		if seen[k] {
			t.Errorf("event %d at %d twice", r.Vals[0].N, r.From)
		}
		seen[k] = true
	}
}
