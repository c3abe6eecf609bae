package resident

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/tqmon/tqmon/resident/plans"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// MaxSessions is how many sessions (remote monitors) a resident serves at
// once: a packet's destination is a 64-bit set of session indices.
const MaxSessions = session.MaxSessions

// Resident is the resident monitor of one subject program: the enable
// tables, the packet rings and their drain, the sampled-state tables and
// samplers, and the sessions of the remote monitors it serves.
type Resident struct {
	// Read-only after New (read by every sensor call).
	spec     *Spec
	sensors  []*Sensor
	types    []typeState
	slots    int  // each ring's capacity
	plain    bool // claims are plain stores: the drain uses membarrier
	truth    TruthSink
	clock    func() int64
	tsc      *tscClock // the TSC clock, or nil
	monoBase int64
	wallBase int64
	period   int64
	name     string

	_ [cacheLine]byte
	// epoch counts session opens and closes; a session mask read between
	// two equal loads of epoch names sessions current at that epoch.
	epoch atomic.Uint32
	// full is the set of sessions (by index) that were full at the
	// drain's last round (shed.go); it changes at most once a round.
	full atomic.Uint64
	_    [cacheLine - 16]byte
	// rings are the packet rings by P id (nil: none yet); ringMu guards
	// making them.
	rings  atomic.Pointer[[]*ring]
	ringMu sync.Mutex
	// tuples and keys allocate interval tuple identities and entity keys.
	tuples atomic.Uint64
	_      [cacheLine - 8]byte
	keys   atomic.Uint64
	_      [cacheLine - 8]byte

	// mu guards the enable tables: sessions' flags, triggers, entity
	// registries, the sessions' bit assignment, and entity packets.
	mu       sync.Mutex
	sessions session.Table[Session] // open sessions by index
	budget   *session.Budget        // what the sessions hold together
	closed   bool
	// plans are the plan fragments it runs (fragment_plan.go).
	plans *plans.Registry

	// table is the drain's view of the sessions by index (written under
	// dmu; producers read it without, to count shed packets: shed.go).
	dmu   sync.Mutex
	table [MaxSessions]atomic.Pointer[Session]

	// smu guards the samplers (see sample.go).
	smu      sync.Mutex
	samplers []*sampler
	// autoSample lets the drain run due sampling ticks (tests turn it off
	// to run them with sampleDue).
	autoSample atomic.Bool

	// whileCounts are the while counting triggers, whose enables the
	// drain takes back when their counts fall (count.go; copy on write,
	// mu).
	whileCounts atomic.Pointer[[]*trigger]

	stop      chan struct{} // closed by Close
	drainDone chan struct{} // closed when the drain goroutine exits
	wake      chan struct{} // a session opened
	dr        drainState    // drain goroutine only
}

// typeState is one entity type's registry.
type typeState struct {
	name string
	// slots are the traced sensors whose flag holder has this type: an
	// entity of the type carries one flag word per slot.
	slots []SensorID
	// rel is the type's entity relation, or nil.
	rel *Sensor
	// byID holds the live entities by ID (r.mu). IDs are normally unique
	// among live entities; duplicates share the ID's flags.
	byID map[string][]*Entity
}

// New returns a resident monitor for spec. It panics if spec is
// malformed (spec comes from generated code: a malformed one is a
// generator bug): more than MaxAttrs attributes, a flag holder that is not
// an entity attribute, an entity relation whose first attribute is not
// its entity.
func New(spec *Spec, opts Options) *Resident {
	r := newResident(spec, opts)
	go r.drainLoop()
	return r
}

// newResident is New without the drain goroutine (tests run rounds
// themselves, after closing drainDone).
func newResident(spec *Spec, opts Options) *Resident {
	r := &Resident{
		spec:      spec,
		truth:     opts.Truth,
		name:      opts.Name,
		plans:     plans.NewRegistry(opts.PlanQueue),
		period:    spec.Period,
		stop:      make(chan struct{}),
		drainDone: make(chan struct{}),
		wake:      make(chan struct{}, 1),
		budget:    session.NewBudget(session.MaxHeldTotal),
	}
	if r.period <= 0 {
		r.period = 1_000_000_000
	}
	r.initClock(opts)
	r.slots = opts.Slots
	if r.slots <= 0 {
		r.slots = 1 << 14
	}
	r.rings.Store(&[]*ring{})
	r.plain = plainStores && membarrierOK()
	r.autoSample.Store(true)

	r.types = make([]typeState, len(spec.Types))
	for t, name := range spec.Types {
		r.types[t] = typeState{name: name, byID: map[string][]*Entity{}}
	}
	r.sensors = make([]*Sensor, len(spec.Sensors))
	for i := range spec.Sensors {
		r.sensors[i] = newSensor(r, SensorID(i), &spec.Sensors[i])
	}
	for t := range r.types {
		rel := -1
		if t < len(spec.EntityRel) {
			rel = spec.EntityRel[t]
		}
		if rel < 0 {
			continue
		}
		if rel >= len(r.sensors) {
			panic(fmt.Sprintf("resident: type %s: entity relation %d out of range", spec.Types[t], rel))
		}
		s := r.sensors[rel]
		if len(s.spec.Attrs) == 0 || s.spec.Attrs[0].Kind != wire.VEntity || s.spec.Attrs[0].Type != TypeID(t) {
			panic(fmt.Sprintf("resident: entity relation %s: first attribute must be its %s entity", s.spec.Name, spec.Types[t]))
		}
		r.types[t].rel = s
	}
	for _, s := range r.sensors {
		if s.slot >= 0 {
			s.slot = len(r.types[s.ht].slots)
			r.types[s.ht].slots = append(r.types[s.ht].slots, s.id)
		}
	}
	return r
}

// Hello returns the handshake a remote monitor gets.
func (r *Resident) Hello() *wire.Hello {
	h := &wire.Hello{
		Version:  wire.Version,
		Name:     r.name,
		SDL:      r.spec.SDL,
		Types:    append([]string(nil), r.spec.Types...),
		MonoBase: r.monoBase,
		WallBase: r.wallBase,
		Period:   r.period,
		Caps:     []string{wire.CapTriggers, wire.CapWhile, wire.CapCount, wire.CapCountWhile, wire.CapFragments, wire.CapEntityFragments, wire.CapPlans},
	}
	for _, s := range r.spec.Sensors {
		h.Sensors = append(h.Sensors, s.Name)
	}
	return h
}

// Sensor returns sensor id (nil if out of range).
func (r *Resident) Sensor(id SensorID) *Sensor {
	if int(id) >= len(r.sensors) {
		return nil
	}
	return r.sensors[id]
}

// Close stops the resident: every session's flags, triggers and samplers
// are cleared (sensors disarm, truth aside), the drain delivers what the
// ring still holds in a last batch per session, then sessions end (Recv
// returns that batch, then ErrClosed). Sensor calls after Close are
// harmless. Close is idempotent.
func (r *Resident) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		<-r.drainDone
		return
	}
	r.closed = true
	// The observation ends: sessions learn of the traced intervals still
	// in progress whose flags they hold, before their flags are cleared.
	tab := r.tableNow()
	r.sampleThrough(true) // ticks up to the end, while samplers still exist
	r.reportOpen(&tab)
	var open []*Session
	for i := range session.Indices(r.sessions.Mask()) {
		s := r.sessions.At(i)
		s.core.Shut()
		// Fragments stay for the last round: the ring's packets are sent
		// as the session asked.
		r.clearEnables(s)
		r.sessions.Remove(i, s)
		open = append(open, s)
	}
	r.epoch.Add(1)
	r.mu.Unlock()

	close(r.stop)
	<-r.drainDone
	r.round(true)

	r.mu.Lock()
	for _, s := range open {
		for _, f := range s.frags {
			r.removeFragment(f)
		}
	}
	r.dmu.Lock()
	for _, s := range open {
		r.table[s.idx].Store(nil)
	}
	r.dmu.Unlock()
	r.mu.Unlock()
	for _, s := range open {
		s.core.End(ErrClosed, true)
	}
}

// tableNow returns the drain's view of the sessions.
func (r *Resident) tableNow() (tab [MaxSessions]*Session) {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	for i := range r.table {
		tab[i] = r.table[i].Load()
	}
	return tab
}

// tupleID returns a new interval tuple identity (never 0).
func (r *Resident) tupleID() uint64 { return r.tuples.Add(1) }

// Flags reports the enable flags that are set, for tests: sensor name →
// sorted IDs of the live entities whose flag counter is positive (own
// enables and trigger enables, summed over sessions), plus "*" when some
// session has a whole-type enable. Pending enables (IDs with no live
// entity) are not listed.
func (r *Resident) Flags() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for t := range r.types {
		ts := &r.types[t]
		for k, sid := range ts.slots {
			name := r.sensors[sid].spec.Name
			for id, es := range ts.byID {
				for _, e := range es {
					if e.flags[k].Load() != 0 {
						out[name] = append(out[name], id)
						break
					}
				}
			}
		}
	}
	for _, s := range r.sensors {
		if s.all.Load() != 0 {
			out[s.spec.Name] = append(out[s.spec.Name], "*")
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out
}
