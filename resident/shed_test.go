package resident

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// A full session's events are not written and its packets are dropped
// undecoded (no entity definition queued for it); every one is counted,
// so delivered + dropped = wanted holds exactly for it.
func TestShedFullSession(t *testing.T) {
	r := manualRounds(t)
	send := r.Sensor(sSendMessage)
	p, m := r.Create(tProcess, "P", nil), r.Create(tMailbox, "M", nil)
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	claims := func() (n uint64) {
		for _, q := range r.ringList() {
			if q != nil {
				n += q.claimed()
			}
		}
		return n
	}
	fill(t, r, s, send, p, m)
	before := claims()
	for range 1000 {
		ev(send, Value{E: p}, Value{E: m})
	}
	if n := claims() - before; n != 0 {
		t.Errorf("%d ring positions written for a full session's events", n)
	}
	q := r.Create(tProcess, "Q", nil) // entity packets go to every session
	r.round(false)
	if q.seen.Load()&s.bit != 0 {
		t.Error("the drain decoded a full session's packet (its entity definition was queued)")
	}
	// The session reads at last: exact counts.
	st := newStream(t, s)
	r.Close()
	if err := st.toEnd(); !errors.Is(err, ErrClosed) {
		t.Fatalf("session ended with %v", err)
	}
	for _, sid := range []SensorID{sSendMessage, sProcess} {
		c, n := st.counts[uint16(sid)], st.delivered(sid)
		t.Logf("sensor %d: delivered %d, dropped %d, wanted %d", sid, n, c.Drops, c.Wanted)
		if n+c.Drops != c.Wanted || c.Drops == 0 {
			t.Errorf("sensor %d: delivered %d + dropped %d, wanted %d: want exact counts, and drops", sid, n, c.Drops, c.Wanted)
		}
	}
	if n := st.delivered(sSendMessage); n > session.MaxHeld {
		t.Errorf("delivered %d SendMessage packets: more than MaxHeld", n)
	}
}

// A full session beside one whose fragments the drain evaluates and
// which rejects every packet: an event written for the other session
// alone while this one is full, then rejected by the drain's filter, was
// counted as this session's drop but not as wanted (the drain counts only
// the packets a filter passes), so delivered + dropped exceeded wanted —
// TestHostileFragments under load, when the honest monitor fell behind
// until full. Counts must stay exact.
func TestShedBesideDrainFragments(t *testing.T) {
	r := manualRounds(t)
	send := r.Sensor(sSendMessage)
	p, m := r.Create(tProcess, "P", nil), r.Create(tMailbox, "M", nil)
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	bad := r.Open()
	mustApply(t, bad, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	mustApply(t, bad, fragCmd(1, sSendMessage, dear(1, "nobody")))
	if ft := send.frags.Load(); ft == nil || ft.early {
		t.Fatal("the fragment is not the drain's")
	}
	fill(t, r, s, send, p, m)
	for range 1000 {
		ev(send, Value{E: p}, Value{E: m})
	}
	r.round(false)
	st := newStream(t, s)
	r.Close()
	if err := st.toEnd(); !errors.Is(err, ErrClosed) {
		t.Fatalf("session ended with %v", err)
	}
	c, n := st.counts[uint16(sSendMessage)], st.delivered(sSendMessage)
	t.Logf("delivered %d, dropped %d, wanted %d", n, c.Drops, c.Wanted)
	if n+c.Drops != c.Wanted || c.Drops < 1000 {
		t.Errorf("delivered %d + dropped %d, wanted %d: want exact counts, and the 1,000 drops", n, c.Drops, c.Wanted)
	}
}

// fill sends p's messages to m until session s (which never reads) is
// full, and runs the round that marks it so (manual rounds).
func fill(t *testing.T, r *Resident, s *Session, send *Sensor, p, m *Entity) {
	t.Helper()
	for rounds := 0; !s.core.Full(); rounds++ {
		if rounds > 2*session.MaxHeld/(r.slots/4) {
			t.Fatal("the session never filled")
		}
		for range r.slots / 4 {
			ev(send, Value{E: p}, Value{E: m})
		}
		r.round(false)
	}
	r.round(false) // the round marks it full
	if r.full.Load()&s.bit == 0 {
		t.Fatal("a full session is not marked full")
	}
}

// A session's first packets (the live entities' tuples) are wanted by it
// alone: a session opened while another is open does not add them to the
// other's wanted, which it is never delivered (they were counted in the
// resident's counts, every session's: the first session's delivered +
// dropped fell short of its wanted by the live entities).
func TestSnapshotCountsOwn(t *testing.T) {
	r := manualRounds(t)
	first := r.Open()
	for i := range 5 {
		r.Create(tProcess, fmt.Sprint("P", i), nil)
	}
	r.round(false)
	second := r.Open()
	r.round(false)
	streams := []*stream{newStream(t, first), newStream(t, second)}
	r.Close()
	for i, st := range streams {
		if err := st.toEnd(); !errors.Is(err, ErrClosed) {
			t.Fatalf("session %d ended with %v", i, err)
		}
		c, n := st.counts[uint16(sProcess)], st.delivered(sProcess)
		t.Logf("session %d: delivered %d, dropped %d, wanted %d", i, n, c.Drops, c.Wanted)
		if n+c.Drops != c.Wanted || n < 5 {
			t.Errorf("session %d: delivered %d + dropped %d != wanted %d (5 processes)", i, n, c.Drops, c.Wanted)
		}
	}
}
