package exec

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Live drives a network with what resident monitors report, as it
// arrives: entity-relation tuples (always delivered) and sensor packets,
// in time order, with watermarks. The remote monitor merges its residents'
// streams and calls Entity, Packet and Advance; α operators filter packets
// by their exact enablement at each instant (residents enable a superset,
// as early as needed) exactly as in an acquisitional run.
//
// Inputs are batched up to a watermark: Entity and Packet only note
// their instant (due); Advance steps through the instants due in order —
// clock ticks before each, its entity tuples (Ends first), its ticks, an
// α step — pushing elements without advancing the network, then advances
// it once, to the watermark. Each stream still sees its elements in time
// order and each α decides each instant with its arguments applied
// through that instant (argState buffers them), so the results are those
// of stepping instant by instant; what changes is that a watermark
// carrying many instants costs one pass through the network, not one per
// instant (a kernel consumer's instants are each packet's nanosecond).
type Live struct {
	n      *Network
	bySens map[string][]*Alpha
	inbox  map[*Alpha]*inbox
	sens   sensCache
	valBlk slab[algebra.Value] // packets' kept values (sensCache.keep)
	// entity elements of the instants due, in time order
	ents   []stream.Elem
	entTee []*stream.Tee
	// due are the instants with input not yet stepped, increasing
	due    []algebra.Time
	open   map[uint64]*stream.Rec // entity tuples begun, by identity
	clocks []liveClock
	cur    algebra.Time
	have   bool
	last   algebra.Time // last instant stepped, when stepped
	// stepped says some instant was: Beginning is an instant like any
	// other, so last alone cannot say so.
	stepped bool
	start   algebra.Time
	end     algebra.Time // observation end (ticks stop there)
	stats   AcquireStats
	done    bool
	follow  *Follow // nil: not following (follow.go)
}

type liveClock struct {
	step int64
	tee  *stream.Tee
	next algebra.Time
}

// liveSource is an α's: its inbox.
type liveSource struct{ in *inbox }

// sensCache is what Packet looked up for the relation it was last given
// (a kernel consumer's packets are mostly of one): the inboxes of its α,
// and its packets counted and not yet added to stats.Packets (countSens).
type sensCache struct {
	rel string
	ok  bool
	in  []*inbox
	n   int
	// keep, when the relation's αs (more than one) all keep the same
	// attributes, is what they keep: Packet makes the kept values once
	// for all of them (packet.kept).
	keep []int
	// drop are the attributes keep leaves out: values already zero there
	// are kept as they are (zeroOutside).
	drop []int
}

// countSens adds the packets the cache counted to stats.Packets.
func (l *Live) countSens() {
	if c := &l.sens; c.ok && c.n > 0 {
		l.stats.Packets[c.rel] += c.n
		c.n = 0
	}
}

// inbox is an α's packets not yet decided: q[head:]. Decided packets
// are skipped, not resliced away, and the rest moved down once half are
// decided, so that the queue keeps its room (reslicing, a packet per
// instant grew a new array again and again) and holds at most twice
// what is undecided.
type inbox struct {
	q    []packet
	head int
}

// packetsAt returns the packets at or before t; the slice is valid
// until the next Packet.
func (s liveSource) packetsAt(a *Alpha, t algebra.Time) []packet {
	in := s.in
	i := in.head
	for i < len(in.q) && in.q[i].t <= t {
		i++
	}
	out := in.q[in.head:i:i]
	in.head = i
	return out
}

func (s liveSource) count(*packet) {}

// Live prepares the network for live input observed from start (global
// time: Clock ticks begin there).
func (n *Network) Live(start algebra.Time) *Live {
	l := &Live{n: n, bySens: map[string][]*Alpha{}, inbox: map[*Alpha]*inbox{}, open: map[uint64]*stream.Rec{},
		start: start, end: algebra.Forever, last: algebra.Beginning}
	l.stats = AcquireStats{Packets: map[string]int{}, PeakEnabled: map[string]int{}}
	for _, a := range n.Alphas {
		l.bySens[a.Rel.Name] = append(l.bySens[a.Rel.Name], a)
		in := &inbox{}
		l.inbox[a] = in
		a.src = liveSource{in}
		if a.Rel.IsEvent() {
			// Its output's records (and values) are taken again once
			// forgotten (forgets): what it outputs is events.
			a.blk.reuse(a.out)
		}
	}
	for _, f := range n.fused {
		f.res.reuse(f.out)
	}
	for c, tee := range n.Clocks {
		step := c * n.ClockPeriod
		l.clocks = append(l.clocks, liveClock{step: step, tee: tee, next: algebra.FirstTick(step, start)})
	}
	slices.SortFunc(l.clocks, func(a, b liveClock) int { return cmp.Compare(a.step, b.step) })
	for _, c := range n.Consts {
		for _, v := range c.Vals {
			c.Out.Push(stream.Elem{Kind: stream.Begin, T: algebra.Beginning, Rec: &stream.Rec{Vals: []algebra.Value{v}, From: algebra.Beginning}})
		}
	}
	return l
}

// kindOf is the α's kind of a packet of kind k (0 for none): a switch,
// not a map looked up per packet.
func kindOf(k stream.PacketKind) pkind {
	switch k {
	case stream.PacketEvent:
		return pEvent
	case stream.PacketBegin:
		return pBegin
	case stream.PacketEnd:
		return pEnd
	case stream.PacketWhole:
		return pWhole
	case stream.PacketSample:
		return pSample
	case stream.PacketSampleEnd:
		return pSampleEnd
	}
	return 0
}

// time notes an input at instant t (stepped at the next Advance past it).
func (l *Live) time(t algebra.Time) error {
	if l.done {
		return fmt.Errorf("live: input after the end")
	}
	if l.have && t < l.cur {
		return fmt.Errorf("live: input at %d after input at %d: the merge must deliver in time order", t, l.cur)
	}
	if !l.have || t > l.cur {
		l.due = append(l.due, t)
	}
	l.cur, l.have = t, true
	return nil
}

// Entity reports an entity-relation tuple beginning (begin true) or ending
// at t; key identifies the tuple across its begin and end.
func (l *Live) Entity(rel string, begin bool, key uint64, vals []algebra.Value, t algebra.Time) error {
	tee := l.n.Sources[rel]
	if err := l.time(t); err != nil {
		return err
	}
	if begin {
		if l.follow != nil && rel == l.follow.Rel {
			l.follow.note(vals)
		}
		rec := &stream.Rec{Vals: vals, From: t}
		l.open[key] = rec
		if tee != nil {
			l.ents = append(l.ents, stream.Elem{Kind: stream.Begin, T: t, Rec: rec})
			l.entTee = append(l.entTee, tee)
		}
		return nil
	}
	rec := l.open[key]
	if rec == nil {
		return nil
	}
	delete(l.open, key)
	if tee != nil {
		l.ents = append(l.ents, stream.Elem{Kind: stream.End, T: t, Rec: rec})
		l.entTee = append(l.entTee, tee)
	}
	return nil
}

// Packet reports a sensor packet at t for relation rel.
//
// For an interval's begin (PacketBegin), from is when the tuple began: t
// for a begin reported as it happened, earlier for one a resident reports
// when its sensor is enabled for a tuple already in progress (resident's
// beginOpen), which α takes whole at its end (alpha.go).
func (l *Live) Packet(rel string, kind stream.PacketKind, key uint64, from algebra.Time, vals []algebra.Value, t algebra.Time) error {
	if err := l.time(t); err != nil {
		return err
	}
	c := &l.sens
	if !c.ok || c.rel != rel {
		l.countSens()
		*c = sensCache{rel: rel, ok: true, in: c.in[:0]}
		as := l.bySens[rel]
		if len(as) > 1 && as[0].Keep != nil && !slices.ContainsFunc(as, func(a *Alpha) bool { return !slices.Equal(a.Keep, as[0].Keep) }) {
			c.keep = as[0].Keep
			c.drop = dropped(c.keep, len(as[0].Rel.Attrs))
		}
		for _, a := range as {
			c.in = append(c.in, l.inbox[a])
		}
	}
	c.n++
	l.stats.Total++
	var kept []algebra.Value
	if c.keep != nil && zeroOutside(vals, c.drop) {
		kept = vals // already as kept
	} else if c.keep != nil {
		kept = l.valBlk.take(len(vals))
		for _, i := range c.keep {
			kept[i] = vals[i]
		}
	}
	for _, in := range c.in {
		if in.head > 0 && in.head >= len(in.q)/2 { // half decided: move the rest down
			k := copy(in.q, in.q[in.head:])
			clear(in.q[k:])
			in.q, in.head = in.q[:k], 0
		}
		in.q = append(in.q, packet{kind: kindOf(kind), t: t, key: key, from: from, vals: vals, kept: kept, row: -1})
	}
	return nil
}

// stepDue steps through the instants due at or before w (see Live): for
// each, Clock ticks before it (each an instant of its own), then its
// entity tuples (Ends first; a tuple that begins and ends at t is empty
// and dropped) and a tick at it, then an α step. It reports whether it
// stepped an instant; the caller advances the network (advanceAll).
func (l *Live) stepDue(w algebra.Time) bool {
	k, head, stepped := 0, 0, false
	for ; k < len(l.due) && l.due[k] <= w; k++ {
		t := l.due[k]
		end := head
		for end < len(l.ents) && l.ents[end].T <= t {
			end++
		}
		if l.isNew(t) {
			l.ticksBefore(t)
			l.last, l.stepped, stepped = t, true, true
		}
		// Elements of an instant already stepped (input at a watermark
		// already passed) go out with it, as late as they came.
		l.pushEnts(t, head, end)
		head = end
		l.tickAt(t)
		for _, a := range l.n.Alphas {
			if n := len(a.cursor.steps); n == 0 || a.cursor.steps[n-1] < t {
				a.cursor.steps = append(a.cursor.steps, t)
			}
		}
	}
	rest := copy(l.due, l.due[k:])
	l.due = l.due[:rest]
	rest = copy(l.ents, l.ents[head:])
	clear(l.ents[rest:])
	l.ents = l.ents[:rest]
	rest = copy(l.entTee, l.entTee[head:])
	clear(l.entTee[rest:])
	l.entTee = l.entTee[:rest]
	return stepped
}

// pushEnts pushes the entity elements ents[from:to] of instant t: Ends
// first, a tuple that begins and ends at t dropped.
func (l *Live) pushEnts(t algebra.Time, from, to int) {
	var empty map[*stream.Rec]bool
	for _, e := range l.ents[from:to] {
		if e.Kind == stream.End && e.Rec.From == t {
			if empty == nil {
				empty = map[*stream.Rec]bool{}
			}
			empty[e.Rec] = true
		}
	}
	for _, phase := range []stream.Kind{stream.End, stream.Begin} {
		for i := from; i < to; i++ {
			if e := l.ents[i]; e.Kind == phase && !empty[e.Rec] {
				l.entTee[i].Push(e)
			}
		}
	}
}

// ticksBefore steps through the Clock ticks before t, inside the
// observation.
func (l *Live) ticksBefore(t algebra.Time) {
	for {
		next := algebra.Forever
		for i := range l.clocks {
			c := &l.clocks[i]
			if c.step <= 0 {
				continue
			}
			for !l.isNew(c.next) {
				c.next = algebra.NextTick(c.next, c.step) // instants already stepped had their ticks
			}
			if c.next < t && c.next <= l.end {
				next = min(next, c.next)
			}
		}
		if next == algebra.Forever {
			return
		}
		l.last, l.stepped = next, true
		l.tickAt(next)
		l.advanceAll(next)
	}
}

// isNew says whether instant t is after every instant stepped.
func (l *Live) isNew(t algebra.Time) bool { return !l.stepped || t > l.last }

// tickAt delivers the ticks at t.
func (l *Live) tickAt(t algebra.Time) {
	for i := range l.clocks {
		c := &l.clocks[i]
		if c.step > 0 && c.next == t && t <= l.end {
			c.tee.Push(stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{From: t}})
			c.next = algebra.NextTick(c.next, c.step)
		}
	}
}

// advanceAll advances the always-available streams to t and lets every α
// decide what it can.
func (l *Live) advanceAll(t algebra.Time) {
	l.n.Heartbeat.Advance(t)
	for _, tee := range l.n.Sources {
		tee.Advance(t)
	}
	for _, c := range l.clocks {
		c.tee.Advance(t)
	}
	for _, c := range l.n.Consts {
		c.Out.Advance(t)
	}
	for _, a := range l.n.Alphas {
		if n := len(a.cursor.steps); n == 0 || a.cursor.steps[n-1] < t {
			a.cursor.steps = append(a.cursor.steps, t)
		}
		a.catchUp(&l.stats)
	}
	l.n.notePeak()
}

// Advance promises that every input at or before w has been delivered:
// the instants due through w are stepped and the network advanced to w,
// once.
func (l *Live) Advance(w algebra.Time) error {
	stepped := l.stepDue(w)
	if l.isNew(w) {
		l.ticksBefore(algebra.Next(w))
		if l.isNew(w) {
			l.last, l.stepped, stepped = w, true, true
		}
	}
	if stepped {
		l.advanceAll(l.last)
	}
	return l.n.Err()
}

// Finish ends the observation at end: Clock ticks stop there, every
// stream ends, and tuples still open are valid until forever.
func (l *Live) Finish(end algebra.Time) (AcquireStats, error) {
	l.countSens()
	// Inputs delivered before Finish were, stepping instant by instant,
	// stepped as the next one came (ticks among them included, before the
	// end was known): all but the last instant due. So here.
	if n := len(l.due); n > 1 && l.stepDue(l.due[n-2]) {
		l.advanceAll(l.last)
	}
	l.end = end
	if err := l.Advance(end); err != nil {
		return l.stats, err
	}
	// Reports at the end of the observation (tuples still open).
	if l.stepDue(algebra.Forever) {
		l.advanceAll(l.last)
		if err := l.n.Err(); err != nil {
			return l.stats, err
		}
	}
	l.done = true
	l.n.Heartbeat.Advance(algebra.Forever)
	for _, tee := range l.n.Sources {
		tee.Advance(algebra.Forever)
	}
	for _, c := range l.clocks {
		c.tee.Advance(algebra.Forever)
	}
	for _, c := range l.n.Consts {
		c.Out.Advance(algebra.Forever)
	}
	for _, a := range l.n.Alphas {
		a.catchUp(&l.stats)
		if len(a.cursor.steps) > 0 || !a.ready(algebra.Forever) {
			return l.stats, fmt.Errorf("α %s: arguments never settled", a.VarName)
		}
		a.out.Advance(algebra.Forever)
	}
	l.stats.PeakHeld = l.n.PeakHeld()
	return l.stats, l.n.Err()
}
