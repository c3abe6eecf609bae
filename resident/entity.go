package resident

import (
	"sync/atomic"
	"unsafe"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Entity is a live entity of the subject system (a process, a mailbox…).
// Generated code creates one with Resident.Create, passes it as an entity
// value (Value.E) to sensors, and deletes it when the subject's object
// goes away.
type Entity struct {
	// flags[k] is the set of sessions (by index) whose enablement holds
	// this entity for the k-th traced sensor whose flag holder is of the
	// entity's type. The hot path reads it; r.mu writes it.
	flags []atomic.Uint64
	// seen is the set of sessions (by index) that were sent the entity's
	// EntityDef (set by the drain and samplers, and by Open for the live
	// entities it defines; cleared when the entity's deletion is sent).
	seen atomic.Uint64
	// owed records the while triggers' disables on the entity whose
	// tuples in progress are still owed their end (owe.go).
	owed atomic.Pointer[oweTab]
	typ  TypeID
	r    *Resident
	id   string
	key  uint64

	// The entity relation's current tuple (r.mu).
	tuple uint64
	begin int64
	state []Value
	dead  bool
}

// ID returns the entity's identifier (as remote monitors see it).
func (e *Entity) ID() string { return e.id }

// Key returns the entity's internal identity: unique for the resident's
// life, even when an ID is reused. Packets carry keys; EntityDefs map them
// to (type, ID).
func (e *Entity) Key() uint64 { return e.key }

// Type returns the entity's type.
func (e *Entity) Type() TypeID { return e.typ }

// entTuple is one entity relation tuple in an entity packet.
type entTuple struct {
	tuple uint64
	begin int64
	state []Value
}

// Create registers a new entity of type t and begins its entity relation
// tuple (the entity itself, then state) — delivered to every session. The
// flags sessions set for this ID before it existed (pending enables)
// apply now; whole-type enables apply to it as to every entity of t.
func (r *Resident) Create(t TypeID, id string, state []Value) *Entity {
	ts := &r.types[t]
	e := &Entity{r: r, typ: t, id: id, flags: make([]atomic.Uint64, len(ts.slots))}
	e.key = r.keys.Add(1)
	var m uint64
	var ep uint32
	r.mu.Lock()
	for k, sid := range ts.slots {
		s := r.sensors[sid]
		var set uint64
		for i := range session.Indices(r.sessions.Mask()) {
			if sess := r.sessions.At(i); sess.holds(sid, id) {
				set |= sess.bit
			}
		}
		if set != 0 {
			e.flags[k].Store(set)
			s.armed.Add(1)
		}
	}
	ts.byID[id] = append(ts.byID[id], e)
	rel := ts.rel
	var nt entTuple
	if rel != nil {
		nt = entTuple{r.tupleID(), 0, append([]Value(nil), state...)}
		m, ep = r.sessions.Mask(), r.epoch.Load()
		e.tuple, e.state = nt.tuple, nt.state
		e.begin = r.emitEntity(rel, e, m, ep, nil, &nt, false)
		nt.begin = e.begin
	}
	r.mu.Unlock()
	if rel != nil {
		r.entityAfter(rel, e, m, ep, nt.state, nt.tuple, nt.begin, true)
	}
	return e
}

// SetState ends the entity's current entity relation tuple and begins one
// with the new state, at one timestamp.
func (e *Entity) SetState(state []Value) {
	r := e.r
	r.mu.Lock()
	if e.dead {
		r.mu.Unlock()
		return
	}
	rel := r.types[e.typ].rel
	if rel == nil {
		e.state = append(e.state[:0], state...)
		r.mu.Unlock()
		return
	}
	old := entTuple{e.tuple, e.begin, e.state}
	nt := entTuple{r.tupleID(), 0, append([]Value(nil), state...)}
	m, ep := r.sessions.Mask(), r.epoch.Load()
	ts := r.emitEntity(rel, e, m, ep, &old, &nt, false)
	e.tuple, e.begin, e.state = nt.tuple, ts, nt.state
	r.mu.Unlock()
	if r.truth != nil {
		r.truth.End(rel.id, old.tuple, ts)
	}
	r.entityAfter(rel, e, m, ep, nt.state, nt.tuple, ts, true)
}

// Delete ends the entity: its entity relation tuple ends and its flags
// are dropped (flags sessions hold for its ID stay pending for a later
// entity with the same ID). Using the entity in later sensor calls is
// harmless; it is never enabled.
func (e *Entity) Delete() {
	r := e.r
	r.mu.Lock()
	if e.dead {
		r.mu.Unlock()
		return
	}
	e.dead = true
	ts := &r.types[e.typ]
	list := ts.byID[e.id]
	for i, x := range list {
		if x == e {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ts.byID, e.id)
	} else {
		ts.byID[e.id] = list
	}
	for k, sid := range ts.slots {
		if e.flags[k].Load() != 0 {
			e.flags[k].Store(0)
			r.sensors[sid].armed.Add(-1)
		}
	}
	rel := ts.rel
	if rel == nil {
		r.mu.Unlock()
		return
	}
	m, ep := r.sessions.Mask(), r.epoch.Load()
	old := entTuple{e.tuple, e.begin, e.state}
	at := r.emitEntity(rel, e, m, ep, &old, nil, true)
	r.mu.Unlock()
	if r.truth != nil {
		r.truth.End(rel.id, old.tuple, at)
	}
	r.entityAfter(rel, e, m, ep, old.state, old.tuple, at, false)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// entityAfter runs, outside r.mu, what follows an entity packet: triggers
// on the entity relation, and the truth report of a begun tuple.
func (r *Resident) entityAfter(rel *Sensor, e *Entity, m uint64, ep uint32, state []Value, tuple uint64, at int64, begun bool) {
	if rel.trigs.Load() == nil && (r.truth == nil || !begun) {
		return
	}
	vals := make([]Value, 0, 1+len(state))
	vals = append(vals, Value{E: e})
	vals = append(vals, state...)
	if m != 0 && rel.trigs.Load() != nil {
		rel.runEntityTriggers(m, ep, vals, begun)
	}
	if begun && r.truth != nil {
		r.truth.Begin(rel.id, tuple, vals, at)
	}
}

// emitEntity writes an entity operation's packets — the end of tuple end
// and/or the begin of tuple begin — to the sessions in m, with one
// timestamp, which it returns. Entity packets may use the ring's reserve,
// which sensor packets leave them (ring.go), so a flood of sensor packets
// does not make them drop; when even the reserve is full it drops them
// and counts them on the entity relation (reported to every session as
// loss, like any drop): it never waits. Called with r.mu held.
func (r *Resident) emitEntity(rel *Sensor, e *Entity, m uint64, ep uint32, end, begin *entTuple, deleted bool) int64 {
	if m == 0 {
		return r.now()
	}
	nEnd, nBegin := 0, 0
	var k uint64
	if end != nil {
		nEnd = min(1+len(end.state), int(rel.nattr))
		k += slotsFor(wire.PEntityEnd, nEnd)
	}
	if begin != nil {
		nBegin = min(1+len(begin.state), int(rel.nattr))
		k += slotsFor(wire.PEntityBegin, nBegin)
	}
	q := r.pin()
	pos, ok := q.reserve(k, q.size, r.plain)
	if !ok {
		// Even the entities' reserve is full: drop and count the
		// packets, at once. The caller holds r.mu, so waiting here
		// would stop every entity operation of the subject for as long
		// as the drain lags — which a monitor can make long (many
		// sessions, a loaded machine).
		procUnpin()
		rel.drops.Add(uint64(btoi(end != nil) + btoi(begin != nil)))
		return r.now()
	}
	ts := r.now()
	write := func(pos uint64, kind wire.PacketKind, t *entTuple, n int, flags uint8) uint64 {
		head := q.at(pos)
		head.w = [3]uint64{uint64(ts), m, packHdr(ep, rel.id, kind, uint8(n), flags)}
		x := q.at(pos + 1)
		x.w = [3]uint64{t.tuple, uint64(t.begin), 0}
		x.v[0] = slotVal{}
		*q.val(pos, true, 0) = slotVal{p: unsafe.Pointer(e)}
		for i := 1; i < n; i++ {
			*q.val(pos, true, i) = encode(rel.vk[i], &t.state[i-1])
		}
		head.commit(pos)
		return pos + slotsFor(kind, n)
	}
	if end != nil {
		var flags uint8
		if deleted {
			flags = slotDeleted
		}
		pos = write(pos, wire.PEntityEnd, end, nEnd, flags)
	}
	if begin != nil {
		write(pos, wire.PEntityBegin, begin, nBegin, 0)
	}
	procUnpin()
	return ts
}
