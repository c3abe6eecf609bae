package record

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/store/db"
)

// Sink is what a recording writes into: a database's writer (DB) or a
// Parquet recording's (store/parquet.Writer, through SinkOf) — one
// recorder, several stores.
type Sink interface {
	Relation(name string) (RelSink, error)
	// Advance says the recording has reached t; SetWindow and
	// SetObservation set what is written with the next Sync.
	Advance(t algebra.Time)
	SetWindow(algebra.Window)
	SetObservation(db.Observation)
	// Sync makes what was given durable (as far as the store does).
	Sync() error
}

// RelSink writes one relation, as db.RelWriter does: elements in time
// order, Begins possibly late.
type RelSink interface {
	Begin(key uint64, from algebra.Time, vals []algebra.Value) error
	End(key uint64, to algebra.Time) (bool, error)
	Event(at algebra.Time, vals []algebra.Value) error
	Whole(from, to algebra.Time, vals []algebra.Value) error
}

// Store is a store's writer whose Relation gives its own relation
// writer type R.
type Store[R RelSink] interface {
	Relation(name string) (R, error)
	Advance(t algebra.Time)
	SetWindow(algebra.Window)
	SetObservation(db.Observation)
	Sync() error
}

// SinkOf makes a store's writer a Sink.
func SinkOf[R RelSink](w Store[R]) Sink { return sinkOf[R]{w} }

// DB is a database's writer as a Sink.
func DB(w *db.Writer) Sink { return SinkOf[*db.RelWriter](w) }

type sinkOf[R RelSink] struct{ Store[R] }

func (s sinkOf[R]) Relation(name string) (RelSink, error) {
	r, err := s.Store.Relation(name)
	if err != nil {
		return nil, err // not a nil R in an interface
	}
	return r, nil
}

// Tee writes one recording into several sinks (a database and Parquet
// files at once): each call goes to every sink, in order; the first
// error is returned.
func Tee(sinks ...Sink) Sink {
	if len(sinks) == 1 {
		return sinks[0]
	}
	return tee(sinks)
}

type tee []Sink

func (t tee) Relation(name string) (RelSink, error) {
	var out teeRel
	for _, s := range t {
		r, err := s.Relation(name)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (t tee) Advance(at algebra.Time) {
	for _, s := range t {
		s.Advance(at)
	}
}

func (t tee) SetWindow(w algebra.Window) {
	for _, s := range t {
		s.SetWindow(w)
	}
}

func (t tee) SetObservation(o db.Observation) {
	for _, s := range t {
		s.SetObservation(o)
	}
}

func (t tee) Sync() error {
	var first error
	for _, s := range t {
		if err := s.Sync(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

type teeRel []RelSink

func (t teeRel) each(fn func(RelSink) error) error {
	var first error
	for _, r := range t {
		if err := fn(r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (t teeRel) Begin(key uint64, from algebra.Time, vals []algebra.Value) error {
	return t.each(func(r RelSink) error { return r.Begin(key, from, vals) })
}

// End reports ok when the first sink knew the tuple (they all saw the
// same Begins).
func (t teeRel) End(key uint64, to algebra.Time) (bool, error) {
	ok := false
	err := t.each(func(r RelSink) error {
		k, err := r.End(key, to)
		if r == t[0] {
			ok = k
		}
		return err
	})
	return ok, err
}

func (t teeRel) Event(at algebra.Time, vals []algebra.Value) error {
	return t.each(func(r RelSink) error { return r.Event(at, vals) })
}

func (t teeRel) Whole(from, to algebra.Time, vals []algebra.Value) error {
	return t.each(func(r RelSink) error { return r.Whole(from, to, vals) })
}
