package resident

import (
	"context"
	"fmt"

	"github.com/tqmon/tqmon/resident/plans"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Errors a session ends with (Recv returns them; Apply wraps them): the
// session core's (package session), for every resident.
var (
	ErrClosed          = session.ErrClosed
	ErrLeaseExpired    = session.ErrLeaseExpired
	ErrTooManySessions = session.ErrTooManySessions
)

// CommandError is a command the resident refused: which command of the
// session it was (1-based), its kind, the field at fault and why.
type CommandError = session.CommandError

// Session is one remote monitor's session: what it enabled (so that its
// end undoes exactly that), beside the session core (package session:
// the lease, the command count, the batches flowing to it).
type Session struct {
	r         *Resident
	idx       int
	bit       uint64
	openEpoch uint32
	core      session.Core

	// Enable state (r.mu): flags per (sensor, entity ID), own and by
	// triggers (an entity is enabled for the session while it holds its
	// ID), and whole-type enables per sensor.
	flags    session.Enables[flagKey]
	all      session.Enables[SensorID]
	triggers map[uint64]*trigger
	samplers map[uint64]*sampler
	frags    map[uint64]*fragment
	fragCmps int // comparisons in frags' predicates (maxSessionCmps)
	// plan, once set (under r.mu; never unset), makes the session a plan
	// session (fragment_plan.go): Recv carries its results.
	plan plans.Slot

	// shed counts, per sensor, the packets producers shed for the
	// session while it was full (shed.go).
	shed []shedCount
}

// flagKey names a flag: a sensor and an entity ID.
type flagKey struct {
	s  SensorID
	id string
}

// holds reports whether the session's own or trigger enables hold entity
// id for sensor sid (r.mu).
func (s *Session) holds(sid SensorID, id string) bool {
	return s.flags.Holds(flagKey{sid, id})
}

// Open starts a session: a remote monitor's view of the resident. It
// starts with a 10 s lease (session.DefaultLease). Its first batch
// carries the entity relation tuples of the live entities (with their
// begin times). After Close, or with MaxSessions sessions open, the
// session is born ended (Recv and Apply return the error).
func (r *Resident) Open() *Session {
	s := &Session{
		r:        r,
		triggers: map[uint64]*trigger{},
		samplers: map[uint64]*sampler{},
		frags:    map[uint64]*fragment{},
		shed:     make([]shedCount, len(r.sensors)),
	}
	s.core.Init(len(r.sensors), nanotime, r.budget)
	s.core.Stamp = r.now
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.core.Refuse(ErrClosed)
		return s
	}
	idx, err := r.sessions.Add(s)
	if err != nil {
		s.core.Refuse(err)
		return s
	}
	s.idx, s.bit = idx, 1<<idx
	s.openEpoch = r.epoch.Add(1)
	// The live entities: their definitions, and their entity relation
	// tuples. (Their seen bit may be left over from the index's previous
	// session: it is set either way.)
	// Counts from here: the live entities' snapshot below is this
	// session's (wanted and delivered), what came before is not. The
	// drops are counted from here; the wanted count from the first round
	// that serves the session (drain.go, Counts of a new session).
	base := r.counts()
	for i := range base {
		base[i].Wanted = base[i].Drops
	}
	s.core.Base(base)
	var pkts []wire.Packet
	var defs []wire.EntityDef
	for t := range r.types {
		ts := &r.types[t]
		for _, es := range ts.byID {
			for _, e := range es {
				e.seen.Or(s.bit)
				defs = append(defs, e.def())
				if ts.rel != nil {
					pkts = append(pkts, entitySnapshot(ts.rel, e)) // wanted by this session alone (Prime)
				}
			}
		}
	}
	s.core.Prime(pkts, defs)
	r.full.And(^s.bit) // a mark the index's previous session left
	r.dmu.Lock()
	r.table[idx].Store(s)
	r.dmu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return s
}

// Close ends the session: every flag, whole-type enable, trigger,
// sampler and fragment it set is undone; Recv returns ErrClosed.
func (s *Session) Close() { s.closeWith(ErrClosed) }

func (s *Session) closeWith(err error) {
	r := s.r
	r.mu.Lock()
	if !s.core.Shut() {
		r.mu.Unlock()
		return
	}
	r.clearSession(s)
	if o := s.plan.Load(); o != nil {
		o.Close(err)
	}
	r.epoch.Add(1)
	r.sessions.Remove(s.idx, s)
	r.dmu.Lock()
	r.table[s.idx].Store(nil)
	r.dmu.Unlock()
	s.core.End(err, false) // before the index can be reused (see Open)
	r.mu.Unlock()
}

// Recv returns the session's next batch (session.Core.Recv): packets in
// timestamp order (and after the previous batch's watermark), the
// definitions of the entity keys the session has not seen, the new
// watermark and the cumulative per-sensor counts. It blocks until packets
// are ready or, without packets, for a few milliseconds (≤ ~10 ms: an
// empty batch still advances the watermark). It returns the session's
// error once the session ended (Close, CBye, lease expiry,
// Resident.Close), or ctx's.
//
// Packet values may be shared with other sessions' batches: do not modify
// them.
func (s *Session) Recv(ctx context.Context) (*wire.Batch, error) {
	return s.plan.Recv(ctx, &s.core, s.Close) // (a plan session: fragment_plan.go)
}

// Release gives back a batch Recv returned, once the caller is done with
// it and its packets (session.Core.Release): the session reuses its
// memory, so a steady stream allocates nothing per packet. Optional;
// after it, b and every packet and value in it must not be used.
func (s *Session) Release(b *wire.Batch) { s.plan.Release(&s.core, b) }

var strategyNames = [...]string{NotSensed: "not sensed", Traced: "traced", Sampled: "sampled", TracedThenDisabled: "traced then disabled"}

func (s *Sensor) describe() string {
	if s.class == ClassEntity {
		return fmt.Sprintf("%s (an entity relation)", s.spec.Name)
	}
	if int(s.strat) < len(strategyNames) {
		return fmt.Sprintf("%s (%s)", s.spec.Name, strategyNames[s.strat])
	}
	return s.spec.Name
}

// Apply carries out one command from the session's remote monitor. A bad
// command (unknown sensor or type, a sensor of the wrong kind, a disable
// without enable…) changes nothing and gets a *CommandError naming the
// command and field.
func (s *Session) Apply(cmd *wire.Command) error {
	return s.core.Command(&s.r.mu, cmd, s.apply, s.Close)
}

func (s *Session) fail(cmd *wire.Command, field, format string, args ...any) error {
	return s.core.Fail(cmd, field, format, args...)
}

// sensorArg resolves a sensor field.
func (s *Session) sensorArg(cmd *wire.Command, field string, id uint16) (*Sensor, error) {
	if int(id) >= len(s.r.sensors) {
		return nil, s.fail(cmd, field, "unknown sensor %d (the resident has %d)", id, len(s.r.sensors))
	}
	return s.r.sensors[id], nil
}

// tracedArg resolves a sensor field that must name a traced sensor.
func (s *Session) tracedArg(cmd *wire.Command, field string, id uint16) (*Sensor, error) {
	sen, err := s.sensorArg(cmd, field, id)
	if err != nil {
		return nil, err
	}
	if !sen.traced() {
		return nil, s.fail(cmd, field, "%s is not a traced sensor", sen.describe())
	}
	return sen, nil
}

// entityArg checks an entity (Type, Entity) against sen's flag holder.
func (s *Session) entityArg(cmd *wire.Command, sen *Sensor) error {
	if sen.flag < 0 {
		return s.fail(cmd, "sensor", "%s has no flag holder", sen.describe())
	}
	if int(cmd.Type) >= len(s.r.types) {
		return s.fail(cmd, "type", "unknown type %d (the resident has %d)", cmd.Type, len(s.r.types))
	}
	if TypeID(cmd.Type) != sen.ht {
		return s.fail(cmd, "type", "%s's flag holder is a %s, not a %s", sen.spec.Name, s.r.types[sen.ht].name, s.r.types[cmd.Type].name)
	}
	if cmd.Entity == "" {
		return s.fail(cmd, "entity", "empty entity ID")
	}
	return nil
}

func (s *Session) apply(cmd *wire.Command) error {
	r := s.r
	if o := s.plan.Load(); o != nil {
		return o.Command(&s.core, cmd) // (fragment_plan.go)
	}
	switch cmd.Kind {
	case wire.CPlan:
		return s.startPlan(cmd)
	case wire.CEnable, wire.CDisable:
		sen, err := s.tracedArg(cmd, "sensor", cmd.Sensor)
		if err != nil {
			return err
		}
		if err := s.entityArg(cmd, sen); err != nil {
			return err
		}
		k := flagKey{sen.id, cmd.Entity}
		if cmd.Kind == wire.CEnable {
			if s.flags.Full(k) {
				return s.fail(cmd, "entity", "the session already enables %d entities, the most it may (session.MaxEnables)", session.MaxEnables)
			}
			if s.flags.Enable(k) {
				r.setFlag(sen, cmd.Entity, s.bit)
				r.beginOpen(sen, s.bit)
			}
			return nil
		}
		last, ok := s.flags.Disable(k)
		if !ok {
			return s.fail(cmd, "entity", "%s is not enabled for %s %q by this session", sen.spec.Name, r.types[sen.ht].name, cmd.Entity)
		}
		if last {
			r.clearFlag(sen, cmd.Entity, s.bit)
		}
	case wire.CEnableAll, wire.CDisableAll:
		sen, err := s.tracedArg(cmd, "sensor", cmd.Sensor)
		if err != nil {
			return err
		}
		if cmd.Kind == wire.CEnableAll {
			if s.all.Enable(sen.id) {
				r.setAll(sen, s.bit)
				r.beginOpen(sen, s.bit)
			}
			return nil
		}
		last, ok := s.all.Disable(sen.id)
		if !ok {
			return s.fail(cmd, "sensor", "%s is not enabled for every entity by this session", sen.spec.Name)
		}
		if last {
			r.clearAll(sen, s.bit)
		}
	case wire.CTrigger:
		return s.addTrigger(cmd)
	case wire.CUntrigger:
		t, err := byID(s, cmd, s.triggers, "trigger")
		if err != nil {
			return err
		}
		r.removeTrigger(t)
	case wire.CSample:
		return s.addSampler(cmd)
	case wire.CUnsample:
		sp, err := byID(s, cmd, s.samplers, "sampling request")
		if err != nil {
			return err
		}
		r.removeSampler(sp)
	case wire.CFragment:
		return s.addFragment(cmd)
	case wire.CUnfragment:
		f, err := byID(s, cmd, s.frags, "fragment")
		if err != nil {
			return err
		}
		r.removeFragment(f)
	default:
		return s.fail(cmd, "kind", "unknown command kind %d", cmd.Kind)
	}
	return nil
}

// byID resolves the id field of a command that removes what the session
// set (a trigger, a sampling request, a fragment).
func byID[T any](s *Session, cmd *wire.Command, m map[uint64]*T, what string) (*T, error) {
	x := m[cmd.ID]
	if x == nil {
		return nil, s.fail(cmd, "id", "no %s %d in this session", what, cmd.ID)
	}
	return x, nil
}

// setFlag adds session bit to sen's flag on the live entities with ID id
// (r.mu).
func (r *Resident) setFlag(sen *Sensor, id string, bit uint64) {
	for _, e := range r.types[sen.ht].byID[id] {
		old := e.flags[sen.slot].Load()
		e.flags[sen.slot].Store(old | bit)
		if old == 0 {
			sen.armed.Add(1)
		}
	}
}

// clearFlag removes session bit from sen's flag on the live entities with
// ID id (r.mu).
func (r *Resident) clearFlag(sen *Sensor, id string, bit uint64) {
	for _, e := range r.types[sen.ht].byID[id] {
		old := e.flags[sen.slot].Load()
		if old&bit == 0 {
			continue
		}
		e.flags[sen.slot].Store(old &^ bit)
		if old == bit {
			sen.armed.Add(-1)
		}
	}
}

func (r *Resident) setAll(sen *Sensor, bit uint64) {
	old := sen.all.Load()
	sen.all.Store(old | bit)
	if old == 0 {
		sen.armed.Add(1)
	}
}

func (r *Resident) clearAll(sen *Sensor, bit uint64) {
	old := sen.all.Load()
	if old&bit == 0 {
		return
	}
	sen.all.Store(old &^ bit)
	if old == bit {
		sen.armed.Add(-1)
	}
}

// clearSession undoes everything session s set (r.mu held).
func (r *Resident) clearSession(s *Session) {
	r.clearEnables(s)
	for _, f := range s.frags {
		r.removeFragment(f)
	}
}

// clearEnables undoes everything session s set but its fragments (r.mu
// held): what decides which packets are made, not which are sent.
func (r *Resident) clearEnables(s *Session) {
	s.flags.Each(func(k flagKey, _ int32) {
		r.clearFlag(r.sensors[k.s], k.id, s.bit)
	})
	s.all.Each(func(sid SensorID, _ int32) {
		r.clearAll(r.sensors[sid], s.bit)
	})
	for _, t := range s.triggers {
		r.removeTrigger(t)
	}
	for _, sp := range s.samplers {
		r.removeSampler(sp)
	}
	r.forgetReported(s.bit)
	s.flags.Reset()
	s.all.Reset()
}

// maxTriggers bounds one session's triggers. A trigger runs in the
// subject's own thread, on every packet of its "on" sensor delivered to
// its session (runTriggers, runEntityTriggers), and one on an entity
// relation walks that type's live entities when installed: so what a
// monitor can make each sensor call cost is at most maxTriggers
// comparisons of at most wire's bounded conditions per session. A query
// needs one per α argument it computes at the resident.
const maxTriggers = 32

// trigger is a CTrigger: when sensor on delivers a packet to sess whose
// values satisfy conds, target is enabled for sess for the entity in
// attribute attr (once per entity ID, until the trigger is removed).
type trigger struct {
	sess   *Session
	id     uint64
	on     *Sensor
	target *Sensor
	attr   int
	conds  []wire.Cond
	// while (on an entity relation only): the enable of an entity lasts
	// while its current tuple satisfies conds, not from the first match on.
	while bool
	done  map[string]struct{} // entity IDs enabled (r.mu); while: those whose tuple matches now
	dead  bool                // removed (r.mu)
	// count (a counting trigger, count.go): nil for the others.
	count *counter
}

func (s *Session) addTrigger(cmd *wire.Command) error {
	r := s.r
	if s.triggers[cmd.ID] != nil {
		return s.fail(cmd, "id", "trigger %d already exists in this session", cmd.ID)
	}
	if len(s.triggers) >= maxTriggers {
		return s.fail(cmd, "id", "the session already has %d triggers, the most it may", maxTriggers)
	}
	on, err := s.sensorArg(cmd, "on", cmd.On)
	if err != nil {
		return err
	}
	if !on.traced() && on.class != ClassEntity {
		return s.fail(cmd, "on", "%s is neither traced nor an entity relation", on.describe())
	}
	if cmd.While && on.class != ClassEntity && cmd.Count == 0 {
		return s.fail(cmd, "while", "%s is not an entity relation", on.describe())
	}
	target, err := s.tracedArg(cmd, "sensor", cmd.Sensor)
	if err != nil {
		return err
	}
	if target.slot < 0 {
		return s.fail(cmd, "sensor", "%s has no flag holder", target.describe())
	}
	if int(cmd.Attr) >= int(on.nattr) {
		return s.fail(cmd, "attr", "%s has no attribute %d", on.spec.Name, cmd.Attr)
	}
	if a := on.spec.Attrs[cmd.Attr]; a.Kind != wire.VEntity || a.Type != target.ht {
		return s.fail(cmd, "attr", "%s.%s is not a %s (the flag holder of %s)", on.spec.Name, a.Name, r.types[target.ht].name, target.spec.Name)
	}
	if cmd.Count != 0 {
		if err := s.countArgs(cmd, on); err != nil {
			return err
		}
	}
	for i, c := range cmd.Conds {
		field := fmt.Sprintf("conds[%d]", i)
		if int(c.Attr) >= int(on.nattr) {
			return s.fail(cmd, field, "%s has no attribute %d", on.spec.Name, c.Attr)
		}
		if a := on.spec.Attrs[c.Attr]; a.Kind != c.Value.Kind {
			return s.fail(cmd, field, "%s.%s has kind %d, the condition %d", on.spec.Name, a.Name, a.Kind, c.Value.Kind)
		}
	}
	t := &trigger{sess: s, id: cmd.ID, on: on, target: target, attr: int(cmd.Attr),
		conds: append([]wire.Cond(nil), cmd.Conds...), while: cmd.While, done: map[string]struct{}{}}
	if cmd.Count != 0 {
		t.count = newCounter(int(cmd.Count), cmd.Period, cmd.While)
		if t.count.while {
			r.listWhileCount(t, false)
		}
	}
	s.triggers[t.id] = t
	var list []*trigger
	if p := on.trigs.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, t)
	on.trigs.Store(&list)
	target.armed.Add(1)
	if on.class == ClassEntity {
		// An entity whose current tuple already matches holds from now:
		// its next entity packet may be long after. (r.mu is held, and
		// entity packets are written under it, so no tuple begins between
		// this look and the trigger's first run.)
		for i := range r.types {
			if r.types[i].rel != on {
				continue
			}
			for _, es := range r.types[i].byID {
				for _, e := range es {
					vals := append([]Value{{E: e}}, e.state...)
					if t.attr < len(vals) && vals[t.attr].E != nil && t.match(vals) {
						r.fireLocked(t, vals[t.attr].E.id)
					}
				}
			}
		}
	}
	return nil
}

// removeTrigger removes t and the enables it made (r.mu).
func (r *Resident) removeTrigger(t *trigger) {
	if t.dead {
		return
	}
	t.dead = true
	s := t.sess
	delete(s.triggers, t.id)
	var list []*trigger
	for _, x := range *t.on.trigs.Load() {
		if x != t {
			list = append(list, x)
		}
	}
	if len(list) == 0 {
		t.on.trigs.Store(nil)
	} else {
		t.on.trigs.Store(&list)
	}
	for id := range t.done {
		if s.flags.Untrigger(flagKey{t.target.id, id}) {
			r.clearFlag(t.target, id, s.bit)
		}
	}
	if t.count != nil && t.count.while {
		r.listWhileCount(t, true)
	}
	t.target.armed.Add(-1)
}

// match reports whether vals satisfy the trigger's conditions.
func (t *trigger) match(vals []Value) bool {
	for _, c := range t.conds {
		if int(c.Attr) >= len(vals) {
			return false
		}
		v := &vals[c.Attr]
		switch c.Value.Kind {
		case wire.VEntity:
			if v.E == nil || v.E.id != c.Value.S {
				return false
			}
		case wire.VString:
			if v.S != c.Value.S {
				return false
			}
		default:
			if v.N != c.Value.N {
				return false
			}
		}
	}
	return true
}

// runTriggers evaluates the sensor's triggers for a packet delivered to
// the sessions in m (as of epoch ep), stamped ts (0: not written): a match
// enables the target before the sensor call returns (a counting trigger's
// once its count is reached).
func (s *Sensor) runTriggers(m uint64, ep uint32, vals []Value, ts int64) {
	p := s.trigs.Load()
	if p == nil {
		return
	}
	for _, t := range *p {
		if m&t.sess.bit == 0 || t.attr >= len(vals) || !t.match(vals) {
			continue
		}
		e := vals[t.attr].E
		if e == nil {
			continue
		}
		if t.count != nil {
			if ts == 0 {
				ts = s.r.now() // the packet was not written (a fragment held it back)
			}
			s.r.countTrigger(t, e.id, ep, ts)
			continue
		}
		s.r.fireTrigger(t, e.id, ep)
	}
}

// fireTrigger enables t's target for entity id in t's session, once.
func (r *Resident) fireTrigger(t *trigger, id string, ep uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.live(ep) {
		r.fireLocked(t, id)
	}
}

// live reports whether t may still act on a packet of epoch ep: not
// removed, its session open, and the packet not older than the session
// (r.mu).
func (t *trigger) live(ep uint32) bool {
	return !t.dead && !t.sess.core.Closed() && int32(ep-t.sess.openEpoch) >= 0
}

// fireLocked is fireTrigger with r.mu held and t live.
func (r *Resident) fireLocked(t *trigger, id string) {
	if _, ok := t.done[id]; ok {
		return
	}
	t.done[id] = struct{}{}
	if s := t.sess; s.flags.Trigger(flagKey{t.target.id, id}) {
		r.setFlag(t.target, id, s.bit)
	}
}

// unfireTrigger takes back the enable a while trigger holds for entity id
// (its tuple no longer matches, or the entity ended).
func (r *Resident) unfireTrigger(t *trigger, id string, ep uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := t.done[id]; !ok || !t.live(ep) {
		return
	}
	r.takeBack(t, []string{id})
}

// takeBack takes back the enables a while trigger (an entity relation's,
// or a counting one's) holds for ids, all in t.done (r.mu). The target's
// tuples in progress on those entities are still owed their end
// (recordOwed, owe.go): the one mechanism of every while trigger.
func (r *Resident) takeBack(t *trigger, ids []string) {
	s, sen := t.sess, t.target
	for _, id := range ids {
		delete(t.done, id)
		if !s.flags.Untrigger(flagKey{sen.id, id}) {
			continue
		}
		if sen.class == ClassInterval {
			for _, e := range r.types[sen.ht].byID[id] {
				if e.flags[sen.slot].Load()&s.bit != 0 {
					r.recordOwed(sen, e, s.bit)
				}
			}
		}
		r.clearFlag(sen, id, s.bit)
	}
}

// runEntityTriggers evaluates an entity relation's triggers for an entity
// packet delivered to the sessions in m: vals is the tuple that begins
// (alive), or the one that ends with the entity. A while trigger holds its
// enable exactly while the entity's tuple matches: set when a matching
// tuple begins, taken back when another begins or the entity ends —
// before the entity operation returns, so the entity's own next sensor
// call sees it.
func (s *Sensor) runEntityTriggers(m uint64, ep uint32, vals []Value, alive bool) {
	p := s.trigs.Load()
	if p == nil {
		return
	}
	for _, t := range *p {
		if m&t.sess.bit == 0 || t.attr >= len(vals) || vals[t.attr].E == nil {
			continue
		}
		id := vals[t.attr].E.id
		switch {
		case !t.while:
			if t.match(vals) {
				s.r.fireTrigger(t, id, ep)
			}
		case alive && t.match(vals):
			s.r.fireTrigger(t, id, ep)
		default:
			s.r.unfireTrigger(t, id, ep)
		}
	}
}

// Local returns an in-process connection to the resident: a new session
// (session.Local).
func (r *Resident) Local() wire.Conn { return session.Local(r.Hello, r.Open()) }
