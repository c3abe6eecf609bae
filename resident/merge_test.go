package resident

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// The drain merges the P rings by timestamp, ties going to the lower
// ring: packets written straight into seven rings, each in timestamp
// order with many equal timestamps across rings, reach the session in
// (timestamp, ring) order, every one of them.
func TestDrainMergesRings(t *testing.T) {
	r := newResident(testSpec(), Options{})
	close(r.drainDone)
	defer r.Close()
	send := r.Sensor(sSendMessage)
	m := r.Create(tMailbox, "M", nil)
	const rings, per = 7, 300
	procs := make([]*Entity, rings)
	for i := range rings {
		procs[i] = r.Create(tProcess, fmt.Sprint("P", i), nil) // before the session: no entity packets in the rings
		r.addRing(i)
	}
	s := r.Open()
	st := newStream(t, s)
	type key struct {
		ts   int64
		ring int
	}
	var want []key
	rng := rand.New(rand.NewPCG(1, 2))
	ep := r.epoch.Load()
	for i, q := range r.ringList() {
		ts := int64(1)
		for range per {
			ts += int64(rng.IntN(3)) // equal timestamps within and across rings
			pos, ok := q.reserve(1, false)
			if !ok {
				t.Fatal("ring full")
			}
			sl := q.at(pos)
			sl.w = [3]uint64{uint64(ts), s.bit, send.evHdr | uint64(ep)}
			sl.v[0] = slotVal{p: unsafe.Pointer(procs[i])}
			sl.v[1] = slotVal{p: unsafe.Pointer(m)}
			sl.commit(pos)
			want = append(want, key{ts, i})
		}
	}
	slices.SortStableFunc(want, func(a, b key) int {
		if a.ts != b.ts {
			return int(a.ts - b.ts)
		}
		return a.ring - b.ring
	})
	r.round(false)
	b, err := s.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.add(b); err != nil {
		t.Fatal(err)
	}
	var got []key
	for _, p := range st.take(false) {
		var i int
		fmt.Sscanf(st.defs[p.Vals[0].N].ID, "P%d", &i)
		got = append(got, key{p.TS, i})
	}
	if !slices.Equal(got, want) {
		n := min(len(got), len(want))
		for k := range n {
			if got[k] != want[k] {
				t.Fatalf("packet %d of %d: got (ts %d, ring %d), want (ts %d, ring %d)", k, len(want), got[k].ts, got[k].ring, want[k].ts, want[k].ring)
			}
		}
		t.Fatalf("got %d packets, want %d", len(got), len(want))
	}
}
