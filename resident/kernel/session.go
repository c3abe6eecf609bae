package kernel

import (
	"context"
	"strconv"

	"github.com/tqmon/tqmon/resident/plans"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// flagKey is a sensor's enable for one entity (by number: pid, tid, cpu).
type flagKey struct {
	sensor int
	id     uint32
}

// Session is one remote monitor's session: what it enabled (its end
// undoes exactly that), beside the session core (package session: the
// lease, the command count, the batches flowing to it).
type Session struct {
	r    *Resident
	idx  int
	core session.Core

	// Enables (r.mu): per (sensor, entity number), and whole-type per
	// sensor.
	flags session.Enables[flagKey]
	all   session.Enables[int]
	// defined: the entity keys whose definitions the session was sent
	// (drain, r.mu).
	defined map[uint64]bool
	// frags: its fragments by ID; perSensor: its entity enables per
	// sensor (r.mu; see filter.go).
	frags     map[uint64]*kfrag
	perSensor map[int]int
	// unwanted: per sensor, the packets the kernel counted wanted that
	// the drain did not send it (drain, r.mu; see unwant).
	unwanted    []uint64
	filteredOut bool // some unwanted count is not 0
	// trigs: its entity triggers by ID (r.mu; see entsel.go).
	trigs map[uint64]*ktrig
	// recent are two entities defined (drain, r.mu): a round's packets
	// mostly name the same thread and process, checked here without a
	// lookup in defined (holding them keeps their addresses theirs).
	recent [2]*entity
	// plan, once set (r.mu; never unset), makes it a plan session
	// (plan.go): Recv carries the fragment's results.
	plan plans.Slot
}

// Open starts a session. Its first batch carries the live processes,
// threads and processors. The first session starts the tracking of
// processes and threads (their programs attach); the last one to end
// stops it (everything detaches). After Close, with too many sessions,
// or when tracking cannot start, the session is born ended (Recv and
// Apply return the error).
func (r *Resident) Open() *Session {
	s := &Session{r: r, idx: -1, defined: map[uint64]bool{}, frags: map[uint64]*kfrag{}, perSensor: map[int]int{}, trigs: map[uint64]*ktrig{}, unwanted: make([]uint64, len(r.sensors))}
	s.core.Init(len(r.sensors), monoNow, r.budget)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.core.Refuse(session.ErrClosed)
		return s
	}
	if r.tr == nil { // no session is open: there is room for this one
		tr, err := r.startTracking()
		if err != nil {
			s.core.Refuse(err)
			return s
		}
		r.tr = tr
	}
	// The session's counts start now (before the drain can see it), not
	// at the resident's start: an earlier session's packets are not its
	// "produced while enabled" (session.Core.Base).
	s.core.Base(r.tr.decidedCounts())
	idx, err := r.sessions.Add(s)
	if err != nil {
		s.core.Refuse(err)
		return s
	}
	s.idx = idx
	s.core.Prime(r.tr.ents.snapshot(s))
	return s
}

// Close ends the session: every enable it made is undone; Recv returns
// session.ErrClosed.
func (s *Session) Close() { s.closeWith(session.ErrClosed) }

func (s *Session) closeWith(err error) {
	r := s.r
	r.mu.Lock()
	if !r.dropSessionLocked(s, err, false) {
		r.mu.Unlock()
		return
	}
	var tr *tracker
	if r.tr != nil && r.sessions.Len() == 0 {
		tr, r.tr = r.tr, nil
	}
	r.mu.Unlock()
	if tr != nil {
		tr.stopDrain(false)
		tr.teardown()
	}
}

// dropSessionLocked undoes a session's enables and ends it (r.mu held);
// it reports whether the session was open.
func (r *Resident) dropSessionLocked(s *Session, err error, keep bool) bool {
	if !s.core.Shut() {
		return false
	}
	s.flags.Each(func(k flagKey, n int32) {
		r.setFlag(r.sensors[k.sensor], k.id, -int(n))
	})
	s.all.Each(func(sid int, n int32) {
		r.setAll(r.sensors[sid], -int(n))
	})
	s.flags.Reset()
	s.all.Reset()
	for _, tr := range s.trigs {
		if err := r.untrigger(s, tr); err != nil {
			r.opts.Logf("%s: %v", r.sensors[tr.sensor].s.Rel.Name, err)
		}
	}
	clear(s.trigs)
	clear(s.frags)
	clear(s.perSensor)
	r.sessions.Remove(s.idx, s)
	if r.tr != nil {
		r.tr.leave(s.idx)
	}
	if o := s.plan.Load(); o != nil {
		o.Close(err) // the fragment's last results, then err (plan.go)
	}
	s.core.End(err, keep)
	for _, ss := range r.sensors {
		if ss != nil {
			r.resieve(ss)
			if err := r.refilter(ss); err != nil {
				r.opts.Logf("%s: %v", ss.s.Rel.Name, err)
			}
		}
	}
	return true
}

// Recv returns the session's next batch (session.Core.Recv): packets in
// time order after the previous batch's watermark, the definitions of the
// entity keys it uses that the session was not sent, the new watermark
// and the cumulative per-sensor counts. It returns the session's error
// once it ended, or ctx's.
func (s *Session) Recv(ctx context.Context) (*wire.Batch, error) {
	return s.plan.Recv(ctx, &s.core, s.Close) // (a plan session's: plan.go)
}

// Release gives back a batch Recv returned, for reuse
// (session.Core.Release). Optional; after it, b must not be used.
func (s *Session) Release(b *wire.Batch) { s.plan.Release(&s.core, b) }

// Apply carries out a command. A command the resident cannot carry out
// changes nothing and gets a *CommandError.
func (s *Session) Apply(cmd *wire.Command) error {
	return s.core.Command(&s.r.mu, cmd, s.apply, s.Close)
}

// sensorArg resolves a command's sensor: one with kernel programs.
func (s *Session) sensorArg(cmd *wire.Command) (*sensorState, error) {
	r := s.r
	if int(cmd.Sensor) >= len(r.sensors) {
		return nil, s.core.Fail(cmd, "sensor", "unknown sensor %d (the resident has %d)", cmd.Sensor, len(r.sensors))
	}
	ss := r.sensors[cmd.Sensor]
	if ss == nil {
		return nil, s.core.Fail(cmd, "sensor", "%s has no kernel sensor (an entity relation, or a relation without binding)", r.cat.Relations[cmd.Sensor].Name)
	}
	return ss, nil
}

// apply carries out a command other than CBye and CLease (r.mu).
// Enables count per resident in the kernel's maps (setFlag, setAll: a
// program may run as many times as it is enabled before a
// traced-then-disabled sensor is re-armed), so every enable goes there,
// not only a session's first.
func (s *Session) apply(cmd *wire.Command) error {
	r := s.r
	fail := s.core.Fail
	if o := s.plan.Load(); o != nil {
		return o.Command(&s.core, cmd) // (plan.go)
	}
	switch cmd.Kind {
	case wire.CPlan:
		return s.startPlan(cmd)
	case wire.CEnable, wire.CDisable:
		ss, err := s.sensorArg(cmd)
		if err != nil {
			return err
		}
		if int(cmd.Type) >= len(r.cat.EntityTypes) || r.cat.EntityTypes[cmd.Type] != ss.s.FlagType {
			return fail(cmd, "type", "%s's flag holder is a %s", ss.s.Rel.Name, ss.s.FlagType)
		}
		n, err := strconv.ParseUint(cmd.Entity, 10, 32)
		if err != nil {
			return fail(cmd, "entity", "%s IDs are numbers, not %q", ss.s.FlagType, cmd.Entity)
		}
		k := flagKey{ss.s.ID, uint32(n)}
		if cmd.Kind == wire.CEnable {
			if s.flags.Full(k) {
				return fail(cmd, "entity", "the session already enables %d entities, the most it may (session.MaxEnables)", session.MaxEnables)
			}
			// The kernel's enable map has room for EnableEntries IDs per
			// sensor, over all sessions: one more is refused here, by
			// name, not by the map's own E2BIG mid-way through setFlag.
			if ss.ids[k.id] == 0 && len(ss.ids) >= bpfgen.EnableEntries {
				return fail(cmd, "entity", "%s is enabled for %d %s IDs already (over all sessions), the most its kernel enable map holds (bpfgen.EnableEntries); enable it for every %s instead",
					ss.s.Rel.Name, len(ss.ids), ss.s.FlagType, ss.s.FlagType)
			}
			if err := r.setFlag(ss, k.id, 1); err != nil {
				return fail(cmd, "sensor", "%v", err)
			}
			if s.flags.Enable(k) {
				s.perSensor[k.sensor]++
			}
			return r.refilter(ss)
		}
		last, ok := s.flags.Disable(k)
		if !ok {
			return fail(cmd, "entity", "%s is not enabled for %s %s by this session", ss.s.Rel.Name, ss.s.FlagType, cmd.Entity)
		}
		if last {
			if s.perSensor[k.sensor]--; s.perSensor[k.sensor] == 0 {
				delete(s.perSensor, k.sensor)
			}
		}
		if err := r.setFlag(ss, k.id, -1); err != nil {
			return err
		}
		return r.refilter(ss)
	case wire.CEnableAll, wire.CDisableAll:
		ss, err := s.sensorArg(cmd)
		if err != nil {
			return err
		}
		id := ss.s.ID
		if cmd.Kind == wire.CEnableAll {
			if err := r.setAll(ss, 1); err != nil {
				return fail(cmd, "sensor", "%v", err)
			}
			s.all.Enable(id)
			return r.refilter(ss)
		}
		if _, ok := s.all.Disable(id); !ok {
			return fail(cmd, "sensor", "%s is not enabled for every entity by this session", ss.s.Rel.Name)
		}
		if err := r.setAll(ss, -1); err != nil {
			return err
		}
		return r.refilter(ss)
	case wire.CTrigger, wire.CUntrigger:
		return s.trigger(cmd)
	case wire.CFragment, wire.CUnfragment:
		return s.fragment(cmd)
	case wire.CSample, wire.CUnsample:
		return fail(cmd, "kind", "the kernel resident has no sampled sensors")
	default:
		return fail(cmd, "kind", "unknown command kind %d", cmd.Kind)
	}
}

// holds reports whether the session enables sensor for entity id
// (r.mu). A session with a trigger on the sensor holds every packet of
// it that reaches the drain (see entsel.go).
func (s *Session) holds(sensor int, id uint32) bool {
	return s.all.Holds(sensor) || s.flags.Holds(flagKey{sensor, id}) || len(s.trigs) > 0 && s.triggers(sensor)
}

// triggers reports whether the session has a trigger on sensor (r.mu).
func (s *Session) triggers(sensor int) bool {
	for _, tr := range s.trigs {
		if tr.sensor == sensor {
			return true
		}
	}
	return false
}

// Local returns an in-process connection to the resident: a new session
// (session.Local). Its hello offers no plans (localHello, plan.go).
func (r *Resident) Local() wire.Conn { return session.Local(r.localHello, r.Open()) }

// Sessions returns the resident as a transport server sees it (for
// `tqmon resident --kernel --listen`).
func (r *Resident) Sessions() transport.Sessions { return transport.Adapt(r.Hello, r.Open) }
