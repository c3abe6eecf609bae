package resident

import (
	"math/bits"
	"time"
	"unsafe"

	"github.com/tqmon/tqmon/resident/wire"
)

// The drain: one goroutine per resident, running a round every
// millisecond while sessions are open (it sleeps otherwise). A round
//
//  1. runs the sampling ticks that are due (sample.go), and disables the
//     entities whose while counting triggers' counts fell (count.go);
//  2. reads the clock (D0), then (after membarrier, see ring.go) each
//     ring's claim;
//  3. consumes every packet below the claims, waiting for each to be
//     published, merging the rings by timestamp (each ring is in
//     timestamp order), decoding each packet once (entities to keys, with
//     an EntityDef for each session that was not sent the entity's yet)
//     and routing it to the sessions that wanted it;
//  4. per session, merges the new packets with those held back, sorts
//     them by timestamp, and sends those stamped ≤ W as a batch with
//     watermark W = D0 − 1 (lower while a sampling tick of the session is
//     pending: W < that tick); the rest are held for a later round.
//
// Why W is safe: producers claim their slot before reading the clock, so
// a packet not drained this round made its claim after the drain read
// the claims — after D0 and the barrier (ring.go) — and read the clock
// after that: its timestamp is ≥ D0 > W. Packets drained this
// round but stamped after W wait for a later round; samples are stamped
// with their tick, which W stays below until the tick has run. So each
// session gets its packets in non-decreasing timestamp order, each batch's
// packets after the previous batch's watermark.
//
// Sessions and epochs: a packet carries the set of sessions (indices) that
// wanted it and the epoch the set was read at (see Sensor.want); the drain
// delivers to the session at index i only if that session was open at the
// packet's epoch (opened at or before it), so a packet meant for a closed
// session never reaches a newer session that took its index.
//
// Counts of a new session: a session's counts are the resident's
// (per sensor: wanted, as the drain counts its packets at each round's
// end, plus the producers' drops) less its base, so that per sensor
// delivered + dropped = wanted holds for it when every session open wants
// the same packets (entity relations always). Open takes only the drops
// for the base (under r.mu, as entity packets read the sessions they go
// to); the wanted part is the drain's. Each round reads the session table
// after the claims, so a packet made for a session (claimed after Open
// stored it) is read by a round that serves it. The first round that
// serves a session takes as its base the wanted counts at the end of the
// round before (the packets of that round and earlier were claimed
// before the table it read, so none was for the session); and from then
// on, a packet the drain counts that was made before the session opened
// (of an earlier epoch: waiting in a ring, or its producer between
// reading the epoch and claiming) is added to its base (stale). Before,
// Open took the counts whenever it ran: the round in progress added its
// packets after them, and the rings' waiting packets were counted too,
// wanted by the new session and never delivered to it
// (TestOpenCountsExact).
//
// Step 4 is the session core's mailbox (session.Core.Deliver), whose
// ordering argument rests on the one above: every packet delivered or
// enqueued after a round with watermark W is stamped > W.
//
// Memory: a round decodes packet values into the drain's round arena;
// Deliver copies them into the batch's own arena (Batch.Arena), or, for
// packets held back, into the session's held arena. A receiver that gives
// batches back (Session.Release: the transport does once it has encoded
// one, the in-process remote once it has taken one) has them reused, so
// a steady stream allocates nothing per packet, and the drain adds no
// garbage for the subject's collector to chase. It costs ≈ 25–33 ns a
// packet on the reference machine (BenchmarkDrain), so it sustains some
// 30M packets/s.

// drainEvery is the drain's period.
const drainEvery = time.Millisecond

// drainState is the drain goroutine's working memory: per session, the
// round's packets and the entity definitions they need.
type drainState struct {
	out  [MaxSessions][]wire.Packet
	defs [MaxSessions][]wire.EntityDef
	vals []wire.Value // arena for packet values
	// cur are the round's ring cursors.
	cur []cursor
	// wanted counts, per sensor, the round's packets, added to the
	// sensors' shared counters once at the end of the round (one atomic
	// add per sensor and round, not per packet).
	wanted []uint64
	// full are the sessions full at the round's start, whose packets
	// the round drops undecoded, counting them per session and sensor
	// in shed (shed.go).
	full uint64
	shed [MaxSessions][]uint64
	// Counts of a new session (above): bound is each sensor's wanted
	// count at the last round's end; served the session served at each
	// index last round; open the indices served this round, newest
	// their latest opening epoch; stale, per session and sensor, the
	// round's counted packets made before the session opened.
	bound  []uint64
	served [MaxSessions]*Session
	open   uint64
	newest uint32
	stale  [MaxSessions][]uint64
}

// cursor is the drain's place in one ring during a round: positions
// [pos, end) are left; head is the published head slot at pos; idx is
// the ring's P (ties between rings go to the lower).
type cursor struct {
	q        *ring
	idx      int
	pos, end uint64
	head     *slot
	n        int
}

// before orders cursors by their next packet's timestamp, then ring.
func (c *cursor) before(d *cursor) bool {
	a, b := int64(c.head.w[0]), int64(d.head.w[0])
	return a < b || a == b && c.idx < d.idx
}

// siftDown restores the heap order of h below i.
func siftDown(h []cursor, i int) {
	for {
		m := i
		if l := 2*i + 1; l < len(h) && h[l].before(&h[m]) {
			m = l
		}
		if r := 2*i + 2; r < len(h) && h[r].before(&h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (d *drainState) newVals(n int) []wire.Value {
	if cap(d.vals)-len(d.vals) < n {
		// The round's packets so far keep the old arena until deliver
		// has moved their values out.
		d.vals = make([]wire.Value, 0, max(4096, n, 2*cap(d.vals)))
	}
	v := d.vals[len(d.vals) : len(d.vals)+n : len(d.vals)+n]
	d.vals = d.vals[:len(d.vals)+n]
	return v
}

func (r *Resident) drainLoop() {
	defer close(r.drainDone)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for {
		if r.idle() {
			select {
			case <-r.stop:
				return
			case <-r.wake:
			}
			continue
		}
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.round(false)
	}
}

// idle reports whether no session is open.
func (r *Resident) idle() bool {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	for i := range r.table {
		if r.table[i].Load() != nil {
			return false
		}
	}
	return true
}

// round is one drain round (see above). final (Resident.Close) sends
// everything, the watermark covering the last packet.
func (r *Resident) round(final bool) {
	if final || r.autoSample.Load() {
		r.sampleDue()
	}
	// While counting triggers whose counts fell (count.go).
	r.expireCounts()
	r.dr.vals = r.dr.vals[:0] // the last round's values were all moved out
	d0 := r.now()
	lfence() // the clock read completes before the claims are read
	// (A ring made after this read was made after D0, and its packets
	// were stamped after that: no barrier is needed for it, nor at all
	// before the first ring.)
	rings := r.ringList()
	if r.plain && len(rings) > 0 {
		membarrier()
	}
	if len(r.dr.wanted) != len(r.sensors) {
		r.dr.wanted = make([]uint64, len(r.sensors))
		r.dr.bound = make([]uint64, len(r.sensors))
	}
	cur := r.dr.cur[:0]
	for i, q := range rings {
		if q == nil {
			continue
		}
		if pos, end := q.head.Load(), q.claimed(); pos < end {
			cur = append(cur, cursor{q: q, idx: i, pos: pos, end: end, head: q.wait(pos)})
		}
	}
	tab := r.tableNow() // after the claims (Counts of a new session)
	r.markFull(&tab)
	r.admit(&tab)
	// Merge by timestamp: cur is a min-heap on (head timestamp, ring), so
	// a packet costs O(log rings), however many Ps write.
	for i := len(cur)/2 - 1; i >= 0; i-- {
		siftDown(cur, i)
	}
	for len(cur) > 0 {
		c := &cur[0]
		c.pos += r.dispatch(c.q, c.pos, c.head, &tab)
		if c.n++; c.pos == c.end {
			c.q.head.Store(c.end)
			cur[0] = cur[len(cur)-1]
			cur = cur[:len(cur)-1]
		} else {
			if c.n%256 == 0 {
				c.q.head.Store(c.pos) // room for producers during a long round
			}
			c.head = c.q.wait(c.pos)
		}
		siftDown(cur, 0)
	}
	r.dr.cur = cur[:0]
	for sid, n := range r.dr.wanted {
		if n > 0 {
			r.sensors[sid].wanted.Add(n)
			r.dr.wanted[sid] = 0
		}
		r.dr.bound[sid] = r.sensors[sid].wanted.Load()
	}

	var hold [MaxSessions]int64
	var held [MaxSessions]bool
	r.sampleHold(&hold, &held)
	counts := r.counts()
	realNow := nanotime()
	for i, s := range tab {
		if s == nil {
			continue
		}
		w := d0 - 1
		if held[i] && hold[i]-1 < w {
			w = hold[i] - 1
		}
		r.foldShed(s)
		for sid, n := range r.dr.stale[i] {
			if n > 0 {
				s.core.Unwanted(uint16(sid), n)
				r.dr.stale[i][sid] = 0
			}
		}
		s.core.Deliver(r.dr.out[i], r.dr.defs[i], w, counts, realNow, final)
		clear(r.dr.out[i])
		r.dr.out[i] = r.dr.out[i][:0]
		r.dr.defs[i] = r.dr.defs[i][:0]
		if !final && s.core.Expired(realNow) {
			go s.closeWith(ErrLeaseExpired)
		}
	}
}

// dispatch decodes the ring packet at pos (head its head slot) for the
// sessions that wanted it, and returns how many positions it takes.
func (r *Resident) dispatch(q *ring, pos uint64, head *slot, tab *[MaxSessions]*Session) uint64 {
	ep, sid, kind, n, flags := unpackHdr(head.w[2])
	k := slotsFor(kind, int(n))
	to := current(head.w[1], ep, tab)
	var tuple, smask uint64
	var begin int64
	ex := extras(kind)
	late := ep // the later of its epochs
	if ex {
		x := q.at(pos + 1)
		tuple, begin, smask = x.w[0], int64(x.w[1]), x.w[2]
		sep := uint32(x.v[0].n)
		to |= current(smask, sep, tab)
		if int32(sep-ep) > 0 {
			late = sep
		}
	}
	s := r.sensors[sid]
	ft := s.frags.Load()
	if flags&slotDeleted != 0 {
		// A later use of the deleted entity gets its definition again
		// (whatever a fragment passes of its packet).
		defer (*Entity)(q.val(pos, ex, 0).p).seen.And(^to)
	}
	if ft != nil && !ft.early && to&ft.filtered != 0 {
		// The fragments the producer left to the drain (fragment.go). A
		// packet they reject for every session it was written for is not
		// wanted: not counted, not a loss.
		var rv [MaxAttrs]Value
		for i := range int(n) {
			v := q.val(pos, ex, i)
			switch s.vk[i] {
			case vkEnt:
				rv[i].E = (*Entity)(v.p)
			case vkStr:
				if v.n > 0 {
					rv[i].S = unsafe.String((*byte)(v.p), int(v.n))
				}
			default:
				rv[i].N = v.n
			}
		}
		if to &= ft.pass(&s.kinds, rv[:n]); to == 0 {
			return k
		}
	}
	r.dr.wanted[sid]++
	if int32(late-r.dr.newest) < 0 {
		r.staleFor(late, sid, tab)
	}
	if to&r.dr.full != 0 {
		to = r.shedDrain(to, sid)
	}
	if to == 0 {
		return k
	}
	vals := r.dr.newVals(int(n))
	for i := range int(n) {
		v := q.val(pos, ex, i)
		vals[i].Kind = s.kinds[i]
		switch s.vk[i] {
		case vkEnt:
			if e := (*Entity)(v.p); e != nil {
				vals[i].N = e.key
				r.define(e, to)
			}
		case vkStr:
			if v.n > 0 {
				vals[i].S = unsafe.String((*byte)(v.p), int(v.n))
			}
		default:
			vals[i].N = v.n
		}
	}
	p := wire.Packet{TS: int64(head.w[0]), Sensor: uint16(sid), Kind: kind, Tuple: tuple, Begin: begin, Vals: vals}
	for m := to; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		q := p
		if ft != nil {
			q.Vals = ft.project(i, vals, r.dr.newVals)
		}
		r.dr.out[i] = append(r.dr.out[i], q)
	}
	return k
}

// admit notes the sessions the round serves (tab), taking for one the
// drain did not serve last round (new at its index) the wanted counts
// at the last round's end as its base (Counts of a new session).
func (r *Resident) admit(tab *[MaxSessions]*Session) {
	r.dr.open = 0
	for i, s := range tab {
		if s != nil && r.dr.served[i] != s {
			for sid, w := range r.dr.bound {
				if w > 0 {
					s.core.Unwanted(uint16(sid), w)
				}
			}
			if len(r.dr.stale[i]) != len(r.sensors) {
				r.dr.stale[i] = make([]uint64, len(r.sensors))
			}
		}
		r.dr.served[i] = s
		if s == nil {
			continue
		}
		if r.dr.open == 0 || int32(s.openEpoch-r.dr.newest) > 0 {
			r.dr.newest = s.openEpoch
		}
		r.dr.open |= 1 << i
	}
}

// staleFor counts a packet of sensor sid made at epoch ep as stale for
// the sessions served that opened after ep.
func (r *Resident) staleFor(ep uint32, sid SensorID, tab *[MaxSessions]*Session) {
	for m := r.dr.open; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if int32(ep-tab[i].openEpoch) < 0 {
			r.dr.stale[i][sid]++
		}
	}
}

// define queues e's definition for the sessions in to that were not sent
// it yet.
func (r *Resident) define(e *Entity, to uint64) {
	if e.seen.Load()&to == to {
		return
	}
	old := e.seen.Or(to)
	for m := to &^ old; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		r.dr.defs[i] = append(r.dr.defs[i], e.def())
	}
}

// def returns the entity's definition.
func (e *Entity) def() wire.EntityDef {
	return wire.EntityDef{Key: e.key, Type: uint16(e.typ), ID: e.id}
}

// current returns the sessions of m (as of epoch ep) that are still the
// sessions at their index.
func current(m uint64, ep uint32, tab *[MaxSessions]*Session) uint64 {
	var to uint64
	for ; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if s := tab[i]; s != nil && int32(ep-s.openEpoch) >= 0 {
			to |= 1 << i
		}
	}
	return to
}

// wireVals converts resident values to wire values (allocating), and
// returns the entities they name.
func wireVals(s *Sensor, vals []Value) ([]wire.Value, []*Entity) {
	n := min(len(vals), int(s.nattr))
	out := make([]wire.Value, n)
	var ents []*Entity
	for i := range n {
		out[i].Kind = s.kinds[i]
		switch s.vk[i] {
		case vkEnt:
			if e := vals[i].E; e != nil {
				out[i].N = e.key
				ents = append(ents, e)
			}
		case vkStr:
			out[i].S = vals[i].S
		default:
			out[i].N = vals[i].N
		}
	}
	return out, ents
}

// samplePacket makes a sampled relation's packet for tuple t.
func samplePacket(s *Sensor, kind wire.PacketKind, ts int64, t *stateTuple) (wire.Packet, []*Entity) {
	vals, ents := wireVals(s, t.vals[:t.n])
	return wire.Packet{TS: ts, Sensor: uint16(s.id), Kind: kind, Tuple: t.id, Begin: t.begin, Vals: vals}, ents
}

// entitySnapshot makes the entity relation begin of a live entity (for a
// new session).
func entitySnapshot(rel *Sensor, e *Entity) wire.Packet {
	vals := make([]Value, 0, 1+len(e.state))
	vals = append(vals, Value{E: e})
	vals = append(vals, e.state...)
	wv, _ := wireVals(rel, vals)
	return wire.Packet{TS: e.begin, Sensor: uint16(rel.id), Kind: wire.PEntityBegin, Tuple: e.tuple, Vals: wv}
}

// counts returns the cumulative per-sensor counts (sensors with any).
func (r *Resident) counts() []wire.Count {
	var out []wire.Count
	for _, s := range r.sensors {
		w, d := s.wanted.Load(), s.drops.Load()
		if w+d > 0 {
			out = append(out, wire.Count{Sensor: uint16(s.id), Wanted: w + d, Drops: d})
		}
	}
	return out
}

// enqueue adds a packet (from a sampler, or Close's report of the
// intervals still open) to the session, with the definitions of the
// entities it names that the session lacks.
func (s *Session) enqueue(p wire.Packet, ents []*Entity) {
	s.core.Enqueue(p, func(add func(wire.EntityDef)) {
		for _, e := range ents {
			if old := e.seen.Or(s.bit); old&s.bit == 0 {
				add(e.def())
			}
		}
	})
}
