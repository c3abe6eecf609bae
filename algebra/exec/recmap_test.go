package exec

import (
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
