package db

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Progress reports how far a long operation is: done of total units.
type Progress func(done, total uint64)

// History reads the whole database into a history: every relation, the
// observation window. Tuples whose end was never recorded are open.
func (d *DB) History(progress Progress) (*algebra.History, error) {
	h := algebra.NewHistory(d.cat)
	h.Window = d.Window()
	d.fillObservation(h)
	var reads []Read
	var total uint64
	for _, m := range d.rels {
		reads = append(reads, Read{Rel: m.rel.Name})
		total += m.state.elements
	}
	src, err := d.NewSource(reads)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	type slot struct {
		tab *algebra.Table
		i   int
	}
	open := map[*stream.Rec]slot{}
	var done uint64
	for {
		rel, e, ok, err := src.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		done++
		if progress != nil && done%65536 == 0 {
			progress(done, total)
		}
		tab := h.Tables[rel]
		switch e.Kind {
		case stream.Begin:
			open[e.Rec] = slot{tab, len(tab.Rows)}
			tab.Rows = append(tab.Rows, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Forever})
		case stream.End:
			if s, ok := open[e.Rec]; ok {
				s.tab.Rows[s.i].To = e.T
				delete(open, e.Rec)
			}
		case stream.Event:
			tab.AddEvent(e.Rec.Vals, e.T)
		}
	}
	if progress != nil {
		progress(total, total)
	}
	for _, t := range h.Tables {
		t.SortRows()
	}
	return h, nil
}

// Import writes a history into the database (whose catalog must have its
// relations): every tuple, in time order, and its window.
func (d *DB) Import(h *algebra.History, opts WriterOptions, progress Progress) error {
	var total, done uint64
	for _, t := range h.Tables {
		total += uint64(len(t.Rows))
	}
	w, err := d.NewWriter(opts)
	if err != nil {
		return err
	}
	if h.Window != nil {
		w.SetWindow(*h.Window)
	}
	type item struct {
		t     int64
		phase uint8
		row   int
	}
	for _, r := range h.Catalog.Relations {
		t := h.Table(r.Name)
		if t == nil || len(t.Rows) == 0 {
			continue
		}
		if err := t.Validate(); err != nil {
			w.Close()
			return err
		}
		rw, err := w.Relation(r.Name)
		if err != nil {
			w.Close()
			return err
		}
		items := make([]item, 0, 2*len(t.Rows))
		for i, row := range t.Rows {
			items = append(items, item{row.From, 1, i})
			if !r.IsEvent() && row.To != algebra.Forever {
				items = append(items, item{row.To, 0, i})
			}
		}
		slices.SortFunc(items, func(a, b item) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			if c := cmp.Compare(a.phase, b.phase); c != 0 {
				return c
			}
			return cmp.Compare(a.row, b.row)
		})
		for _, it := range items {
			row := &t.Rows[it.row]
			switch {
			case r.IsEvent():
				err = rw.Event(row.From, row.Vals)
			case it.phase == 1:
				err = rw.Begin(uint64(it.row), row.From, row.Vals)
			default:
				var ok bool
				ok, err = rw.End(uint64(it.row), row.To)
				if err == nil && !ok {
					err = fmt.Errorf("%s: tuple %d ends before it begins", r.Name, it.row)
				}
			}
			if err != nil {
				w.Close()
				return err
			}
			if it.phase == 1 {
				done++
				if progress != nil && done%65536 == 0 {
					progress(done, total)
				}
			}
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if progress != nil {
		progress(total, total)
	}
	return nil
}
