package record

import (
	"fmt"
	"os"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/db"
)

// ResultDB stores the results of named retrieves in a database (tqmon
// query --record, the shell's \record), as they are produced or as whole
// tables.
type ResultDB struct {
	db    *db.DB
	own   bool // the ResultDB opened db (and closes it)
	w     *db.Writer
	d     *Derived
	fresh bool
}

// OpenResults opens the database at dir — or uses into, when given (the
// database a run reads) — creating it with spec when it does not exist,
// and declares the retrieves' result relations there. window is the span
// the results cover, written when the database is new. Errors are the
// caller's (usage) errors.
func OpenResults(dir string, into *db.DB, spec db.Spec, stmts []*check.Retrieve, window *algebra.Window) (*ResultDB, error) {
	rels, err := Results(stmts)
	if err != nil {
		return nil, err
	}
	r := &ResultDB{db: into}
	if into == nil {
		r.own = true
		r.db, err = db.Open(dir, db.Options{})
		if err != nil && !isMissing(dir) {
			return nil, fmt.Errorf("--record: %w", err)
		}
		if err != nil {
			if r.db, err = db.Create(dir, spec); err != nil {
				return nil, fmt.Errorf("--record: %w", err)
			}
			r.fresh = true
		}
	}
	fail := func(err error) (*ResultDB, error) {
		if r.own {
			r.db.Close()
		}
		return nil, fmt.Errorf("--record: %w", err)
	}
	if err := r.db.AddRelations(rels); err != nil {
		return fail(err)
	}
	if r.w, err = r.db.NewWriter(db.WriterOptions{}); err != nil {
		return fail(err)
	}
	if r.fresh && window != nil {
		r.w.SetWindow(*window)
	}
	names := make([]string, len(rels))
	for i, rel := range rels {
		names[i] = rel.Name
	}
	if r.d, err = NewDerived(r.w, names); err != nil {
		r.w.Close()
		return fail(err)
	}
	return r, nil
}

// isMissing reports whether dir does not exist or is empty: a new
// database may be made there.
func isMissing(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}

// Elem records one result element of statement i.
func (r *ResultDB) Elem(i int, e stream.Elem) { r.d.Elem(i, e) }

// Table records statement i's whole result.
func (r *ResultDB) Table(i int, t *algebra.Table) { r.d.Table(i, t) }

// Observed sets the span a live run observed as the window of a new
// database.
func (r *ResultDB) Observed(w algebra.Window) {
	if r.fresh {
		r.w.SetWindow(w)
	}
}

// Close makes the results durable (what was written stands after a
// failed run too).
func (r *ResultDB) Close() error {
	err := r.d.Err()
	if cerr := r.w.Close(); err == nil {
		err = cerr
	}
	if r.own {
		if cerr := r.db.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("--record: %w", err)
	}
	return nil
}
