package session

import (
	"context"
	"testing"

	"github.com/tqmon/tqmon/resident/wire"
)

// Five sessions that never read beside one that reads every round: the
// silent ones fill what they may (their reserves and their shares of
// the other half of the budget) and drop the rest, counted; the honest
// one, holding one round at a time — more than its Reserve, less than
// its reserve and share — loses nothing; the budget never holds more
// than its max.
func TestReserveServesHonest(t *testing.T) {
	budget := NewBudget(MaxHeldTotal)
	clock := func() int64 { return 0 }
	var silent [5]Core
	for i := range silent {
		silent[i].Init(1, clock, budget)
	}
	var honest Core
	honest.Init(1, clock, budget)
	// per round: > Reserve, < Reserve + share (half the shared part's
	// sixth: the pool is half the budget, six sessions share the rest)
	const rounds, per = 30, Reserve + MaxHeldTotal/2/6/2
	in := make([]wire.Packet, per)
	got := 0
	// Deliver makes the batch at once: Recv, with a context already
	// done, returns it, or says there is none.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	for r := range rounds {
		for i := range in {
			in[i] = wire.Packet{TS: int64(r*per + i + 1)}
		}
		w := int64((r + 1) * per)
		for i := range silent {
			silent[i].Deliver(in, nil, w, nil, int64(r), false)
		}
		honest.Deliver(in, nil, w, nil, int64(r), false)
		if held := budget.Held(); held > MaxHeldTotal {
			t.Fatalf("round %d: the budget holds %d, more than %d", r, held, MaxHeldTotal)
		}
		b, err := honest.Recv(now)
		if err != nil {
			t.Fatalf("round %d: no batch for the honest session (%v); it got %d packets so far", r, err, got)
		}
		got += len(b.Packets)
		honest.Release(b)
	}
	if got != rounds*per || honest.over[0] != 0 {
		t.Errorf("honest session got %d of %d, lost %d", got, rounds*per, honest.over[0])
	}
	for i := range silent {
		if held, lost := silent[i].n, silent[i].over[0]; held+int(lost) != rounds*per || lost == 0 {
			t.Errorf("silent session %d: holds %d, lost %d, of %d", i, held, lost, rounds*per)
		}
	}
	share := (MaxHeldTotal - budget.pool) / 6
	for i := range silent {
		if held := int64(silent[i].n); held != Reserve+share {
			t.Errorf("silent session %d holds %d, want its reserve and share, %d", i, held, Reserve+share)
		}
	}
}

// Room is exactly what Deliver keeps: a round of Room packets loses
// none, one more is dropped — for a session within its reserve, one
// beyond it sharing the budget with sessions that never read, and one
// at its share.
func TestRoomIsWhatDeliverKeeps(t *testing.T) {
	budget := NewBudget(MaxHeldTotal)
	clock := func() int64 { return 0 }
	var silent [3]Core
	for i := range silent {
		silent[i].Init(1, clock, budget)
	}
	ts := int64(0)
	round := func(c *Core, n int) {
		in := make([]wire.Packet, n)
		for i := range in {
			ts++
			in[i] = wire.Packet{TS: ts}
		}
		c.Deliver(in, nil, 0, nil, 0, false) // watermark 0: all held back
	}
	for step := range 4 {
		for i := range silent {
			k := silent[i].Room()
			lost := silent[i].over[0]
			round(&silent[i], k)
			if silent[i].over[0] != lost {
				t.Fatalf("step %d, session %d: %d packets of its room %d dropped", step, i, silent[i].over[0]-lost, k)
			}
			if k > 0 {
				round(&silent[i], 1)
				if silent[i].over[0] != lost+1 {
					t.Fatalf("step %d, session %d: a packet beyond its room %d was kept", step, i, k)
				}
			}
			if r := silent[i].Room(); r != 0 {
				t.Fatalf("step %d, session %d: room %d after filling it", step, i, r)
			}
		}
	}
	var late Core
	late.Init(1, clock, budget)
	if k := late.Room(); k < Reserve {
		t.Errorf("a new session beside full ones has room %d, less than its reserve %d", k, Reserve)
	}
	late.End(nil, false)
	if k := late.Room(); k != 0 {
		t.Errorf("an ended session has room %d", k)
	}
}
