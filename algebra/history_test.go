package algebra

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestSortRowsPacks: SortRows orders rows by time, values and end, whether
// the rows come shuffled or in order of time with their runs at one time
// unsorted; shuffled rows' values end up in one slab in row order; a table
// in time order keeps its rows' values where they were.
func TestSortRowsPacks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	mk := func(n int, byTime bool) *Table {
		tab := &Table{Rel: &Relation{Class: ClassInterval}}
		for i := 0; i < n; i++ {
			from := Time(r.IntN(20))
			if byTime {
				from = Time(i / 4)
			}
			tab.Add([]Value{Entity("P" + string(rune('0'+r.IntN(10)))), Int(int64(r.IntN(3)))}, from, from+1+Time(r.IntN(5)))
		}
		return tab
	}
	sorted := func(tab *Table) bool {
		for i := 1; i < len(tab.Rows); i++ {
			if LessTuple(&tab.Rows[i], &tab.Rows[i-1]) {
				return false
			}
		}
		return true
	}
	contiguous := func(tab *Table) bool {
		for i := 1; i < len(tab.Rows); i++ {
			prev := tab.Rows[i-1].Vals
			if unsafe.Pointer(&tab.Rows[i].Vals[0]) != unsafe.Add(unsafe.Pointer(&prev[0]), len(prev)*int(unsafe.Sizeof(Value{}))) {
				return false
			}
		}
		return true
	}
	for _, byTime := range []bool{false, true} {
		tab := mk(500, byTime)
		tab.SortRows()
		if !sorted(tab) {
			t.Errorf("byTime %v: not sorted", byTime)
		}
		if !byTime && !contiguous(tab) {
			t.Errorf("values not packed in row order")
		}
		// Sorted already: nothing moves.
		first := &tab.Rows[0].Vals[0]
		tab.SortRows()
		if &tab.Rows[0].Vals[0] != first || !sorted(tab) {
			t.Errorf("byTime %v: a sorted table was repacked", byTime)
		}
	}
}
