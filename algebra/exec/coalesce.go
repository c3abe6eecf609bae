package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Coalesce turns a multiset stream into a set, as docs/tquel.md requires of
// results: value-equivalent intervals that overlap or meet become one
// interval covering their union, and value-equivalent events at one chronon
// become one event.
//
// It counts, per value, the input intervals currently valid; the output
// interval begins when the count leaves zero and ends when it returns to
// zero — but only once the time of that End is complete, since a Begin at the
// same time continues the interval (meeting intervals merge). Outputs at the
// current time are therefore held until time moves on, then sent Ends first.
type Coalesce struct {
	out stream.Receiver
	// groups holds the values with an interval open or just ended, by
	// algebra.HashTuple; values whose hashes collide are chained (next).
	groups hashMap[*group]
	nGroup int
	// byRec maps each input interval pushed (Push's Begin) and not yet
	// ended to the group it counts in: its End finds the group without
	// hashing its values. The group lives at least until then (its count
	// includes the interval).
	byRec recMap[*group]
	hash  func([]algebra.Value) uint64 // algebra.HashTuple unless a test says

	cur      algebra.Time
	curSet   bool
	ending   []*group      // count fell to zero at cur
	begins   []stream.Elem // Begins and Events at cur
	lastAdv  algebra.Time
	advanced bool

	// evs are the values of the events at cur.
	evs eventSet

	// Allocation in blocks: groups (recycled once their interval is out)
	// and output records.
	free []*group
	gblk slab[group]
	rblk slab[stream.Rec]
	vblk slab[algebra.Value]
}

type group struct {
	hash    uint64
	vals    []algebra.Value
	next    *group // another group with the same hash
	count   int
	out     *stream.Rec
	pending bool // count is zero at cur; End not yet sent
}

// eventSet is a set of value tuples (the events at one time), in the
// order added. Up to evScan of them are told apart by comparing each;
// past that, seen indexes them all: by hash, the index (+1) in evs of the
// last one with that hash, evs chaining those sharing a hash.
type eventSet struct {
	seen hashMap[int] // hash → index (+1) of the last event with it
	evs  []seenEvent
}

// evScan is how many events at one time an eventSet compares one by one
// before it indexes them by hash.
const evScan = 8

type seenEvent struct {
	vals []algebra.Value
	next int // index (+1) of an earlier event with the same hash; 0: none
}

// has reports whether vals is in the set (hash is the run's hash).
func (s *eventSet) has(vals []algebra.Value, hash func([]algebra.Value) uint64) bool {
	if len(s.evs) < evScan {
		// Few events at t: compared one by one, without hashing (most
		// instants hold one event; a map cleared per instant cost more
		// than the rest of the operator).
		for i := range s.evs {
			if algebra.KeysEqual(s.evs[i].vals, vals) {
				return true
			}
		}
		return false
	}
	if len(s.evs) == evScan && s.seen.len() == 0 {
		for i := range s.evs { // index those scanned so far
			p := s.seen.ref(hash(s.evs[i].vals))
			s.evs[i].next = *p
			*p = i + 1
		}
	}
	for i := s.seen.get(hash(vals)); i != 0; i = s.evs[i-1].next {
		if algebra.KeysEqual(s.evs[i-1].vals, vals) {
			return true
		}
	}
	return false
}

// add adds vals, which has says is not in the set; the set keeps vals.
func (s *eventSet) add(vals []algebra.Value, hash func([]algebra.Value) uint64) {
	s.evs = append(s.evs, seenEvent{vals: vals})
	if len(s.evs) > evScan {
		p := s.seen.ref(hash(vals))
		s.evs[len(s.evs)-1].next = *p
		*p = len(s.evs)
	}
}

// len is the number of tuples in the set.
func (s *eventSet) len() int { return len(s.evs) }

// reset empties the set.
func (s *eventSet) reset() {
	if len(s.evs) > 0 {
		s.seen.reset()
		clearSmall(s.evs)
		s.evs = s.evs[:0]
	}
}

// NewCoalesce builds the operator.
func NewCoalesce(out stream.Receiver) *Coalesce {
	return &Coalesce{out: out, hash: algebra.HashTuple}
}

func (c *Coalesce) Push(e stream.Elem) {
	switch e.Kind {
	case stream.Event:
		c.event(e.T, e.Rec, e.Rec.Vals, false)
	case stream.Begin:
		c.byRec.put(e.Rec, c.begin(e.T, e.Rec.Vals, false))
	case stream.End:
		if g, ok := c.byRec.take(e.Rec); ok {
			c.end(e.T, g)
		}
	}
}

// The operator fed by call (Select): begin, end and event are Push's
// Begin, End and Event. A caller passing values in its own scratch says
// so (scratch): the values are copied when kept. begin returns the group
// counted, which end takes back: it lives at least until then.

// at moves the operator to time t: what happened before goes out.
func (c *Coalesce) at(t algebra.Time) {
	if !c.curSet || t != c.cur {
		c.flush()
		c.cur, c.curSet = t, true
	}
}

// event is an Event of vals at t; rec, if not nil, is a record of vals
// from t the output may be (an event's record is only read downstream).
func (c *Coalesce) event(t algebra.Time, rec *stream.Rec, vals []algebra.Value, scratch bool) {
	c.at(t)
	if c.evs.has(vals, c.hash) {
		return
	}
	if scratch {
		vals = c.copyVals(vals)
	}
	c.evs.add(vals, c.hash)
	if rec == nil || scratch || rec.From != t {
		rec = newRec(&c.rblk, vals, t)
	}
	c.begins = append(c.begins, stream.Elem{Kind: stream.Event, T: t, Rec: rec})
}

// begin is a Begin of vals at t.
func (c *Coalesce) begin(t algebra.Time, vals []algebra.Value, scratch bool) *group {
	c.at(t)
	h := c.hash(vals)
	g := c.lookup(h, vals)
	if g == nil {
		if scratch {
			vals = c.copyVals(vals)
		}
		g = c.newGroup(h, vals)
	}
	g.count++
	if g.pending {
		g.pending = false // meets the interval that ended here: continue it
		return g
	}
	if g.count == 1 {
		g.out = newRec(&c.rblk, g.vals, t)
		c.begins = append(c.begins, stream.Elem{Kind: stream.Begin, T: t, Rec: g.out})
	}
	return g
}

// end is the End at t of a tuple begin counted in g.
func (c *Coalesce) end(t algebra.Time, g *group) {
	c.at(t)
	g.count--
	if g.count == 0 {
		g.pending = true
		c.ending = append(c.ending, g)
	}
}

// copyVals copies values into the current block.
func (c *Coalesce) copyVals(vals []algebra.Value) []algebra.Value {
	out := c.vblk.take(len(vals))
	copy(out, vals)
	return out
}

// lookup finds the group of vals (hash h), or nil.
func (c *Coalesce) lookup(h uint64, vals []algebra.Value) *group {
	for g := c.groups.get(h); g != nil; g = g.next {
		if algebra.KeysEqual(g.vals, vals) {
			return g
		}
	}
	return nil
}

// newGroup adds an empty group for vals (hash h).
func (c *Coalesce) newGroup(h uint64, vals []algebra.Value) *group {
	var g *group
	if n := len(c.free); n > 0 {
		g, c.free = c.free[n-1], c.free[:n-1]
	} else {
		g = c.gblk.one()
	}
	head := c.groups.ref(h)
	*g = group{hash: h, vals: vals, next: *head}
	*head = g
	c.nGroup++
	return g
}

// remove takes g out of the groups and recycles it.
func (c *Coalesce) remove(g *group) {
	if head := c.groups.get(g.hash); head == g {
		if g.next == nil {
			c.groups.del(g.hash)
		} else {
			c.groups.put(g.hash, g.next)
		}
	} else {
		for p := head; p != nil; p = p.next {
			if p.next == g {
				p.next = g.next
				break
			}
		}
	}
	*g = group{}
	c.free = append(c.free, g)
	c.nGroup--
}

// flush sends what happened at the current time: Ends first.
func (c *Coalesce) flush() {
	for _, g := range c.ending {
		if g.pending {
			c.out.Push(stream.Elem{Kind: stream.End, T: c.cur, Rec: g.out})
			c.remove(g)
		}
	}
	clear(c.ending)
	c.ending = c.ending[:0]
	for i, e := range c.begins {
		c.out.Push(e)
		c.begins[i] = stream.Elem{}
	}
	c.begins = c.begins[:0]
	c.evs.reset()
}

func (c *Coalesce) Advance(t algebra.Time) {
	if c.curSet && t >= c.cur {
		c.flush()
		c.curSet = false
	}
	if !c.advanced || t > c.lastAdv {
		c.lastAdv, c.advanced = t, true
		c.out.Advance(t)
	}
}

// Held counts open output intervals and outputs waiting for their time to
// complete.
func (c *Coalesce) Held() int { return c.nGroup + len(c.begins) }
