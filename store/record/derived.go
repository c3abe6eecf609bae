package record

import (
	"fmt"
	"sync"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/db"
)

// Results lists the result relations of retrieves to record: every
// retrieve must be named (its name names the stored relation).
func Results(stmts []*check.Retrieve) ([]*algebra.Relation, error) {
	var out []*algebra.Relation
	for i, s := range stmts {
		if s.Name == "" {
			return nil, fmt.Errorf("%s:%d:%d: --record stores each retrieve's result under its name: name retrieve %d (retrieve NAME (…) or retrieve into NAME (…))",
				s.File, s.Pos.Line, s.Pos.Col, i+1)
		}
		out = append(out, s.Result)
	}
	return out, nil
}

// Derived records the results of a program's retrieves as they are
// produced (an interpreter Collector's elements), or whole tables.
type Derived struct {
	mu   sync.Mutex
	rels []*db.RelWriter
	keys map[*stream.Rec]uint64
	next uint64
	err  error
}

// NewDerived records statement i's results into relation names[i] of w's
// database (added there with AddRelations).
func NewDerived(w *db.Writer, names []string) (*Derived, error) {
	d := &Derived{keys: map[*stream.Rec]uint64{}}
	for _, n := range names {
		rw, err := w.Relation(n)
		if err != nil {
			return nil, err
		}
		d.rels = append(d.rels, rw)
	}
	return d, nil
}

// Elem records one result element of statement i.
func (d *Derived) Elem(i int, e stream.Elem) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return
	}
	rw := d.rels[i]
	var err error
	switch e.Kind {
	case stream.Begin:
		d.next++
		d.keys[e.Rec] = d.next
		err = rw.Begin(d.next, e.T, e.Rec.Vals)
	case stream.End:
		key, ok := d.keys[e.Rec]
		if !ok {
			return
		}
		delete(d.keys, e.Rec)
		_, err = rw.End(key, e.T)
	case stream.Event:
		err = rw.Event(e.T, e.Rec.Vals)
	}
	if err != nil {
		d.err = fmt.Errorf("recording %s: %w", rw.Name(), err)
	}
}

// Table records a whole result table of statement i.
func (d *Derived) Table(i int, t *algebra.Table) error {
	for _, e := range Elems(t) {
		d.Elem(i, e)
	}
	return d.Err()
}

// Err is the first error met.
func (d *Derived) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Elems are a table's tuples as a time-ordered element stream.
func Elems(t *algebra.Table) []stream.Elem { return stream.TableElems(t) }
