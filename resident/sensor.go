package resident

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// value kinds as a slot stores them.
const (
	vkNum uint8 = iota // Value.N
	vkEnt              // Value.E
	vkStr              // Value.S
)

// Sensor is one relation's sensor: what generated sensor code calls. The
// gate, Armed, is one atomic load and inlines; everything else is the
// slow path, taken only when some session (or the truth sink) may want
// what the sensor reports.
type Sensor struct {
	// armed counts the reasons to take the slow path: live entities with
	// a flag set, a whole-type enable (all ≠ 0), triggers targeting the
	// sensor, a truth sink; sampled sensors are always armed.
	armed atomic.Int32
	// all is the set of sessions with a whole-type enable.
	all atomic.Uint64
	// trigs are the triggers whose On is this sensor (copy on write, r.mu).
	trigs atomic.Pointer[[]*trigger]
	// frags are the sessions' fragments on this sensor (copy on write,
	// r.mu; fragment.go); fragList what they are built from (r.mu).
	frags    atomic.Pointer[fragTable]
	fragList []*fragment

	r     *Resident
	spec  *SensorSpec
	id    SensorID
	strat Strategy
	class Class
	nattr uint8
	evHdr uint64 // packHdr of an event packet with all values, epoch 0
	vk    [MaxAttrs]uint8
	kinds [MaxAttrs]wire.ValueKind
	// flag is the flag holder attribute (-1: none); ht its type; slot the
	// index of this sensor's flag word in the holder's entities (-1: the
	// sensor has no per-entity flags).
	flag int
	ht   TypeID
	slot int
	// st is the sampled-state table (sampled sensors only).
	st *stateTable
	// open are the traced intervals in progress, so the resident can report
	// those still open when the observation ends (traced sensors only).
	openMu sync.Mutex
	open   map[uint64]openInterval

	_ [cacheLine]byte
	// drops counts packets lost to a full ring (producers); wanted counts
	// the packets that reached the ring or a sampler's output (drain).
	drops  atomic.Uint64
	wanted atomic.Uint64
}

func newSensor(r *Resident, id SensorID, sp *SensorSpec) *Sensor {
	if len(sp.Attrs) > MaxAttrs {
		panic(fmt.Sprintf("resident: relation %s has %d attributes (at most %d)", sp.Name, len(sp.Attrs), MaxAttrs))
	}
	s := &Sensor{r: r, spec: sp, id: id, strat: sp.Strategy, class: sp.Class, nattr: uint8(len(sp.Attrs)), flag: sp.Flag, slot: -1}
	s.evHdr = packHdr(0, id, wire.PEvent, s.nattr, 0)
	for i, a := range sp.Attrs {
		s.kinds[i] = a.Kind
		switch a.Kind {
		case wire.VEntity:
			s.vk[i] = vkEnt
		case wire.VString:
			s.vk[i] = vkStr
		}
	}
	if sp.Flag >= len(sp.Attrs) {
		panic(fmt.Sprintf("resident: relation %s: flag holder %d out of range", sp.Name, sp.Flag))
	}
	if sp.Flag >= 0 {
		a := sp.Attrs[sp.Flag]
		if a.Kind != wire.VEntity {
			panic(fmt.Sprintf("resident: relation %s: flag holder %s is not an entity", sp.Name, a.Name))
		}
		s.ht = a.Type
		if s.traced() {
			s.slot = 0 // assigned by New
		}
	}
	if sp.Strategy == Sampled {
		s.st = &stateTable{}
		s.armed.Store(1) // StateBegin/StateEnd always record
	}
	if r.truth != nil {
		s.armed.Add(1)
	}
	return s
}

// traced reports whether the sensor is traced (T or D): the kind that
// CEnable and triggers address.
func (s *Sensor) traced() bool { return s.strat == Traced || s.strat == TracedThenDisabled }

// Armed reports whether the slow path may have something to do: some
// entity has the sensor's flag, a session enabled it for a whole type, a
// trigger targets it, or a truth sink is set. Generated code gates on it:
//
//	if s.Armed() {
//		v := [2]resident.Value{{E: p}, {E: m}}
//		s.Event(v[:])
//	}
//
// It is one atomic load and inlines.
func (s *Sensor) Armed() bool { return s.armed.Load() != 0 }

// want returns the sessions that want a packet with these values now —
// those whose enablement (own flags, trigger enables, whole-type enables)
// holds the flag holder — and the epoch the set is valid for.
func (s *Sensor) want(vals []Value) (uint64, uint32) {
	ep := &s.r.epoch
	for {
		e1 := ep.Load()
		m := s.all.Load()
		if s.slot >= 0 && s.flag < len(vals) {
			if e := vals[s.flag].E; e != nil && e.typ == s.ht {
				m |= e.flags[s.slot].Load()
			}
		}
		if ep.Load() == e1 {
			return m, e1
		}
	}
}

// put writes one packet to its P's ring and returns its timestamp (read
// after the slot is claimed: the drain's watermark rule depends on it);
// false if the ring was full (counted as a drop; the time is not read).
func (s *Sensor) put(kind wire.PacketKind, m uint64, ep uint32, tuple uint64, begin int64, smask uint64, sep uint32, vals []Value) (int64, bool) {
	r := s.r
	n := min(len(vals), int(s.nattr))
	ex := extras(kind)
	q := r.pin()
	pos, ok := q.reserve(slotsFor(kind, n), q.room, r.plain)
	if !ok {
		procUnpin()
		s.drops.Add(1)
		return 0, false
	}
	ts := r.now()
	head := q.at(pos)
	head.w = [3]uint64{uint64(ts), m, packHdr(ep, s.id, kind, uint8(n), 0)}
	if ex {
		x := q.at(pos + 1)
		x.w = [3]uint64{tuple, uint64(begin), smask}
		x.v[0] = slotVal{n: uint64(sep)}
	}
	for i := range n {
		*q.val(pos, ex, i) = encode(s.vk[i], &vals[i])
	}
	head.commit(pos)
	procUnpin()
	return ts, true
}

// putEvent1 is put for the common case: an event with at most two
// values, one slot. It is put with pin, reserve and the TSC clock's fast
// path written out (none inlines: each would be a call).
func (s *Sensor) putEvent1(m uint64, ep uint32, vals []Value) (int64, bool) {
	r := s.r
	pid := procPin()
	rs := *r.rings.Load()
	if pid >= len(rs) || rs[pid] == nil {
		procUnpin()
		return s.put(wire.PEvent, m, ep, 0, 0, 0, 0, vals) // makes the P's ring
	}
	q := rs[pid]
	pos := atomic.LoadUint64(&q.claim)
	if pos+1-q.head.Load() > q.room {
		procUnpin()
		s.drops.Add(1)
		return 0, false
	}
	if r.plain {
		storeRel(&q.claim, pos+1)
	} else {
		atomic.StoreUint64(&q.claim, pos+1)
	}
	var ts int64
	if c := r.tsc; c != nil {
		sg := c.seg.Load()
		var t uint64
		if c.lf {
			t = rdtscLfence()
		} else {
			t = rdtscp()
		}
		if t-sg.t0 < sg.span {
			ts = sg.at(t)
		} else {
			ts = c.slow(t)
		}
	} else {
		ts = r.clock()
	}
	sl := q.at(pos)
	sl.w = [3]uint64{uint64(ts), m, s.evHdr | uint64(ep)}
	if s.nattr > 0 {
		sl.v[0] = encode(s.vk[0], &vals[0])
		if s.nattr > 1 {
			sl.v[1] = encode(s.vk[1], &vals[1])
		}
	}
	sl.commit(pos)
	procUnpin()
	return ts, true
}

// encode stores a value by its attribute's kind (no allocation: an entity
// pointer, a string header, or a number).
func encode(vk uint8, v *Value) slotVal {
	switch vk {
	case vkEnt:
		return slotVal{p: unsafe.Pointer(v.E)}
	case vkStr:
		return slotVal{p: unsafe.Pointer(unsafe.StringData(v.S)), n: uint64(len(v.S))}
	}
	return slotVal{n: v.N}
}

// Event reports an event tuple (T or D sensor), vals in attribute order.
// The packet goes to the sessions whose enablement holds the flag holder
// now. A D (traced-then-disabled) sensor decrements the flag's counter on
// firing and the resident re-arms it at once while a session still holds
// the entity, so the net effect — implemented as such, with no counter
// traffic — is that a D sensor fires for every tuple while enabled, like
// a T sensor; see the package documentation.
func (s *Sensor) Event(vals []Value) {
	m, ep := s.want(vals)
	to := m // m filtered by the fragments the producer evaluates
	if ft := s.frags.Load(); ft != nil && ft.early {
		to &= ft.pass(&s.kinds, vals)
	}
	if to == 0 {
		if m != 0 && s.trigs.Load() != nil {
			s.runTriggers(m, ep, vals, 0)
		}
		if s.r.truth != nil {
			s.r.truth.Event(s.id, s.r.truthVals(vals), s.r.now())
		}
		return
	}
	var ts int64
	var ok bool
	// Not written when every session it is for is full (shed.go); else
	// written for all of them, the full ones too: the drain drops it for
	// those (after its own filter, which may reject it for every session).
	switch {
	case to&^s.r.full.Load() == 0:
		s.shed(to, ep)
	case s.nattr <= 2 && len(vals) >= int(s.nattr):
		ts, ok = s.putEvent1(to, ep, vals)
	default:
		ts, ok = s.put(wire.PEvent, to, ep, 0, 0, 0, 0, vals)
	}
	if s.trigs.Load() != nil {
		var at int64
		if ok {
			at = ts
		}
		s.runTriggers(m, ep, vals, at)
	}
	if s.r.truth != nil {
		if !ok {
			ts = s.r.now()
		}
		s.r.truth.Event(s.id, s.r.truthVals(vals), ts)
	}
}

// Begin reports that an interval tuple of a traced (T or D) sensor begins
// and returns its handle, which generated code keeps (by value) until End.
// Call it for every interval, armed or not: it always reads the clock,
// because End may need the begin time (a tuple enabled only at its end is
// reported whole). Disarmed, that is all it does. A T sensor sends PBegin
// to the sessions enabled now; a D sensor sends nothing until End.
func (s *Sensor) Begin(vals []Value) Interval {
	if s.armed.Load() == 0 {
		iv := Interval{Begin: s.r.now()}
		if s.traced() {
			iv.ID = s.r.tupleID()
			s.remember(iv, vals)
		}
		return iv
	}
	return s.begin(vals)
}

// openInterval is a traced interval in progress.
type openInterval struct {
	vals  [MaxAttrs]Value
	n     int
	begin int64
	mask  uint64 // sessions its begin was sent to
	epoch uint32
}

// remember records an interval in progress. Every traced interval is
// remembered, enabled or not, because a session that holds its flag when
// the observation ends is told of it then (an interval begun, not yet
// ended, is valid until forever). This costs an interval's begin a table
// entry besides its clock read.
func (s *Sensor) remember(iv Interval, vals []Value) {
	o := openInterval{n: len(vals), begin: iv.Begin, mask: iv.mask, epoch: iv.epoch}
	copy(o.vals[:], vals)
	s.openMu.Lock()
	if s.open == nil {
		s.open = map[uint64]openInterval{}
	}
	s.open[iv.ID] = o
	s.openMu.Unlock()
}

// forget removes an interval that ends from the table and returns the
// sessions its begin was sent to, late begins (beginOpen) included, and
// the epoch of the last begin sent.
func (s *Sensor) forget(id uint64) (uint64, uint32) {
	s.openMu.Lock()
	o := s.open[id]
	delete(s.open, id)
	s.openMu.Unlock()
	return o.mask, o.epoch
}

// beginOpen sends session bit, just enabled on s for the entities match
// accepts (nil: all), a begin for each traced interval in progress that
// the session now wants and was not sent the begin of (the resident's
// lock held). The begin is stamped now and carries when the tuple
// began, so a monitor whose observation starts after these commands
// were applied (Batch.AppliedAt) sees every tuple in progress at its
// start begin there, on time, not only at its end (when the α, taking
// it to be on time, could have purged the partners it needs); a monitor
// enabling later takes such a tuple whole at its end, as before
// (exec's α). Its end goes to the session like any begun tuple's (End
// adds the sessions forget returns). A full ring drops the begin,
// counted as a drop as any packet's, and the tuple is then reported by
// its end alone.
func (r *Resident) beginOpen(s *Sensor, bit uint64) {
	if s.strat != Traced || s.class != ClassInterval {
		return
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	for id, o := range s.open {
		if o.mask&bit != 0 {
			continue
		}
		vals := o.vals[:o.n]
		m, ep := s.want(vals)
		if m&bit == 0 {
			continue
		}
		if _, ok := s.put(wire.PBegin, bit, ep, id, o.begin, 0, 0, vals); ok {
			// The end goes to o.mask's sessions open at o.epoch: the
			// newer epoch holds for the older sessions too.
			o.mask, o.epoch = o.mask|bit, ep
			s.open[id] = o
		}
	}
}

// reportOpen tells each session that holds the flag of a traced interval
// still in progress, or is owed its end (owe.go), and was not sent its
// begin, of that interval, whole and valid until forever (a packet at the
// largest time). The resident is closing: the observation ends.
func (r *Resident) reportOpen(tab *[MaxSessions]*Session) {
	for _, s := range r.sensors {
		if !s.traced() {
			continue
		}
		s.openMu.Lock()
		for id, o := range s.open {
			vals := o.vals[:o.n]
			m, ep := s.want(vals)
			to := current(m, ep, tab)
			// And those owed its end (owe.go): a while trigger took
			// the enable back while it was in progress, and it ends
			// after (as at End).
			if owed, oep := s.owed(vals, o.begin, m); owed != 0 {
				to |= current(owed, oep, tab)
			}
			m = to &^ o.mask
			if m == 0 {
				continue
			}
			wv, ents := wireVals(s, vals)
			p := wire.Packet{TS: math.MaxInt64, Sensor: uint16(s.id), Kind: wire.PWhole, Tuple: id, Begin: o.begin, Vals: wv}
			for i := range session.Indices(m) {
				tab[i].enqueue(p, ents)
			}
		}
		s.openMu.Unlock()
	}
}

func (s *Sensor) begin(vals []Value) Interval {
	r := s.r
	if !s.traced() {
		return Interval{Begin: r.now()} // not an interval sensor's call
	}
	var iv Interval
	iv.ID = r.tupleID()
	defer func() { s.remember(iv, vals) }()
	var m uint64
	var ep uint32
	if s.strat == Traced {
		m, ep = s.want(vals)
	}
	to := m // m filtered by the fragments the producer evaluates
	if ft := s.frags.Load(); ft != nil && ft.early && m != 0 {
		to &= ft.pass(&s.kinds, vals)
	}
	if to == 0 {
		iv.Begin = r.now()
	} else {
		var ok bool
		iv.Begin, ok = s.put(wire.PBegin, to, ep, iv.ID, 0, 0, 0, vals)
		if ok {
			iv.Sent, iv.mask, iv.epoch = true, to, ep
		} else {
			iv.Begin = r.now()
		}
	}
	if m != 0 {
		if s.trigs.Load() != nil {
			s.runTriggers(m, ep, vals, 0)
		}
	}
	if r.truth != nil {
		r.truth.Begin(s.id, iv.ID, r.truthVals(vals), iv.Begin)
	}
	return iv
}

// End reports that the interval iv ends, vals as at Begin. A T sensor
// sends PEnd (with the begin time and values) to the sessions its begin
// went to and to those enabled now; a D sensor sends the whole tuple
// (PWhole) to the sessions enabled now, then re-arms as Event describes.
// Disarmed with nothing sent at Begin, End returns at once (it inlines).
// On a sensor that is not traced, End does nothing.
func (s *Sensor) End(iv Interval, vals []Value) {
	if s.armed.Load() == 0 && iv.mask == 0 {
		if iv.ID != 0 && s.traced() {
			if late, ep := s.forget(iv.ID); late != 0 {
				// A session was sent a late begin (beginOpen) and was
				// disabled since: it is still owed the end.
				iv.mask, iv.epoch = late, ep
				s.end(iv, vals)
			}
		}
		return
	}
	s.end(iv, vals)
}

func (s *Sensor) end(iv Interval, vals []Value) {
	r := s.r
	if !s.traced() {
		return
	}
	if iv.ID != 0 {
		// Late begins (beginOpen) too.
		if late, ep := s.forget(iv.ID); late&^iv.mask != 0 {
			iv.mask, iv.epoch = iv.mask|late, ep
		}
	}
	m, ep := s.want(vals)
	kind := wire.PEnd
	if s.strat == TracedThenDisabled {
		kind = wire.PWhole
		iv.mask = 0 // a D sensor sends nothing at Begin
	}
	// Sessions whose while trigger took the entity's enable back while
	// the tuple was in progress are owed its end (owe.go; read after
	// want, as takeBack records before it clears).
	if owed, oep := s.owed(vals, iv.Begin, m); owed&^iv.mask != 0 {
		if iv.mask == 0 || int32(oep-iv.epoch) > 0 {
			iv.epoch = oep
		}
		iv.mask |= owed
	}
	// Filtered as the begin was (same values), except for a fragment
	// installed or removed in between. The producer's filter leaves the
	// sessions the begin went to (iv.mask) alone, so they get the end
	// whatever their fragments. The drain's filter (fragment.go) sees both
	// masks: a fragment that rejects the end installed after a begin
	// passed would leave that interval open at the monitor — which can only
	// be an interval its own σ rejects (the fragment holds of every tuple
	// that can reach a result), and a monitor installs its fragments before
	// it starts anyway.
	to := m
	if ft := s.frags.Load(); ft != nil && ft.early && m != 0 {
		to &= ft.pass(&s.kinds, vals)
	}
	var ts int64
	ok := false
	if to != 0 || iv.mask != 0 {
		if iv.ID == 0 {
			iv.ID = r.tupleID()
		}
		ts, ok = s.put(kind, to, ep, iv.ID, iv.Begin, iv.mask, iv.epoch, vals)
	} else if m == 0 {
		if r.truth != nil {
			r.truth.End(s.id, iv.ID, r.now())
		}
		return
	}
	if !ok && r.truth != nil {
		ts = r.now()
	}
	if s.trigs.Load() != nil {
		s.runTriggers(m, ep, vals, 0)
		if extra := iv.mask &^ m; extra != 0 {
			s.runTriggers(extra, iv.epoch, vals, 0)
		}
	}
	if r.truth != nil {
		r.truth.End(s.id, iv.ID, ts)
	}
}

// truthVals copies vals for the truth sink (which may keep them; the
// caller's values usually live on its stack).
func (r *Resident) truthVals(vals []Value) []Value {
	return append([]Value(nil), vals...)
}
