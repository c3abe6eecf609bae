package kernel

import (
	"fmt"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// The drain, every millisecond while some session is open:
//
//  1. read the monotonic clock (D0), then walk every record committed in
//     the entity ring and the packet ring since the last walk, noting
//     each (its time and where it lies) without copying it: the ring
//     holds a record's bytes until the drain frees its room (ringQ).
//     Programs read the clock after reserving their record, so a record
//     not walked now was reserved after the rings' producer positions
//     were read, after D0: its time is ≥ D0;
//  2. in time order, apply the records stamped before W = D0 − 1 (entity
//     records update the entity table and become entity relation
//     packets for every session; sensor records become packets for the
//     sessions that enable their flag holder), but stop once the session
//     with the most room has as many packets as it can hold
//     (session.Core.Room, read before the round: what it has left of
//     MaxHeld, its reserve and its share of the budget) or roundMax
//     records were applied, and lower W to just before the first record
//     not applied; keep the others noted for a later round;
//  3. free, in each ring, the room of the records applied that no record
//     not applied precedes (the consumer position only moves forward);
//  4. hand each session its packets with watermark W and the cumulative
//     counts of packets dropped (the kernel's) and wanted (those drops and
//     the records applied: decidedCounts), less the records applied that
//     it was not sent (unwant, ownCounts)
//     (session.Core.Handoff, the roomiest session first: its batches are
//     in order because every packet of a later round is stamped after W,
//     as steps 1 and 2 argue). Handoff gives the session's batch the
//     round's packets, and the first such batch the round's arena of
//     values, instead of copies (the mailbox's "Memory"); the drain
//     fills the emptied storage of a released batch next round.
//
// So a consumer that falls behind loses nothing to its session's bounds:
// the records it cannot take yet stay in the ring, where the kernel
// counts what does not fit as drops — the same drops it counts when the
// drain is late, which every batch reports, so nothing is lost silently.
// The drain itself holds no record's bytes: what it holds for the
// records walked and not applied is their notes (a record, 24 bytes, and
// a done flag, 1) — at most one per record the ring can hold, at most
// RingBytes/16 (a record takes at least a header and a time: 16 bytes),
// so at most 25/16·RingBytes, twice that with the slack of the slices'
// growth (the default ring: 12.5 MiB, 25 at most; for Syscall's 48-byte
// records in the ring, half the ring's size, a ring's at most) —
// TestDrainHoldsNoBytes. Before, it copied the records it held into
// arenas: up to three times the ring's size. Sessions with
// less room than the roomiest still drop what does not fit them
// (counted: Count.Drops), so a session that never reads cannot stall the
// others (TestKernelHostileNeverReads).

// ringQ is what the drain knows of one ring: the position it has walked
// to, and whether each record walked and not freed is done with (applied,
// or needing no applying), in ring order: done[k] is the record numbered
// base+k (pending refers to records by number, modulo 2^32: fewer are
// ever held). Where a record ends is read again from its header, in the
// ring, when its room is freed.
type ringQ struct {
	r      *ring
	walked uint64
	done   []bool
	head   int // done[:head] are freed
	base   uint32
}

func newRingQ(r *ring) ringQ { return ringQ{r: r, walked: r.consumed()} }

// read walks the ring's new records, appending those to apply to
// pending (entity marks the entity ring); f, if set, sees each record's
// bytes first and says whether to apply it.
func (t *tracker) read(q *ringQ, entity bool, f func([]byte) bool) {
	q.walked = q.r.walk(q.walked, func(pos uint64, b []byte) {
		seq := q.base + uint32(len(q.done))
		ok := b != nil && (f == nil || f(b))
		q.done = append(q.done, !ok)
		if ok {
			off := (pos + ringHdrSize) & q.r.mask
			t.pending = append(t.pending, record{ts: int64(le.Uint64(b)), seq: seq, off: uint32(off), n: uint32(len(b)), entity: entity})
		}
	})
}

// readEvents walks the packet ring.
func (t *tracker) readEvents() {
	if t.readN == nil {
		t.readN = make([]uint64, len(t.delivered))
	}
	t.read(&t.evQ, false, func(b []byte) bool {
		if len(b) < bpfgen.EventHeader {
			t.bad++
			return false
		}
		if id := int(le.Uint16(b[bpfgen.OffSensor:])); id < len(t.readN) {
			t.readN[id]++
		}
		return true
	})
	for id, n := range t.readN {
		if n > 0 {
			t.delivered[id].Add(n)
			t.readN[id] = 0
		}
	}
}

// readEnts walks the entity ring.
func (t *tracker) readEnts() {
	t.read(&t.entQ, true, func(b []byte) bool { return len(b) >= 8 })
}

// queue returns the ring a record lies in.
func (t *tracker) queue(r *record) *ringQ {
	if r.entity {
		return &t.entQ
	}
	return &t.evQ
}

// bytes returns a record's bytes, in its ring.
func (t *tracker) bytes(r *record) []byte {
	d := t.queue(r).r.data
	end := int(r.off) + int(r.n)
	return d[r.off:end:end]
}

// applied marks a record applied.
func (t *tracker) applied(r *record) {
	q := t.queue(r)
	q.done[r.seq-q.base] = true
}

// free gives back to the kernel the room of the records done that no
// record not done precedes (step 3), and forgets them.
func (q *ringQ) free() {
	h := q.head
	pos := q.r.consumed()
	for h < len(q.done) && q.done[h] {
		pos = q.r.next(pos)
		h++
	}
	if h == q.head {
		return
	}
	q.r.free(pos)
	q.head = h
	if q.head >= len(q.done)-q.head { // compacting costs no more than freeing did
		n := copy(q.done, q.done[q.head:])
		q.done = q.done[:n]
		q.base += uint32(q.head)
		q.head = 0
	}
}

// roundMax bounds the records a round applies (but the last), so that
// the resident's lock is never held long: a remote renewing its lease,
// a command, waits for one round at most (≈ 10 ms of decoding). A lease
// is judged at the round's start (D0), before the round's own delay.
const roundMax = 1 << 14

func byTime(a, b record) int {
	switch {
	case a.ts < b.ts:
		return -1
	case a.ts > b.ts:
		return 1
	case a.entity != b.entity: // a task's creation before its packets
		if a.entity {
			return -1
		}
		return 1
	}
	return 0
}

func (t *tracker) round(final bool) {
	r := t.r
	d0 := monoNow()
	// The round's arena: the last round's values were copied out of it,
	// or it went to a batch and this is a released batch's (Handoff).
	// Not cleared: the values it held keep their strings alive until
	// written over, as a released batch's arena does.
	t.vals = t.vals[:0]
	t.readEnts()
	t.readEvents()
	// The records held from the last round are in order; sort what was
	// read, and merge it in when it does not simply follow them: only
	// the held records after its first need sorting again.
	tail := t.pending[t.sorted:]
	if !slices.IsSortedFunc(tail, byTime) { // (mostly they are: one CPU's, or few)
		slices.SortStableFunc(tail, byTime)
	}
	if t.sorted > t.head && len(tail) > 0 && byTime(t.pending[t.sorted-1], tail[0]) > 0 {
		held := t.pending[t.head:t.sorted]
		pos, _ := slices.BinarySearchFunc(held, tail[0], func(x, y record) int {
			if byTime(x, y) > 0 {
				return 1
			}
			return -1
		})
		slices.SortStableFunc(t.pending[t.head+pos:], byTime)
	}
	live := t.pending[t.head:]
	w := d0 - 1
	cut := len(live)
	if !final {
		cut, _ = slices.BinarySearchFunc(live, w+1, func(x record, ts int64) int {
			switch {
			case x.ts < ts:
				return -1
			case x.ts > ts:
				return 1
			}
			return 0
		})
		for cut < len(live) && live[cut].ts <= w {
			cut++
		}
	}
	r.mu.Lock()
	t.routed, t.memo.ok = false, false // (see route, memo)
	// The session with the most room, and its room (step 2).
	best, room := -1, 0
	for i := range session.Indices(r.sessions.Mask()) {
		if k := r.sessions.At(i).core.Room(); best < 0 || k > room {
			best, room = i, k
		}
	}
	applied := 0
	for ; applied < cut; applied++ {
		if !final && (applied >= roundMax || best >= 0 && len(t.out.pk[best]) >= room) {
			break
		}
		rec := &live[applied]
		if rec.ts <= t.lastW {
			// Stamped before a watermark already sent (a clock read
			// reordered around the reservation): keep the promise.
			rec.ts = t.lastW + 1
			t.late++
		}
		if rec.entity {
			t.ents.record(t.bytes(rec), rec.ts, &t.out)
		} else {
			t.packet(t.bytes(rec), rec.ts, &t.out)
		}
		t.applied(rec)
	}
	t.entQ.free()
	t.evQ.free()
	if applied < cut {
		w = min(w, live[applied].ts-1)
	}
	if final && applied > 0 {
		w = max(w, live[applied-1].ts)
	}
	w = max(w, t.lastW)
	t.head += applied
	t.sorted = len(t.pending)
	if t.head >= len(t.pending)-t.head { // compacting costs no more than applying did
		n := copy(t.pending, t.pending[t.head:])
		t.pending = t.pending[:n]
		t.head, t.sorted = 0, n
	}
	t.lastW = w
	if t.rounds++; t.rounds%1000 == 0 {
		t.ents.prune(w)
	}
	t.reportOver()
	counts := t.decidedCounts()
	now := monoNow()
	var expired []*Session
	handed := false
	deliver := func(i int) {
		s := r.sessions.At(i)
		c := counts
		if s.filteredOut {
			c = t.ownCounts(s, counts)
		}
		// The first session whose batch takes the round's packets and
		// arena (Handoff) owns the arena: the others' packets that name
		// its values are copied out of it now, in this round, before
		// that batch can be released and its arena reused (a later
		// round's Handoff of the session gives it back to the drain).
		arena := &t.vals
		if handed {
			arena = nil
		}
		t.peak[i] = max(t.peak[i], len(t.out.pk[i]))
		if s.core.Handoff(&t.out.pk[i], arena, t.out.defs[i], w, c, now, final) {
			handed = true
		}
		t.out.pk[i], t.out.defs[i] = t.out.pk[i][:0], t.out.defs[i][:0]
		if !final && s.core.Expired(d0) {
			expired = append(expired, s)
		}
	}
	if best >= 0 {
		deliver(best) // first: the others take nothing from its room
	}
	for i := range session.Indices(r.sessions.Mask()) {
		if i != best {
			deliver(i)
		}
	}
	t.trim()
	for k := range t.rearm {
		if ss := r.sensors[k.sensor]; ss != nil && ss.att != nil && ss.att.tr == t {
			writeFlag(ss, k.id)
		}
		delete(t.rearm, k)
	}
	r.mu.Unlock()
	for _, s := range expired {
		go s.closeWith(session.ErrLeaseExpired)
	}
}

// trimEvery is how many rounds the drain's storage is judged over
// (trim).
const trimEvery = 64

// trim drops, every trimEvery rounds, the drain's storage that is far
// larger than the rounds since needed — more than twice their largest, or
// than the mailbox's floor (session.Core.Handoff takes storage up to
// twice what a round holds): a released batch of a slow phase, handed to
// the drain, would else keep every later round from being handed over
// (copied instead), as long as the drain kept it. A round's peak is kept
// in peak (per session: its packets) and peakVals (the arena).
func (t *tracker) trim() {
	t.peakVals = max(t.peakVals, len(t.vals))
	if t.rounds%trimEvery != 0 {
		return
	}
	for i := range t.out.pk {
		if cap(t.out.pk[i]) > 2*max(t.peak[i], session.HandFloor) {
			t.out.pk[i] = nil
		}
		t.peak[i] = 0
	}
	if cap(t.vals) > 2*max(t.peakVals, 4*session.HandFloor) {
		t.vals = nil
	}
	t.peakVals = 0
}

// sendAll sends an entity packet to every session (r.mu).
func (t *tracker) sendAll(out *roundOut, p wire.Packet, ents []*entity) {
	if out == nil {
		return
	}
	t.send(out, t.r.sessions.Mask(), p, ents)
}

// send sends a packet to the sessions in mask, with the definitions of
// the entities it names that a session lacks (r.mu).
func (t *tracker) send(out *roundOut, mask uint64, p wire.Packet, ents []*entity) {
	for i := range session.Indices(mask & t.r.sessions.Mask()) {
		s := t.r.sessions.At(i)
		for _, e := range ents {
			if s.recent[0] == e || s.recent[1] == e {
				continue
			}
			if !s.defined[e.key] {
				s.defined[e.key] = true
				out.defs[i] = append(out.defs[i], e.def())
			}
			s.recent[0], s.recent[1] = e, s.recent[0]
		}
		out.pk[i] = append(out.pk[i], p)
	}
}

// route returns the sessions that enable sensor id for entity num. The
// last answer is kept for the round (routed): enables change only by
// commands, under r.mu, which the round holds.
func (t *tracker) route(sensor int, num uint32) uint64 {
	k := flagKey{sensor, num}
	if t.routed && t.routeKey == k {
		return t.routeMask
	}
	mask := t.routeAll(sensor, num)
	t.routed, t.routeKey, t.routeMask = true, k, mask
	return mask
}

// routeAll is route without its memory.
func (t *tracker) routeAll(sensor int, num uint32) uint64 {
	var mask uint64
	for i := range session.Indices(t.r.sessions.Mask()) {
		if t.r.sessions.At(i).holds(sensor, num) {
			mask |= 1 << i
		}
	}
	return mask
}

// packet turns a sensor record into packets for the sessions that want
// it (r.mu).
func (t *tracker) packet(b []byte, ts int64, out *roundOut) {
	r := t.r
	sid := int(le.Uint16(b[bpfgen.OffSensor:]))
	kind := bpfgen.Kind(b[bpfgen.OffKind])
	bi := int(b[bpfgen.OffBinding])
	if sid >= len(r.sensors) || r.sensors[sid] == nil || bi >= len(r.sensors[sid].s.Bindings) {
		t.bad++
		return
	}
	ss := r.sensors[sid]
	bd := ss.s.Bindings[bi]
	if sid < len(t.decided) {
		t.decided[sid]++
	}
	if kind == bpfgen.KindEnd {
		if len(b) < bpfgen.IntervalHeader {
			t.bad++
			return
		}
		k := beginKey{uint16(sid), uint8(bi), le.Uint64(b[bpfgen.OffKey:]), le.Uint64(b[bpfgen.OffKey+8:])}
		// The end goes where the begin went: to the sessions noted
		// with it that are still open (a session's end clears its bit:
		// leave), none other, and no other session wants it.
		bt := t.begun[k]
		if bt == nil {
			t.unwant(r.sessions.Mask(), sid)
			return
		}
		delete(t.begun, k)
		if rest := r.sessions.Mask() &^ bt.mask; rest != 0 {
			t.unwant(rest, sid)
		}
		if bt.mask != 0 {
			t.send(out, bt.mask, wire.Packet{TS: ts, Sensor: uint16(sid), Kind: wire.PEnd, Tuple: bt.tuple, Begin: bt.begin, Vals: bt.vals}, bt.ents)
		}
		return
	}
	if len(b) < bd.Layout.Size {
		t.bad++
		return
	}
	var vals []wire.Value
	var ents []*entity
	var flag uint32
	var mask uint64
	if m := &t.memo; kind == bpfgen.KindEvent && m.ok && m.gen == t.ents.gen && string(m.body) == string(b[8:]) {
		// The same event as the last decoded (but for its time): the
		// same values, entities and sessions (see memo).
		vals, ents, flag, mask = m.vals, m.ents, m.flag, m.mask
		t.memoHits++
	} else {
		vals, ents, flag = t.decode(ss, bd, b, ts, out)
		mask = t.route(sid, flag)
		if mask == 0 {
			mask = t.routeRoot(ss, flag)
		}
		// Each session only what its own fragments pass (sieve; a
		// session without a predicate on the sensor is not tested: the
		// nil check is all it costs).
		if sv := ss.sieve; sv != nil && mask&sv.filtered != 0 {
			mask &^= mask & sv.filtered &^ sv.pass(vals, ents)
		}
		if kind == bpfgen.KindEvent {
			m.ok, m.gen, m.flag, m.mask = true, t.ents.gen, flag, mask
			m.body = append(m.body[:0], b[8:]...)
			m.vals = vals
			// A copy: ents is decode's scratch, which the next record
			// decoded writes over — an interval's begin, which the memo
			// does not hold, in between two alike events.
			m.ents = append(m.ents[:0], ents...)
			ents = m.ents
		}
	}
	if ss.s.Decrement {
		t.rearm[flagKey{sid, flag}] = true
	}
	// A session not sent the packet — its selection filtered it out, or
	// it enables the sensor for other entities, or not at all — does not
	// want it (its counts: unwant). One AND when every session is sent it.
	if rest := r.sessions.Mask() &^ mask; rest != 0 {
		t.unwant(rest, sid)
	}
	if mask == 0 {
		if kind == bpfgen.KindBegin { // its end finds no begin: wanted by none either
			delete(t.begun, beginKey{uint16(sid), uint8(bi), le.Uint64(b[bpfgen.OffKey:]), le.Uint64(b[bpfgen.OffKey+8:])})
		}
		return
	}
	p := wire.Packet{TS: ts, Sensor: uint16(sid), Vals: vals}
	switch kind {
	case bpfgen.KindEvent:
		p.Kind = wire.PEvent
	case bpfgen.KindBegin:
		p.Kind, p.Tuple, p.Begin = wire.PBegin, t.tupleID(), ts
		k := beginKey{uint16(sid), uint8(bi), le.Uint64(b[bpfgen.OffKey:]), le.Uint64(b[bpfgen.OffKey+8:])}
		t.begun[k] = &begunTuple{tuple: p.Tuple, begin: ts, vals: slices.Clone(vals), ents: slices.Clone(ents), mask: mask}
	case bpfgen.KindWhole:
		p.Kind, p.Tuple, p.Begin = wire.PWhole, t.tupleID(), int64(le.Uint64(b[bpfgen.OffBegin:]))
		if p.Begin >= ts {
			p.Begin = ts - 1
		}
	default:
		t.bad++
		return
	}
	t.send(out, mask, p, ents)
}

// unwant counts a packet of sensor sid that the kernel counted wanted and
// the drain did not send the sessions in mask — their fragments filtered
// it out, or they do not enable the sensor for its flag holder, or (an
// interval's end) its begin did not go to them: it is not wanted by them
// (r.mu). Their counts subtract it (ownCounts), so that for each session
// delivered + dropped = wanted holds exactly, with wanted what its own
// enables and selection passed — as in the Go resident, where a packet is
// wanted by the sessions it is written for.
func (t *tracker) unwant(mask uint64, sid int) {
	for i := range session.Indices(mask & t.r.sessions.Mask()) {
		s := t.r.sessions.At(i)
		s.unwanted[sid]++
		s.filteredOut = true
	}
}

// ownCounts returns counts, the resident's, as session s wants them: less
// what its fragments filtered out (unwant). The result is valid until the
// next call (Deliver copies it).
func (t *tracker) ownCounts(s *Session, counts []wire.Count) []wire.Count {
	t.countBuf = append(t.countBuf[:0], counts...)
	for i := range t.countBuf {
		c := &t.countBuf[i]
		if int(c.Sensor) < len(s.unwanted) {
			c.Wanted -= min(c.Wanted, s.unwanted[c.Sensor])
		}
	}
	return t.countBuf
}

// decode reads a record's values; it returns the entities they name and
// the flag holder's number.
func (t *tracker) decode(ss *sensorState, bd *bpfgen.Binding, b []byte, ts int64, out *roundOut) ([]wire.Value, []*entity, uint32) {
	rel := ss.s.Rel
	// The values live in the round's arena (arena); a begun interval
	// keeps its own copy (packet).
	k := len(t.vals)
	t.vals = append(t.vals, make([]wire.Value, len(rel.Attrs))...)
	vals := t.vals[k:len(t.vals):len(t.vals)]
	ents := t.entScratch[:0]
	var flag uint32
	for i := range bd.Layout.Slots {
		sl := &bd.Layout.Slots[i] // (not a copy: a Slot is large)
		raw := b[sl.Off : sl.Off+sl.Size]
		if sl.Str {
			vals[i] = wire.Value{Kind: wire.VString, S: cstring(raw)}
			continue
		}
		n := le.Uint64(raw)
		a := rel.Attrs[i]
		switch {
		case sl.Entity != "":
			typ := typeProcess
			switch sl.Entity {
			case "Thread":
				typ = typeThread
			case "Processor":
				typ = typeProcessor
			}
			e := t.ents.lookup(typ, uint32(n), ts, out)
			ents = append(ents, e)
			if e.proc != nil {
				ents = append(ents, e.proc)
			}
			vals[i] = wire.Value{Kind: wire.VEntity, N: e.key}
		case sl.Decode == bpfgen.DecodeSyscall:
			var name string
			if n < uint64(len(t.r.syscalls)) {
				name = t.r.syscalls[n]
			}
			if name == "" {
				name = fmt.Sprintf("syscall_%d", n)
			}
			vals[i] = wire.Value{Kind: wire.VString, S: name}
		case sl.Decode == bpfgen.DecodeTaskState:
			vals[i] = wire.Value{Kind: wire.VEnum, N: uint64(max(a.Type.Enum.Ordinal(taskState(n)), 0))}
		default:
			vals[i] = wire.Value{Kind: valueKind(a.Type.Kind), N: n}
			if a.Type.Kind == algebra.KindBool && n != 0 {
				vals[i].N = 1
			}
			if a.Type.Kind == algebra.KindEnum && n >= uint64(len(a.Type.Enum.Members)) {
				vals[i].N = uint64(len(a.Type.Enum.Members) - 1)
			}
		}
		if i == ss.s.Flag {
			flag = uint32(n)
		}
	}
	t.entScratch = ents
	return vals, ents, flag
}

func valueKind(k algebra.Kind) wire.ValueKind {
	switch k {
	case algebra.KindBool:
		return wire.VBool
	case algebra.KindTime:
		return wire.VTime
	case algebra.KindDuration:
		return wire.VDuration
	case algebra.KindEnum:
		return wire.VEnum
	}
	return wire.VInt
}

// taskState names a sched_switch prev_state (see bpfgen.TaskStates).
func taskState(s uint64) string {
	switch {
	case s == 0:
		return "Preempted"
	case s&0x400 != 0 && s&2 != 0: // TASK_IDLE = TASK_UNINTERRUPTIBLE | TASK_NOLOAD
		return "Idle"
	case s&1 != 0:
		return "Sleeping"
	case s&2 != 0:
		return "Blocked"
	}
	return "Other"
}
