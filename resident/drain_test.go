package resident

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// A receiver that releases its batches gets them back: after a warm-up,
// a drain round of a hundred packets and its Recv allocate nothing per
// packet, and every packet still carries its own values (no batch's
// arena is reused while its packets are in use).
func TestReleaseReusesBatches(t *testing.T) {
	r := manualRounds(t)
	wide := r.Sensor(sWide)
	p := r.Create(tProcess, "P", nil)
	m := r.Create(tMailbox, "M", nil)
	s := r.Open()
	mustApply(t, s, enable(sWide, tProcess, "P"))
	const per = 100
	strs := make([]string, per)
	for i := range strs {
		strs[i] = fmt.Sprint("s", i)
	}
	next := 0
	batches := map[*wire.Batch]bool{}
	round := func() {
		first := next
		for range per {
			i := next % per
			ev(wide, Value{N: uint64(next)}, Value{E: p}, Value{S: strs[i]}, Value{N: 7}, Value{E: m}, Value{N: 1}, Value{S: strs[per-1-i]}, Value{N: uint64(next) << 20})
			next++
		}
		r.round(false)
		b, err := s.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		batches[b] = true
		pkts := b.Packets
		if first == 0 { // the session's first batch begins with P's and M's entity tuples
			pkts = pkts[min(2, len(pkts)):]
		}
		if len(pkts) != per {
			t.Fatalf("batch of %d packets, want %d", len(pkts), per)
		}
		for k, pk := range pkts {
			n := first + k
			v := pk.Vals
			if pk.Sensor != uint16(sWide) || len(v) != 8 || v[0].N != uint64(n) || v[2].S != strs[n%per] || v[6].S != strs[per-1-n%per] || v[7].N != uint64(n)<<20 {
				t.Fatalf("packet %d: values %+v", n, v)
			}
		}
		s.Release(b)
	}
	for range 10 {
		round()
	}
	allocs := testing.AllocsPerRun(20, round)
	t.Logf("%.1f allocations per round of %d packets; %d distinct batches", allocs, per, len(batches))
	if allocs > 4 {
		t.Fatalf("%.1f allocations per round of %d packets: batches are not reused", allocs, per)
	}
	if len(batches) > session.MaxFree+1 {
		t.Fatalf("%d distinct batches for %d rounds received and released one by one", len(batches), 31)
	}
}

// The drain merges the P rings by timestamp, ties going to the lower
// ring: packets written straight into seven rings, each in timestamp
// order with many equal timestamps across rings, reach the session in
// (timestamp, ring) order, every one of them.
func TestDrainMergesRings(t *testing.T) {
	r := manualRounds(t)
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
			pos, ok := q.reserve(1, q.size, false)
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
