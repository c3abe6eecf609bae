package exec

import (
	"container/heap"
	"runtime"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"math/rand/v2"
	"testing"

	"github.com/tqmon/tqmon/algebra/stream"
)

// TestRecMapAgreesWithMap: random puts, takes and dels on a recMap and a
// Go map agree at every step, including while the table grows and while
// runs of probed slots are shifted back by deletions (a small key pool
// makes long runs).
func TestRecMapAgreesWithMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, pool := range []int{3, 40, 5000} {
		recs := make([]stream.Rec, pool)
		var m recMap[int]
		want := map[*stream.Rec]int{}
		for step := range 200000 {
			k := &recs[r.IntN(pool)]
			switch r.IntN(4) {
			case 0, 1:
				m.put(k, step)
				want[k] = step
			case 2:
				v, ok := m.take(k)
				w, wok := want[k]
				if v != w || ok != wok {
					t.Fatalf("pool %d step %d: take = %d,%v, want %d,%v", pool, step, v, ok, w, wok)
				}
				delete(want, k)
			case 3:
				m.del(k)
				delete(want, k)
			}
			if m.len() != len(want) {
				t.Fatalf("pool %d step %d: len %d, want %d", pool, step, m.len(), len(want))
			}
		}
		for k, w := range want {
			if v, ok := m.get(k); !ok || v != w {
				t.Fatalf("pool %d: get = %d,%v, want %d", pool, v, ok, w)
			}
		}
		for m.len() > 0 {
			k, v, _ := m.any()
			if want[k] != v {
				t.Fatalf("pool %d: any gave %d, want %d", pool, v, want[k])
			}
			delete(want, k)
			m.del(k)
		}
		if len(want) != 0 {
			t.Fatalf("pool %d: any missed %d keys", pool, len(want))
		}
		m.reset()
		if _, ok := m.get(&recs[0]); ok || m.len() != 0 {
			t.Fatalf("pool %d: reset left entries", pool)
		}
	}
}

// TestSortByTime: sortByTime orders by time and keeps the order of
// elements at equal times, over spans needing one to eight bytes, negative
// times and the extremes.
func TestSortByTime(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	recs := make([]stream.Rec, 5000)
	for _, span := range []int64{1, 3, 300, 1 << 20, 1 << 40, -1} {
		for _, n := range []int{0, 1, 255, 256, 5000} {
			elems := make([]stream.Elem, n)
			for i := range elems {
				var tm int64
				switch {
				case span < 0 && i%3 == 0:
					tm = algebra.Forever
				case span < 0 && i%3 == 1:
					tm = algebra.Beginning
				case span < 0:
					tm = int64(r.Uint64())
				default:
					tm = r.Int64N(span) - span/2
				}
				elems[i] = stream.Elem{T: tm, Rec: &recs[i]}
			}
			want := slices.Clone(elems)
			slices.SortStableFunc(want, byTime)
			sortByTime(elems, nil)
			if !slices.Equal(elems, want) {
				t.Fatalf("span %d, %d elements: not sorted stably", span, n)
			}
		}
	}
}

// TestScreenRowsPacks: screenRows keeps exactly the rows skip does not
// reject, packs their values in order while they are at most half the
// read (across blocks), and packs nothing when more are kept — the copy's
// memory is bounded by half the table's values.
func TestScreenRowsPacks(t *testing.T) {
	rel := &algebra.Relation{Attrs: []algebra.Attr{{Name: "A"}, {Name: "B"}}}
	tab := &algebra.Table{Rel: rel}
	for i := range 5000 {
		tab.Add([]algebra.Value{algebra.Int(int64(i)), algebra.Str("x")}, algebra.Time(i), algebra.Time(i+1))
	}
	for _, every := range []int64{1, 2, 3, 7} {
		skip := func(v []algebra.Value) bool { return v[0].N%every != 0 }
		keep, packed := screenRows(tab, skip)
		if len(keep) != (5000+int(every)-1)/int(every) {
			t.Fatalf("every %d: kept %d", every, len(keep))
		}
		for k, i := range keep {
			if int64(i)%every != 0 {
				t.Fatalf("every %d: kept row %d", every, i)
			}
			if packed != nil && !slices.Equal(packedRow(packed, k), tab.Rows[i].Vals) {
				t.Fatalf("every %d: packed row %d differs", every, k)
			}
		}
		if wantPacked := every > 1; (packed != nil) != wantPacked {
			t.Fatalf("every %d: packed %v, want %v", every, packed != nil, wantPacked)
		}
	}
	// A dense screen gives up early: what it copied is at most packSlack
	// rows more than half of those read.
	for i := 5000; i < 50000; i++ {
		tab.Add([]algebra.Value{algebra.Int(int64(i)), algebra.Str("x")}, algebra.Time(i), algebra.Time(i+1))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	keep, packed := screenRows(tab, func([]algebra.Value) bool { return false })
	runtime.ReadMemStats(&after)
	// The keep list (≈ 40 bytes a row as it grows by 1.25) and one block;
	// half the rows packed would be 32 bytes a row more.
	if n := after.TotalAlloc - before.TotalAlloc; packed != nil || len(keep) != 50000 || n > 56*50000 {
		t.Errorf("a screen keeping every row allocated %d bytes: it packed", n)
	}
}

// TestHashMapAgreesWithMap: random puts, refs and dels on a hashMap and a
// Go map agree at every step, with keys that share their top bits (long
// probe runs) and key 0.
func TestHashMapAgreesWithMap(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, pool := range []int{2, 50, 5000} {
		keys := make([]uint64, pool)
		for i := range keys {
			keys[i] = r.Uint64() >> 60 << 60 // few distinct homes
			keys[i] |= uint64(i)
		}
		keys[0] = 0
		var m hashMap[int]
		want := map[uint64]int{}
		for step := range 200000 {
			k := keys[r.IntN(pool)]
			switch r.IntN(4) {
			case 0:
				m.put(k, step)
				want[k] = step
			case 1:
				*m.ref(k) += 1
				want[k] += 1
			case 2, 3:
				m.del(k)
				delete(want, k)
			}
			if step%9973 == 0 { // now and then, emptied at once
				m.reset()
				clear(want)
			}
			if m.len() != len(want) || m.get(k) != want[k] {
				t.Fatalf("pool %d step %d: len %d get %d, want %d %d", pool, step, m.len(), m.get(k), len(want), want[k])
			}
		}
		for k, w := range want {
			if m.get(k) != w {
				t.Fatalf("pool %d: get(%x) = %d, want %d", pool, k, m.get(k), w)
			}
		}
	}
}

// TestHashMapResetBounded: reset empties a map in time proportional to
// the keys it held — a table grown for many keys is not cleared slot by
// slot at every later reset of a few (eventSet resets per instant).
func TestHashMapResetBounded(t *testing.T) {
	var m hashMap[int]
	for k := range uint64(100000) {
		m.put(k*0x9e3779b97f4a7c15, 1)
	}
	m.reset()
	if m.len() != 0 || m.get(0x9e3779b97f4a7c15) != 0 {
		t.Fatalf("after reset: len %d", m.len())
	}
	for round := range 100 {
		for k := range uint64(9) {
			m.put(k*0x9e3779b97f4a7c15+uint64(round), int(k)+1)
		}
		if round > 0 && len(m.slots) > 64 { // the first reset of a few dropped the big table
			t.Fatalf("round %d: %d slots kept for 9 keys", round, len(m.slots))
		}
		m.reset()
	}
}

// stdRemovals is container/heap's view of a removal slice, the order the
// typed removalHeap must keep.
type stdRemovals []removal

func (h stdRemovals) Len() int           { return len(h) }
func (h stdRemovals) Less(i, j int) bool { return h[i].t < h[j].t }
func (h stdRemovals) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *stdRemovals) Push(x any)        { *h = append(*h, x.(removal)) }
func (h *stdRemovals) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TestRemovalHeapMatchesContainerHeap: the typed heap pops removals in
// exactly container/heap's order, ties (equal times, told apart by their
// values) included, under random interleavings of pushes and pops, and
// allocates nothing once grown.
func TestRemovalHeapMatchesContainerHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	var typed removalHeap
	var std stdRemovals
	for step := range 100000 {
		if r.IntN(3) > 0 || len(typed) == 0 {
			x := removal{t: algebra.Time(r.IntN(50)), v: algebra.Int(int64(step))}
			typed.push(x)
			heap.Push(&std, x)
			continue
		}
		got, want := typed.pop(), heap.Pop(&std).(removal)
		if got != want {
			t.Fatalf("step %d: popped %v, want %v", step, got, want)
		}
	}
	typed = typed[:0]
	if n := testing.AllocsPerRun(100, func() {
		typed.push(removal{t: 1})
		typed.pop()
	}); n != 0 {
		t.Errorf("push and pop allocate %v times", n)
	}
}
