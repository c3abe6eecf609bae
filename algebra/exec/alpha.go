package exec

import (
	"cmp"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Resident is what α operators ask of the resident monitor(s): set and
// clear enable flags. Flags are counters: each Enable is matched by a
// Disable. The acquisitional driver records the calls; the live resident
// (later) turns them into commands.
type Resident interface {
	Enable(sensor string, entity algebra.Value)
	Disable(sensor string, entity algebra.Value)
}

// Alpha is the α operator: it stands for a sensed relation and outputs the
// tuples its sensor delivers while enabled. Its enable argument is an
// entity-relation stream: while an entity is in it (counted: a Begin
// increments, an End decrements) the sensor's flag for that entity is set.
// Sampled relations have a second argument, the instants at which to
// sample.
//
// Which packets a sensor delivers, and so what α outputs, is decided by
// the driver that feeds it: the acquisitional driver (acquire.go) plays a
// recorded history as a resident monitor would; live drivers deliver real
// packets. Tuples may come late (Whole, Late elements): MaxLate bounds how
// late.
type Alpha struct {
	// Plan is the α of the plan this operator was built from; Plans, all
	// the plan αs it stands for (Plan first; more with
	// Options.ShareAlphas).
	Plan    *plan.Alpha
	Plans   []*plan.Alpha
	Rel     *algebra.Relation
	VarName string
	Kind    algebra.StrategyKind
	Flag    int   // index of the flag holder attribute
	Keep    []int // attributes packets carry (nil: all)
	drop    []int // the attributes Keep leaves out (keep.go)
	MaxLate algebra.Time

	out *stream.Tee
	// enable is the flag argument; nil when every entity is enabled (AllOf).
	enable *argState
	// when is the sampling argument (sampled relations only).
	when *argState

	res Resident
	// follow, when set, counts a flag set for an ancestor (follow.go).
	follow *Follow

	// acquisition state, kept by the driver
	begun   map[uint64]*stream.Rec // interval rows whose begin (or first sample) was delivered
	pending []stream.Elem          // outputs of the instant being decided
	cursor  sensorCursor
	src     packetSource

	// Allocation in blocks: output records and their kept values (one
	// allocation per slabBlock tuples, not two per tuple), reused where
	// the output forgets them (an event relation's, live: Network.Live).
	blk outBlocks
}

// pkind is the kind of a packet a resident reports for an α.
type pkind uint8

const (
	pEvent     pkind = iota + 1 // an event at t
	pBegin                      // an interval begins at t
	pEnd                        // an interval ends at t (carrying its begin and values)
	pWhole                      // a D interval, complete, at its end t
	pSample                     // a sampled interval valid at t (since from)
	pSampleEnd                  // a sampled interval ends at t
)

// packet is what a resident reports, before the α filters it by its exact
// enablement. key identifies an interval tuple across its packets.
type packet struct {
	kind pkind
	t    algebra.Time
	key  uint64
	from algebra.Time
	vals []algebra.Value
	// kept is vals with only the α's Keep, made once for every α of the
	// relation when they keep the same (Live.Packet); nil: the α makes it.
	kept []algebra.Value
	row  int // simulation: the history row
}

// packetSource supplies an α's candidate packets at an instant, in the
// order they happened; count is told of each one delivered.
type packetSource interface {
	packetsAt(a *Alpha, t algebra.Time) []packet
	count(p *packet)
}

// samplesAt reports whether t is one of α's sampling instants (after its
// When argument was applied through t).
func (a *Alpha) samplesAt(t algebra.Time) bool {
	for _, tick := range a.when.ticks {
		if tick == t {
			return true
		}
	}
	return false
}

// Output returns the stream of the tuples α delivers.
func (a *Alpha) Output() *stream.Tee { return a.out }

// argState follows an argument stream: elements are buffered as they come
// and applied up to a chronon when the driver asks for the state there.
type argState struct {
	a       *Alpha // the α it enables (nil for a sampling argument)
	sampler bool
	buf     []stream.Elem
	head    int
	count   map[string]int
	vals    map[string]algebra.Value
	wm      algebra.Time
	seen    bool
	// ticks are the sampling instants applied so far and not yet used.
	ticks []algebra.Time
	// last is the entity whose flag enabled found set, with count
	// unchanged since ("" for none): consecutive packets of one entity
	// are decided without hashing its identifier.
	last string
}

func newArgState(a *Alpha, sampler bool) *argState {
	return &argState{a: a, sampler: sampler, count: map[string]int{}, vals: map[string]algebra.Value{}}
}

func (s *argState) Push(e stream.Elem) { s.buf = append(s.buf, e) }

func (s *argState) Advance(t algebra.Time) {
	if !s.seen || t > s.wm {
		s.wm, s.seen = t, true
	}
}

// settled reports whether the argument is known through chronon c.
func (s *argState) settled(c algebra.Time) bool {
	return s.seen && s.wm >= c
}

// applyThrough applies buffered elements with time ≤ c.
func (s *argState) applyThrough(c algebra.Time) {
	for s.head < len(s.buf) && s.buf[s.head].T <= c {
		e := s.buf[s.head]
		s.buf[s.head] = stream.Elem{}
		s.head++
		if s.sampler {
			if e.Kind == stream.Event || e.Kind == stream.Begin {
				s.ticks = append(s.ticks, e.T)
			}
			continue
		}
		v := e.Rec.Vals[0]
		key := v.S
		s.last = "" // count changes: enabled asks the map again
		switch e.Kind {
		case stream.Begin, stream.Late:
			s.count[key]++
			s.vals[key] = v
			if s.a.res != nil {
				s.a.res.Enable(s.a.Rel.Name, v)
			}
		case stream.End:
			s.count[key]--
			if s.count[key] <= 0 {
				delete(s.count, key)
				delete(s.vals, key)
			}
			if s.a.res != nil {
				s.a.res.Disable(s.a.Rel.Name, v)
			}
		case stream.Event:
			// An event enables for its one chronon; applying it through c ≥
			// its time has already passed that chronon.
		}
	}
	if s.head == len(s.buf) {
		s.buf, s.head = s.buf[:0], 0
	}
}

// SetResident makes α tell r of every enable and disable its argument
// implies (when nothing else sets the resident's flags).
func (a *Alpha) SetResident(r Resident) { a.res = r }

// enabled reports whether the flag of entity id is set (after
// applyThrough).
func (a *Alpha) enabled(id string) bool {
	if a.enable == nil {
		return true
	}
	if id != "" && id == a.enable.last {
		return true
	}
	if a.enable.count[id] > 0 {
		a.enable.last = id
		return true
	}
	return a.follow != nil && a.follow.ancestorEnabled(id, a.enable.count)
}

// Enabled lists the entities whose flag α has set now.
func (a *Alpha) Enabled() []algebra.Value {
	if a.enable == nil {
		return nil
	}
	out := make([]algebra.Value, 0, len(a.enable.vals))
	for _, v := range a.enable.vals {
		out = append(out, v)
	}
	return out
}

// packetVals is what a packet carries: the kept attributes (others zero).
// keptVals are a packet's values as α's records carry them.
func (a *Alpha) keptVals(p *packet) []algebra.Value {
	if p.kept != nil {
		return p.kept
	}
	return a.packetVals(p.vals)
}

func (a *Alpha) packetVals(vals []algebra.Value) []algebra.Value {
	if a.Keep == nil || zeroOutside(vals, a.drop) {
		return vals
	}
	out := a.blk.takeVals(len(vals))
	for _, i := range a.Keep {
		out[i] = vals[i]
	}
	return out
}

// Held counts the tuples α tracks and the argument elements it buffers.
func (a *Alpha) Held() int {
	n := len(a.begun) + len(a.pending)
	if a.enable != nil {
		n += len(a.enable.buf) - a.enable.head + len(a.enable.count)
	}
	if a.when != nil {
		n += len(a.when.buf) - a.when.head
	}
	return n
}

// Filter passes the tuples of an entity-relation stream whose values
// satisfy a predicate over the single attribute (σ[p(1)](E)). Elements keep
// their order; an End passes when its Begin did (the predicate reads only
// values).
type Filter struct {
	pred expr.Fn
	out  stream.Receiver
	st   *runState
	bind expr.Binding
}

// NewFilter builds σ[pred](in) for an entity relation.
func NewFilter(pred expr.Expr, out stream.Receiver, st *runState) *Filter {
	return &Filter{pred: expr.Compile(pred), out: out, st: st, bind: make(expr.Binding, 1)}
}

func (f *Filter) Push(e stream.Elem) {
	f.bind[0] = e.Rec.Vals
	ok, err := f.pred(f.bind)
	if err != nil {
		f.st.fail(err)
		return
	}
	if ok.B() {
		f.out.Push(e)
	}
}

func (f *Filter) Advance(t algebra.Time) { f.out.Advance(t) }

// step decides α's output at instant t from the packets its source reports
// then: a packet is delivered when its flag holder is enabled — at t for
// events, begins and samples, at t's preceding chronon for ends (the
// tuple's last chronon) — or, for an end, when its begin was delivered.
// α's arguments are known through t.
func (a *Alpha) step(t algebra.Time, stats *AcquireStats) {
	if a.enable != nil {
		a.enable.applyThrough(algebra.Prev(t))
	}
	if a.when != nil {
		a.when.applyThrough(t)
	}
	ps := a.src.packetsAt(a, t)
	if len(ps) == 1 && ps[0].kind == pEvent && a.when == nil {
		// One event at t (a kernel consumer's every instant): what the
		// loops below do for it, without them — the enable argument
		// applied through t, the event out if its flag holder is
		// enabled then.
		p := &ps[0]
		if a.enable != nil {
			a.enable.applyThrough(t)
		}
		if a.enabled(p.vals[a.Flag].S) {
			a.src.count(p)
			if a.Kind == algebra.TracedThenDisabled {
				stats.Rearms++
			}
			a.out.Push(stream.Elem{Kind: stream.Event, T: t, Rec: a.blk.rec(a.keptVals(p), t)})
		}
		return
	}
	flag := func(p *packet) string { return p.vals[a.Flag].S }
	out := a.pending[:0]
	// A tuple that begins and ends at t is empty: drop both packets.
	var empty map[uint64]bool
	for i := range ps {
		if ps[i].kind == pEnd && ps[i].from == t {
			if empty == nil {
				empty = map[uint64]bool{}
			}
			empty[ps[i].key] = true
		}
	}
	// Ends first: the state at t's preceding chronon decides.
	for i := range ps {
		p := &ps[i]
		switch p.kind {
		case pEnd:
			if rec := a.begun[p.key]; rec != nil {
				delete(a.begun, p.key)
				out = append(out, stream.Elem{Kind: stream.End, T: t, Rec: rec})
				a.src.count(p)
			} else if !empty[p.key] && a.enabled(flag(p)) {
				out = append(out, stream.Elem{Kind: stream.Whole, T: t, Rec: a.blk.rec(a.keptVals(p), p.from)})
				a.src.count(p)
			}
		case pWhole:
			if p.from < t && a.enabled(flag(p)) {
				out = append(out, stream.Elem{Kind: stream.Whole, T: t, Rec: a.blk.rec(a.keptVals(p), p.from)})
				a.src.count(p)
				stats.Rearms++
			}
		case pSampleEnd:
			if rec := a.begun[p.key]; rec != nil {
				delete(a.begun, p.key)
				out = append(out, stream.Elem{Kind: stream.End, T: t, Rec: rec})
			}
		}
	}
	// Begins, events and samples: the state at t decides.
	if a.enable != nil {
		a.enable.applyThrough(t)
	}
	for i := range ps {
		p := &ps[i]
		switch p.kind {
		case pEvent:
			if a.enabled(flag(p)) {
				out = append(out, stream.Elem{Kind: stream.Event, T: t, Rec: a.blk.rec(a.keptVals(p), t)})
				a.src.count(p)
				if a.Kind == algebra.TracedThenDisabled {
					stats.Rearms++
				}
			}
		case pBegin:
			// A begin that carries an earlier begin (p.from < t) is of a
			// tuple already in progress when its sensor was enabled for
			// this monitor after the observation began: like any tuple
			// whose begin was not seen, it is taken whole at its end, if
			// enabled then. (Tuples in progress when the observation
			// began come as begins at its start: on time.)
			if p.from < t {
				continue
			}
			if !empty[p.key] && a.enabled(flag(p)) {
				rec := a.blk.rec(a.keptVals(p), t)
				a.begun[p.key] = rec
				out = append(out, stream.Elem{Kind: stream.Begin, T: t, Rec: rec})
				a.src.count(p)
			}
		case pSample:
			if !a.samplesAt(t) || !a.enabled(flag(p)) {
				continue
			}
			a.src.count(p)
			if a.begun[p.key] != nil {
				continue
			}
			rec := a.blk.rec(a.keptVals(p), p.from)
			a.begun[p.key] = rec
			kind := stream.Late
			if p.from == t {
				kind = stream.Begin
			}
			out = append(out, stream.Elem{Kind: kind, T: t, Rec: rec})
		}
	}
	if a.when != nil {
		a.when.ticks = a.when.ticks[:0]
	}
	if len(out) > 1 { // most instants hold one packet
		slices.SortStableFunc(out, func(x, y stream.Elem) int { return cmp.Compare(x.Phase(), y.Phase()) })
	}
	for i, e := range out {
		a.out.Push(e)
		out[i] = stream.Elem{}
	}
	a.pending = out[:0]
}
