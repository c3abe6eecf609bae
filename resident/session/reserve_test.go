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
