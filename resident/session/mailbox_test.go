package session

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
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

// A session behind by a backlog — the watermark lags, so each round
// holds back its new packets and sends only as many old ones — pays for
// the new packets' values a round, not the whole backlog's: the values
// copied into the held arena over N rounds are at most 3·N·batch (plus
// the backlog's own, once), and the held packets moved within the queue
// at most N·batch. Before, every round copied all held values into a
// fresh arena (here 100 rounds × 20,000 held: 4·10⁶ values copied,
// against ≤ 60,000), and shifted all held packets down the queue.
func TestHeldCopiesAmortised(t *testing.T) {
	const backlog, batch, rounds = 20000, 200, 100
	var s Core
	s.Init(1, func() int64 { return 0 }, nil)
	scratch := make([]wire.Value, 2*backlog)
	pkts := func(from, n int) []wire.Packet {
		clear(scratch) // the drain's round arena, reused
		in := make([]wire.Packet, n)
		for i := range in {
			ts := int64(from + i + 1)
			v := scratch[2*i : 2*i+2 : 2*i+2]
			v[0], v[1] = wire.Value{Kind: wire.VInt, N: uint64(ts)}, wire.Value{Kind: wire.VString, S: strconv.Itoa(int(ts))}
			in[i] = wire.Packet{TS: ts, Vals: v}
		}
		return in
	}
	s.Deliver(pkts(0, backlog), nil, 0, nil, 0, false) // all held
	base, moved := s.copied, s.moved
	next, sent := backlog, 0
	for r := range rounds {
		s.Deliver(pkts(next, batch), nil, int64(sent+batch), nil, int64(r+1), false)
		next, sent = next+batch, sent+batch
		b, err := s.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Packets {
			if p.Vals[0].N != uint64(p.TS) || p.Vals[1].S != strconv.Itoa(int(p.TS)) {
				t.Fatalf("round %d: packet %d carries %v", r, p.TS, p.Vals)
			}
		}
		s.Release(b)
	}
	if got, bound := s.copied-base, uint64(3*rounds*batch); got > bound {
		t.Errorf("%d values copied into the held arena over %d rounds of %d packets (2 values each) with %d held; want ≤ %d", got, rounds, batch, backlog, bound)
	}
	if got, bound := s.moved-moved, uint64(rounds*batch); got > bound {
		t.Errorf("%d held packets moved over %d rounds of %d packets with %d held; want ≤ %d", got, rounds, batch, backlog, bound)
	}
	if len(s.q)-s.qh != backlog || 2*s.live < len(s.held) {
		t.Errorf("%d held, %d live values in an arena of %d: want %d held, at most half dead", len(s.q)-s.qh, s.live, len(s.held), backlog)
	}
}

// Whatever the order and timing — rounds out of order, packets enqueued
// between rounds, watermarks lagging by a random amount, compactions and
// growth of the held arena, batches released and reused, a final round —
// every packet arrives once, in order, with its own values, although the
// drain's round arena is overwritten after every round and a caller's
// values after every Enqueue.
func TestHeldValuesKeptThroughCompaction(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s Core
	s.Init(1, func() int64 { return 0 }, nil)
	scratch := make([]wire.Value, 0, 4096)
	made := 0
	mk := func(ts int64) wire.Packet {
		made++
		k := len(scratch)
		scratch = append(scratch, wire.Value{Kind: wire.VInt, N: uint64(ts)}, wire.Value{Kind: wire.VString, S: strconv.Itoa(int(ts))})
		return wire.Packet{TS: ts, Vals: scratch[k : k+2 : k+2]}
	}
	var w, lastTS int64
	got := 0
	take := func() {
		for {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			b, err := s.Recv(ctx)
			if err != nil {
				return
			}
			for _, p := range b.Packets {
				if p.TS < lastTS || p.Vals[0].N != uint64(p.TS) || p.Vals[1].S != strconv.Itoa(int(p.TS)) {
					t.Fatalf("packet %d (after %d) carries %v", p.TS, lastTS, p.Vals)
				}
				lastTS = p.TS
				got++
			}
			s.Release(b)
		}
	}
	for r := range 3000 {
		scratch = scratch[:0]
		var in []wire.Packet
		// Stamped after the last watermark, anywhere among those held.
		for range rng.IntN(40) {
			in = append(in, mk(w+1+rng.Int64N(300)))
		}
		if rng.IntN(2) == 0 {
			slices.SortFunc(in, byTS) // (as the drains deliver them)
		}
		w += rng.Int64N(120)
		s.Deliver(in, nil, w, nil, int64(r), false)
		clear(scratch)
		if rng.IntN(3) == 0 {
			scratch = scratch[:0]
			s.Enqueue(mk(w+1+rng.Int64N(300)), nil)
			clear(scratch)
		}
		if rng.IntN(4) != 0 {
			take()
		}
	}
	s.Deliver(nil, nil, w, nil, 3000, true)
	take()
	if got != made || len(s.q) != s.qh {
		t.Errorf("%d of %d packets received, %d held", got, made, len(s.q))
	}
}

// BenchmarkDeliver: a round of 256 packets of three values through
// Deliver and Recv (the batch released), ns per packet. steady: the
// watermark passes every packet (the kernel drain's case); backlog: the
// watermark lags 20,000 packets behind, so each round holds its packets
// back and sends as many old ones (before: each round copied all held
// values, ≈ 78× a round's).
func BenchmarkDeliver(b *testing.B) {
	for _, c := range []struct {
		name string
		lag  int
	}{{"steady", 0}, {"backlog", 20000}} {
		b.Run(c.name, func(b *testing.B) {
			const per = 256
			var s Core
			s.Init(1, func() int64 { return 0 }, nil)
			scratch := make([]wire.Value, 3*per)
			in := make([]wire.Packet, per)
			ts := int64(0)
			round := func() {
				for i := range in {
					ts++
					v := scratch[3*i : 3*i+3 : 3*i+3]
					v[0], v[1], v[2] = wire.Value{Kind: wire.VInt, N: uint64(ts)}, wire.Value{Kind: wire.VString, S: "getppid"}, wire.Value{Kind: wire.VEntity, N: 7}
					in[i] = wire.Packet{TS: ts, Vals: v}
				}
				s.Deliver(in, nil, max(ts-int64(c.lag), 0), nil, ts, false)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				if bt, err := s.Recv(ctx); err == nil {
					s.Release(bt)
				}
			}
			for range c.lag / per {
				round()
			}
			b.ResetTimer()
			for range b.N {
				round()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/packet")
		})
	}
}

// Handoff gives a batch the drain's storage only within its bound: at
// most MaxHanded handed batches wait for a receiver that does not read
// (the rounds after are copied into the last), none holding storage of
// more than twice its packets (or HandFloor), and the values they name
// are the drain's own until then — a batch that took the arena keeps it
// whatever the drain writes into the storage it got in exchange.
func TestHandoffBound(t *testing.T) {
	var s Core
	s.Init(1, func() int64 { return 0 }, nil)
	var pk []wire.Packet
	var arena []wire.Value
	var batches []*wire.Batch
	for r := range 10 {
		// A round of 3 packets in storage far larger than it needs
		// (round 0), or of 1,000 in storage that fits.
		k := 1000
		if r == 0 {
			pk, arena = make([]wire.Packet, 0, 4*HandFloor), make([]wire.Value, 0, 16*HandFloor)
			k = 3
		}
		for i := range k {
			arena = append(arena, wire.Value{Kind: wire.VInt, N: uint64(r)})
			pk = append(pk, wire.Packet{TS: int64(r*10000 + i + 1), Vals: arena[len(arena)-1:]})
		}
		s.Handoff(&pk, &arena, nil, int64(r*10000+9999), nil, int64(r), false)
		for i := range arena[:cap(arena)] { // the drain's next round writes what it got
			arena[:cap(arena)][i] = wire.Value{Kind: wire.VInt, N: 999}
		}
		pk, arena = pk[:0], arena[:0]
	}
	for {
		s.qmu.Lock()
		waiting := len(s.box) - s.boxH
		s.qmu.Unlock()
		if waiting == 0 {
			break
		}
		b, err := s.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if len(batches) != MaxHanded {
		t.Errorf("%d batches waited; want MaxHanded (%d): the rounds after it are copied into the last", len(batches), MaxHanded)
	}
	n := 0
	for _, b := range batches {
		if c := cap(b.Packets); c > max(2*len(b.Packets), HandFloor) {
			t.Errorf("a batch of %d packets holds room for %d", len(b.Packets), c)
		}
		for _, p := range b.Packets {
			if r := (p.TS - 1) / 10000; p.Vals[0].N != uint64(r) {
				t.Fatalf("packet %d of round %d names value %d", p.TS, r, p.Vals[0].N)
			}
			n++
		}
	}
	if n != 3+9*1000 {
		t.Errorf("%d packets received; want %d", n, 3+9*1000)
	}
}
