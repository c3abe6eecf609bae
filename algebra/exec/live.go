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
type Live struct {
	n      *Network
	bySens map[string][]*Alpha
	inbox  map[*Alpha][]packet
	// pending entity elements at the current instant
	ents   []stream.Elem
	entTee []*stream.Tee
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
}

type liveClock struct {
	step int64
	tee  *stream.Tee
	next algebra.Time
}

type liveSource struct{ l *Live }

func (s liveSource) packetsAt(a *Alpha, t algebra.Time) []packet {
	q := s.l.inbox[a]
	i := 0
	for i < len(q) && q[i].t <= t {
		i++
	}
	out := q[:i:i]
	s.l.inbox[a] = q[i:]
	return out
}

func (s liveSource) count(packet) {}

// Live prepares the network for live input observed from start (global
// time: Clock ticks begin there).
func (n *Network) Live(start algebra.Time) *Live {
	l := &Live{n: n, bySens: map[string][]*Alpha{}, inbox: map[*Alpha][]packet{}, open: map[uint64]*stream.Rec{},
		start: start, end: algebra.Forever, last: algebra.Beginning}
	l.stats = AcquireStats{Packets: map[string]int{}, PeakEnabled: map[string]int{}}
	for _, a := range n.Alphas {
		l.bySens[a.Rel.Name] = append(l.bySens[a.Rel.Name], a)
		a.src = liveSource{l}
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

var kinds = map[stream.PacketKind]pkind{
	stream.PacketEvent: pEvent, stream.PacketBegin: pBegin, stream.PacketEnd: pEnd, stream.PacketWhole: pWhole,
	stream.PacketSample: pSample, stream.PacketSampleEnd: pSampleEnd,
}

// time moves the driver to instant t, stepping through every instant
// before it.
func (l *Live) time(t algebra.Time) error {
	if l.done {
		return fmt.Errorf("live: input after the end")
	}
	if l.have && t < l.cur {
		return fmt.Errorf("live: input at %d after input at %d: the merge must deliver in time order", t, l.cur)
	}
	if l.have && t > l.cur {
		if err := l.stepTo(l.cur); err != nil {
			return err
		}
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
func (l *Live) Packet(rel string, kind stream.PacketKind, key uint64, from algebra.Time, vals []algebra.Value, t algebra.Time) error {
	if err := l.time(t); err != nil {
		return err
	}
	l.stats.Packets[rel]++
	l.stats.Total++
	for _, a := range l.bySens[rel] {
		l.inbox[a] = append(l.inbox[a], packet{kind: kinds[kind], t: t, key: key, from: from, vals: vals, row: -1})
	}
	return nil
}

// stepTo processes instant t: Clock ticks before t (each an instant of
// its own), then entity tuples at t (Ends first; a tuple that begins and
// ends at t is empty and dropped) and a tick at t, then α operators.
func (l *Live) stepTo(t algebra.Time) error {
	if !l.isNew(t) {
		return nil
	}
	l.ticksBefore(t)
	l.last, l.stepped = t, true
	empty := map[*stream.Rec]bool{}
	for _, e := range l.ents {
		if e.Kind == stream.End && e.Rec.From == t {
			empty[e.Rec] = true
		}
	}
	for _, phase := range []stream.Kind{stream.End, stream.Begin} {
		for i, e := range l.ents {
			if e.Kind == phase && !empty[e.Rec] {
				l.entTee[i].Push(e)
			}
		}
	}
	l.ents, l.entTee = l.ents[:0], l.entTee[:0]
	l.tickAt(t)
	l.advanceAll(t)
	return l.n.Err()
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

// Advance promises that every input at or before w has been delivered.
func (l *Live) Advance(w algebra.Time) error {
	if l.have && l.cur <= w {
		if err := l.stepTo(l.cur); err != nil {
			return err
		}
	}
	if l.isNew(w) {
		l.ticksBefore(algebra.Next(w))
		if l.isNew(w) {
			l.last, l.stepped = w, true
			l.advanceAll(w)
		}
	}
	return l.n.Err()
}

// Finish ends the observation at end: Clock ticks stop there, every
// stream ends, and tuples still open are valid until forever.
func (l *Live) Finish(end algebra.Time) (AcquireStats, error) {
	l.end = end
	if err := l.Advance(end); err != nil {
		return l.stats, err
	}
	if l.have && l.cur > end {
		// Reports at the end of the observation (tuples still open).
		if err := l.stepTo(l.cur); err != nil {
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
