package scene

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Tuple is a tuple of a displayed relation: its values and valid time.
// To is algebra.Forever while the tuple is open; an event at t is [t, t+1).
type Tuple struct {
	Vals     []algebra.Value
	From, To algebra.Time
	Event    bool
}

// HistoryCap bounds the closed tuples and events a Relation keeps for the
// timeline.
const HistoryCap = 1 << 15

// Relation holds the tuples of one displayed relation: those open now and
// the most recent closed ones and events. It is fed the relation's deltas
// (Push) and passes them on to the views the spec draws it with.
type Relation struct {
	Rel  *algebra.Relation
	open map[*stream.Rec]*Tuple
	// hist is a ring of closed tuples and events in the order they closed.
	hist  []*Tuple
	head  int
	full  bool
	views []view
	// Count is the number of elements received.
	Count int
}

// view is one display statement's part of the model over a relation.
type view interface {
	begin(t *Tuple)
	end(t *Tuple)
	event(t *Tuple)
}

func newRelation(r *algebra.Relation) *Relation {
	return &Relation{Rel: r, open: map[*stream.Rec]*Tuple{}, hist: make([]*Tuple, 0, 64)}
}

// Push applies one delta of the relation: a tuple begins, ends, or an
// event happens.
func (r *Relation) Push(e stream.Elem) {
	r.Count++
	switch e.Kind {
	case stream.Begin, stream.Late:
		t := &Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Forever}
		if e.Kind == stream.Late {
			t.From = e.Rec.From
		}
		r.open[e.Rec] = t
		for _, v := range r.views {
			v.begin(t)
		}
	case stream.End:
		t := r.open[e.Rec]
		if t == nil {
			return
		}
		delete(r.open, e.Rec)
		t.To = e.T
		r.remember(t)
		for _, v := range r.views {
			v.end(t)
		}
	case stream.Event:
		t := &Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Next(e.T), Event: true}
		r.remember(t)
		for _, v := range r.views {
			v.event(t)
		}
	case stream.Whole:
		t := &Tuple{Vals: e.Rec.Vals, From: e.Rec.From, To: e.T}
		for _, v := range r.views {
			v.begin(t)
		}
		r.remember(t)
		for _, v := range r.views {
			v.end(t)
		}
	}
}

func (r *Relation) remember(t *Tuple) {
	if len(r.hist) < HistoryCap {
		r.hist = append(r.hist, t)
		return
	}
	r.hist[r.head] = t
	r.head = (r.head + 1) % HistoryCap
	r.full = true
}

// Closed calls f for the closed tuples and events kept, newest first,
// until f returns false.
func (r *Relation) Closed(f func(*Tuple) bool) {
	n := len(r.hist)
	for i := 0; i < n; i++ {
		j := (r.head - 1 - i + 2*n) % n
		if !r.full {
			j = n - 1 - i
		}
		if !f(r.hist[j]) {
			return
		}
	}
}

// Open calls f for each open tuple, in no particular order.
func (r *Relation) Open(f func(*Tuple)) {
	for _, t := range r.open {
		f(t)
	}
}
