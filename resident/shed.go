package resident

import (
	"math/bits"
	"sync/atomic"
)

// Shedding: what a full session costs the subject.
//
// A session is full when it can take no packet (it holds session.MaxHeld,
// or the resident's budget grants it nothing more: Core.Full): every
// packet it is delivered now is dropped (the mailbox counts it) until
// its remote takes a batch. Writing such a packet to the ring and
// decoding it in the drain only to drop it would make a monitor that
// never reads cost its subject a packet per sensor call, for nothing. So
// each drain round notes which sessions are full (r.full), and
//
//   - an event (Sensor.Event) every one of whose wanting sessions is
//     full is not written, and counted, per full session, as wanted and
//     dropped (the drain counts only the packets it reads);
//   - the drain drops the packets of full sessions undecoded (no values
//     copied, no entity definitions queued), counting them as dropped.
//     An event written for other sessions too is written for the full
//     ones as well, and dropped for them here.
//
// Counts stay exact: per sensor and session, delivered + dropped =
// wanted. A packet written is wanted by the drain's count when a session
// it was written for passes the drain's filter (fragment.go), and then
// delivered or dropped for each of them that passes it — the full ones
// by the drain, after that filter. (The producer used to write such an
// event only for the others and count it dropped for the full ones at
// once: when the drain's filter then rejected it for every other, it
// was not wanted, and the full session's delivered + dropped exceeded
// its wanted: TestShedBesideDrainFragments.) If the ring had no room
// for it, it is the sensor's drop, counted for every session. A packet
// written for no one is wanted and dropped for each full session that
// wanted it (shed.unsent, which the session adds to both) — the
// sessions that did not want it see neither. A session marked full that
// has room again by the time the packet reaches its mailbox only loses a
// packet it would have got: the loss is counted, never silent; the mark
// is at most a round old (drainEvery).
//
// Sessions and epochs: the producer counts a shed packet for the session
// at each full index that was open at the packet's epoch (drain.go's
// rule), so a count never goes to a newer session that took the index.
// Opening a session clears its index's mark.

// shedCount counts one sensor's events not written because every session
// wanting them was full (producers add, the drain takes them each
// round): wanted and dropped for the session.
type shedCount struct {
	unsent atomic.Uint64
}

// shed counts an event not written as shed for each session of f (full
// sessions that wanted it, as of epoch ep).
func (s *Sensor) shed(f uint64, ep uint32) {
	r := s.r
	for ; f != 0; f &= f - 1 {
		x := r.table[bits.TrailingZeros64(f)].Load()
		if x == nil || int32(ep-x.openEpoch) < 0 {
			continue
		}
		x.shed[s.id].unsent.Add(1)
	}
}

// markFull notes which of the round's sessions are full (the drain, at
// the start of a round), for the producers and for dispatch.
func (r *Resident) markFull(tab *[MaxSessions]*Session) {
	var f uint64
	for i, s := range tab {
		if s != nil && s.core.Full() {
			f |= 1 << i
		}
	}
	r.dr.full = f
	if r.full.Load() != f {
		r.full.Store(f)
	}
}

// foldShed hands a session what was shed for it since the last round:
// the producers' counts and the drain's (dropped undecoded), as drops
// (the drain, before the session's Deliver).
func (r *Resident) foldShed(s *Session) {
	own := r.dr.shed[s.idx]
	for sid := range s.shed {
		c := &s.shed[sid]
		var dropped, unsent uint64
		if c.unsent.Load() != 0 {
			unsent = c.unsent.Swap(0)
		}
		if sid < len(own) {
			dropped, own[sid] = own[sid], 0
		}
		if dropped+unsent != 0 {
			s.core.Shed(uint16(sid), dropped, unsent)
		}
	}
}

// shedDrain drops, undecoded, the packet of sensor sid for the full
// sessions among to, counting it; it returns the sessions left (the
// drain's dispatch).
func (r *Resident) shedDrain(to uint64, sid SensorID) uint64 {
	f := to & r.dr.full
	for m := f; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if len(r.dr.shed[i]) != len(r.sensors) {
			r.dr.shed[i] = make([]uint64, len(r.sensors))
		}
		r.dr.shed[i][sid]++
	}
	return to &^ f
}
