package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// runState is shared by the operators of a network: the first runtime error
// stops the run.
type runState struct {
	err error
	// check, when the run has a budget, checks it (Network.checkBudget);
	// poll calls it every pollStride steps.
	check func()
	steps uint
	// hash keys Coalesce groups and join indexes: algebra.HashTuple, or in
	// tests a hash under which keys collide (Options.collide).
	hash func([]algebra.Value) uint64
}

// holds reports whether every conjunct of fs is true over b, in order; a
// conjunct failing with an error fails the run and holds is false.
func (s *runState) holds(fs []expr.Fn, b expr.Binding) bool {
	for _, f := range fs {
		ok, err := f(b)
		if err != nil {
			s.fail(err)
			return false
		}
		if !ok.B() {
			return false
		}
	}
	return true
}

func (s *runState) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// holder is implemented by operators that keep tuples, for statistics.
type holder interface {
	// Held is the number of tuples (stored inputs, pending decisions and
	// buffered outputs) the operator holds now.
	Held() int
}

// slab hands out Ts from blocks of slabBlock, so that operators allocate
// per block, not per tuple. Nothing it hands out is handed out again (a
// block lives while any of it is referenced), so what takes from it may
// keep pointers for as long as it likes.
type slab[T any] struct{ rest []T }

// slabBlock is how many Ts a block holds (or how many runs of n, for n > 1).
const slabBlock = 256

// one takes a zero T.
func (s *slab[T]) one() *T { return &s.take(1)[0] }

// peek is the next n Ts, not taken: a later take(n) takes them (as they
// were then written). They are zero unless written since.
func (s *slab[T]) peek(n int) []T {
	if len(s.rest) < n {
		s.rest = make([]T, max(n*slabBlock, n))
	}
	return s.rest[:n:n]
}

// take takes the next n Ts.
func (s *slab[T]) take(n int) []T {
	p := s.peek(n)
	s.rest = s.rest[n:]
	return p
}

// clearSmall zeroes s, as clear does, storing one element's zero itself:
// clear calls the runtime, which during a collection also marks what the
// pointers held (a bulk write barrier), per call — for the one element
// most instants hold, more than the rest of the reset.
func clearSmall[T any](s []T) {
	if len(s) == 1 {
		var zero T
		s[0] = zero
		return
	}
	clear(s)
}

// newRec takes a record of vals from from.
func newRec(s *slab[stream.Rec], vals []algebra.Value, from algebra.Time) *stream.Rec {
	r := s.one()
	*r = stream.Rec{Vals: vals, From: from}
	return r
}

// arena hands out Ts like a slab, but what it handed out is handed out
// again after reset: it is for what an operator emits into a network
// that forgets it (forgets), reset once the network has (after the
// operator's output advanced). Its buffer grows to the most taken
// between two resets (a grown buffer is new: the old one lives while
// referenced) and is cleared at reset, so that take returns zero Ts and
// the buffer holds no stale pointer.
type arena[T any] struct {
	buf   []T
	n, hi int // buf[:n] is taken; buf[:hi] was written (peek)
}

// peek is the next n Ts, not taken: a later take(n) takes them (as they
// were then written). They are zero unless written since.
func (a *arena[T]) peek(n int) []T {
	if a.n+n > len(a.buf) {
		a.buf, a.n, a.hi = make([]T, max(2*len(a.buf), n, slabBlock)), 0, 0
	}
	a.hi = max(a.hi, a.n+n)
	return a.buf[a.n : a.n+n : a.n+n]
}

// take takes the next n Ts.
func (a *arena[T]) take(n int) []T {
	p := a.peek(n)
	a.n += n
	return p
}

// reset makes everything taken free again: nothing may reference it.
func (a *arena[T]) reset() {
	clear(a.buf[:a.hi])
	a.n, a.hi = 0, 0
}

// outBlocks are where an operator takes the records and values it
// emits: from slabs (never handed out again), or, where its output
// forgets them (forgets; set by Network.Live), from arenas reset once
// its output has advanced (reset). The zero value takes every one from
// the slabs.
type outBlocks struct {
	recBlk slab[stream.Rec]
	valBlk slab[algebra.Value]
	// reuseRecs, reuseVals: records, values, come from recs, vals.
	reuseRecs, reuseVals bool
	recs                 arena[stream.Rec]
	vals                 arena[algebra.Value]
}

// rec takes a record of vals from from.
func (o *outBlocks) rec(vals []algebra.Value, from algebra.Time) *stream.Rec {
	if o.reuseRecs {
		r := &o.recs.take(1)[0]
		*r = stream.Rec{Vals: vals, From: from}
		return r
	}
	return newRec(&o.recBlk, vals, from)
}

// peekVals and takeVals are the values' slab's or arena's peek and take.
func (o *outBlocks) peekVals(n int) []algebra.Value {
	if o.reuseVals {
		return o.vals.peek(n)
	}
	return o.valBlk.peek(n)
}

func (o *outBlocks) takeVals(n int) []algebra.Value {
	if o.reuseVals {
		return o.vals.take(n)
	}
	return o.valBlk.take(n)
}

// reuse sets what is taken from the arenas, as out forgets it.
func (o *outBlocks) reuse(out stream.Receiver) {
	o.reuseRecs, o.reuseVals = forgets(out, false), forgets(out, true)
}

// reset frees what the arenas handed out: the output has advanced past
// it (and forgot it).
func (o *outBlocks) reset() {
	if o.reuseRecs {
		o.recs.reset()
	}
	if o.reuseVals {
		o.vals.reset()
	}
}

// forgets reports whether receiver r keeps nothing of the Event elements
// pushed to it once its Advance (at or past their times) has returned:
// not their records (a record may then be reused), nor, when vals, the
// records' value slices (the Values are copied where kept: strings are
// immutable). It is the ownership contract that lets an operator take
// what it emits from an arena (recArena) reset after its output
// advanced. It knows the receivers below and answers false for any
// other (a join, a coalesce, an Apply keep what they are pushed):
//
//   - a Tee forgets what each of its receivers forgets;
//   - a Cut passes events on at once or at its next Advance, before
//     advancing its output, and keeps only Begins' records: it forgets
//     what its output forgets;
//   - a Collector that keeps no rows (Discard), or (recs only) keeps
//     rows, which hold values, not records, forgets them when its OnElem
//     borrows (Collector.Borrow) or is not set;
//   - a FusedAgg copies the values it keeps past its instant (group
//     keys, outer rows computed, results computed) and flushes its
//     instant at an Advance at or past it: it keeps no input record,
//     and an input's values only until then (an outer row shared with
//     its input);
//   - a Select of events makes its own records (it keeps an interval's
//     input record) and passes an event's values on when it selects them
//     by reference (or to its Coalesce, which keeps them).
//
// Only event relations' αs and FusedAggs (whose output are events) use
// it: an interval's Begin record is kept until its End.
func forgets(r stream.Receiver, vals bool) bool {
	switch r := r.(type) {
	case *stream.Tee:
		for _, o := range r.Outs {
			if !forgets(o, vals) {
				return false
			}
		}
		return true
	case *Cut:
		return forgets(r.out, vals)
	case *Collector:
		return (r.OnElem == nil || r.Borrow) && (!vals || r.Discard)
	case *FusedAgg:
		return true
	case *Select:
		switch {
		case !r.event && !r.at:
			return false // (it would keep the record)
		case !vals || !r.byRef:
			return true
		}
		return r.co == nil && forgets(r.out, true)
	}
	return false
}
