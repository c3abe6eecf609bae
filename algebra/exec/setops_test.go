package exec_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
)

// feed plays interval tuples (as one stream in time order) into r.
func feed(r stream.Receiver, rows []algebra.Tuple) {
	var es []stream.Elem
	for i := range rows {
		rec := &stream.Rec{Vals: rows[i].Vals, From: rows[i].From}
		es = append(es, stream.Elem{Kind: stream.Begin, T: rows[i].From, Rec: rec}, stream.Elem{Kind: stream.End, T: rows[i].To, Rec: rec})
	}
	slices.SortStableFunc(es, func(a, b stream.Elem) int {
		if a.T != b.T {
			return int(a.T - b.T)
		}
		return int(a.Kind) - int(b.Kind) // End (0) before Begin (1)
	})
	for _, e := range es {
		r.Push(e)
	}
}

// randomEntityRel makes a coalesced entity relation over ids in [0, span).
func randomEntityRel(r *rand.Rand, ids []string, span int) []algebra.Tuple {
	var out []algebra.Tuple
	for _, id := range ids {
		at := r.IntN(span / 2)
		for at < span && r.IntN(4) > 0 {
			end := at + 1 + r.IntN(6)
			out = append(out, algebra.Tuple{Vals: []algebra.Value{algebra.Entity(id)}, From: algebra.Time(at), To: algebra.Time(end)})
			at = end + r.IntN(4) // gaps of 0 make meeting intervals, which stay separate tuples
		}
	}
	return out
}

// TestSetOps checks ∩ and ∪ of entity relations against a chronon-by-
// chronon brute force.
func TestSetOps(t *testing.T) {
	ids := []string{"P1", "P2", "P3"}
	const span = 40
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		L, R := randomEntityRel(r, ids, span), randomEntityRel(r, ids, span)
		for _, union := range []bool{false, true} {
			rel := &algebra.Relation{Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "P"}}}
			col := exec.NewCollector(rel)
			op := exec.NewSetOp(union, col)
			// Interleave the two inputs' streams as a driver would: push
			// everything, then advance both sides to the end.
			feed(op.Input(0), L)
			feed(op.Input(1), R)
			op.Input(0).Advance(algebra.Forever)
			op.Input(1).Advance(algebra.Forever)
			got := render(col.Table())
			want := render(bruteSetOp(rel, L, R, union, span))
			if got != want {
				t.Fatalf("seed %d union=%v:\n got %s\nwant %s\nL %v\nR %v", seed, union, got, want, L, R)
			}
		}
	}
}

func bruteSetOp(rel *algebra.Relation, L, R []algebra.Tuple, union bool, span int) *algebra.Table {
	in := func(rows []algebra.Tuple, id string, c int) bool {
		for _, t := range rows {
			if t.Vals[0].S == id && t.From <= algebra.Time(c) && algebra.Time(c) < t.To {
				return true
			}
		}
		return false
	}
	out := &algebra.Table{Rel: rel}
	for _, id := range []string{"P1", "P2", "P3"} {
		start := -1
		for c := 0; c <= span+10; c++ {
			l, r := in(L, id, c), in(R, id, c)
			on := l && r
			if union {
				on = l || r
			}
			switch {
			case on && start < 0:
				start = c
			case !on && start >= 0:
				out.Add([]algebra.Value{algebra.Entity(id)}, algebra.Time(start), algebra.Time(c))
				start = -1
			}
		}
	}
	out.SortRows()
	return out
}

func ExampleSetOp() {
	rel := &algebra.Relation{Class: algebra.ClassInterval, Attrs: []algebra.Attr{{Name: "P"}}}
	col := exec.NewCollector(rel)
	op := exec.NewSetOp(false, col)
	p := []algebra.Value{algebra.Entity("P1")}
	feed(op.Input(0), []algebra.Tuple{{Vals: p, From: 1, To: 10}})
	feed(op.Input(1), []algebra.Tuple{{Vals: p, From: 5, To: 15}})
	op.Input(0).Advance(algebra.Forever)
	op.Input(1).Advance(algebra.Forever)
	for _, row := range col.Table().Rows {
		fmt.Printf("%s [%d, %d)\n", row.Vals[0].S, row.From, row.To)
	}
	// Output: P1 [5, 10)
}
