package exec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// TestRemovalQueueInTimeOrder: the removal queue pops removals in order of
// time, each exactly once, under random interleavings of pushes (mostly in
// order, as a window schedules them, some earlier than the last) and pops,
// takes the in-order ones without the heap, and allocates nothing once
// grown.
func TestRemovalQueueInTimeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	var q removalQueue
	var pushed, popped []int64
	now, last, inHeap := algebra.Time(0), algebra.Time(0), 0
	for step := range 200000 {
		if r.IntN(3) > 0 || q.len() == 0 {
			at := max(now, last) + algebra.Time(r.IntN(3)) // mostly in order: the window
			if r.IntN(50) == 0 {
				at = now // earlier than most scheduled
			}
			last = max(last, at)
			before := len(q.heap)
			q.push(removal{t: at, v: algebra.Int(int64(step))})
			inHeap += len(q.heap) - before
			pushed = append(pushed, int64(step))
			continue
		}
		next, ok := q.next()
		if !ok {
			t.Fatal("next: none, yet the queue holds some")
		}
		x := q.pop()
		if x.t != next || x.t < now {
			t.Fatalf("step %d: popped time %d; next said %d, the last popped was %d", step, x.t, next, now)
		}
		now = x.t
		popped = append(popped, x.v.N)
	}
	for q.len() > 0 {
		x := q.pop()
		if x.t < now {
			t.Fatalf("popped time %d after %d", x.t, now)
		}
		now = x.t
		popped = append(popped, x.v.N)
	}
	slices.Sort(popped)
	if !slices.Equal(popped, pushed) {
		t.Fatalf("popped %d removals, pushed %d, or not the same ones", len(popped), len(pushed))
	}
	if inHeap == 0 || inHeap > len(pushed)/4 {
		t.Errorf("%d of %d removals went to the heap", inHeap, len(pushed))
	}
	if n := testing.AllocsPerRun(1000, func() {
		q.push(removal{t: now + 1})
		q.pop()
	}); n != 0 {
		t.Errorf("push and pop allocate %v times", n)
	}
}
