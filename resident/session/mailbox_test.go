package session

import (
	"context"
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

// Packets held back by the watermark keep their values across rounds,
// although the drain's round arena they were decoded into is reused, and
// a released batch serves the next one.
func TestHeldValuesSurvive(t *testing.T) {
	var s Core
	s.Init(1, func() int64 { return 0 }, nil)
	scratch := []wire.Value{{Kind: wire.VInt, N: 10}, {Kind: wire.VString, S: "ten"}, {Kind: wire.VInt, N: 20}, {Kind: wire.VString, S: "twenty"}}
	in := []wire.Packet{{TS: 10, Vals: scratch[0:2]}, {TS: 20, Vals: scratch[2:4]}}
	s.Deliver(in, nil, 15, nil, 1, false)
	clear(scratch) // the next round reuses the drain's arena
	b1, err := s.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(b1.Packets) != 1 || b1.Packets[0].TS != 10 || b1.Packets[0].Vals[0].N != 10 || b1.Packets[0].Vals[1].S != "ten" {
		t.Fatalf("first batch %+v", b1.Packets)
	}
	s.Release(b1)
	s.Deliver(nil, nil, 25, nil, 2, false)
	b2, err := s.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b2 != b1 {
		t.Error("the released batch was not reused")
	}
	if len(b2.Packets) != 1 || b2.Packets[0].TS != 20 || b2.Packets[0].Vals[0].N != 20 || b2.Packets[0].Vals[1].S != "twenty" {
		t.Fatalf("held packet %+v", b2.Packets)
	}
	// Releasing twice, or a batch the session did not make, is ignored.
	s.Release(b2)
	s.Release(b2)
	s.Release(&wire.Batch{})
	if len(s.free) != 2 {
		t.Fatalf("%d batches free, want 2 (b2 once, the foreign one)", len(s.free))
	}
}

// A large batch — many rounds merged while the remote was busy, up to
// MaxHeld packets in a slice grown past that — is reused once released,
// and what the free batches keep stays within 2·MaxHeld packets'
// capacity however large the batches released.
func TestLargeBatchReused(t *testing.T) {
	var s Core
	s.Init(1, func() int64 { return 0 }, nil)
	big := func(n int) *wire.Batch {
		b := &wire.Batch{Packets: make([]wire.Packet, 0, n)}
		s.qmu.Lock()
		s.free = append(s.free, b) // as if the session made it
		s.qmu.Unlock()
		got := s.newBatch()
		if got != b {
			t.Fatal("newBatch did not take the free batch")
		}
		return got
	}
	b := big(MaxHeld + MaxHeld/2)
	s.Release(b)
	if len(s.free) != 1 || s.newBatch() != b {
		t.Fatalf("a batch of %d packets' capacity was not reused", cap(b.Packets))
	}
	for range 2 * MaxFree {
		s.Release(big(MaxHeld))
	}
	kept := 0
	for _, f := range s.free {
		kept += cap(f.Packets)
	}
	if kept > 2*MaxHeld || len(s.free) > MaxFree {
		t.Errorf("free batches keep %d packets' capacity in %d batches; bounds %d, %d", kept, len(s.free), 2*MaxHeld, MaxFree)
	}
}
