package format

import (
	"fmt"
	"io"

	"github.com/tqmon/tqmon/algebra"
)

// Rows prints result elements as a run produces them: a Stream (each row
// as it is produced) or a Sorted (the rows of whole tables, as they
// settle).
type Rows interface {
	// Begin notes that a tuple of result i (identified by id) began.
	Begin(i int, id any, vals []algebra.Value, at algebra.Time)
	// End notes that the tuple id of result i ended.
	End(i int, id any, at algebra.Time) error
	// Event notes an event of result i.
	Event(i int, vals []algebra.Value, at algebra.Time) error
	// Close writes what is left: the tuples still open are valid until
	// forever.
	Close() error
}

// Sorted writes results exactly as Write writes their tables (in the
// order of algebra.Table.SortRows, the results one after another separated
// by a blank line), but each row as soon as it has settled: its end is
// known and no row still to come can sort before it. It relies on each
// result's elements coming in time order, as a network's results do: a
// row begins no earlier than the latest element seen, so a complete row
// that begins before that time, and sorts first among those not yet
// written, is final. A row still open holds back the rows after it.
//
// Only the first result's rows (and CSV header) go out before Close, and
// only in CSV and JSON Lines; the table form aligns its columns over all
// rows and later results follow the earlier ones, so those are written at
// Close. What has been written is not kept: a Sorted holds the rows not
// yet written. It is not safe for concurrent use.
type Sorted struct {
	w   io.Writer
	o   Options
	res []*sortedResult
	err error
	buf []byte // a row's bytes
}

// sortedResult is one result's rows not yet written.
type sortedResult struct {
	rel     *algebra.Relation
	name    string // RelName: JSONL rows carry it
	pending rowHeap
	open    map[any]*sortedRow
	lo      algebra.Time // the latest element's time: no later row begins before it
	started bool         // its first line (a CSV header) is written
	last    *algebra.Tuple
	rw      rowWriter
}

// sortedRow is a row not yet written; open while its end is unknown (To
// is then Forever, where it sorts among rows with the same begin and
// values — which a result, a set, does not have).
type sortedRow struct {
	algebra.Tuple
	open bool
	idx  int
}

// NewSorted prepares the sorted output of results of the given relations.
func NewSorted(w io.Writer, o Options, rels []*algebra.Relation) *Sorted {
	s := &Sorted{w: w, o: o}
	for i, rel := range rels {
		s.res = append(s.res, newSortedResult(rel, RelName(rel, i), o))
	}
	return s
}

// Begin notes that a tuple of result i began.
func (s *Sorted) Begin(i int, id any, vals []algebra.Value, at algebra.Time) {
	r := s.res[i]
	row := &sortedRow{Tuple: algebra.Tuple{Vals: vals, From: at, To: algebra.Forever}, open: true}
	r.open[id] = row
	s.add(i, row)
}

// End notes that tuple id of result i ended at t, and writes what that
// settles.
func (s *Sorted) End(i int, id any, at algebra.Time) error {
	r := s.res[i]
	row := r.open[id]
	if row == nil {
		return s.err
	}
	delete(r.open, id)
	row.To, row.open = at, false
	r.pending.fix(row.idx)
	r.lo = max(r.lo, at)
	return s.settle(i)
}

// Event notes an event of result i and writes what that settles.
func (s *Sorted) Event(i int, vals []algebra.Value, at algebra.Time) error {
	s.add(i, &sortedRow{Tuple: algebra.Tuple{Vals: vals, From: at, To: algebra.Next(at)}})
	return s.settle(i)
}

func (s *Sorted) add(i int, row *sortedRow) {
	r := s.res[i]
	if r.last != nil && algebra.LessTuple(&row.Tuple, r.last) && s.err == nil {
		// A row written already should have come after this one: the
		// result's elements were not in time order.
		s.err = fmt.Errorf("result %s: a row beginning at %s came after rows that sort after it were written", r.rel.Name, algebra.FormatTime(row.From, s.o.Time))
	}
	r.pending.push(row)
	r.lo = max(r.lo, row.From)
}

// settle writes the first result's settled rows.
func (s *Sorted) settle(i int) error {
	if i != 0 || s.o.Kind == Table || s.err != nil {
		return s.err
	}
	r := s.res[0]
	for len(r.pending) > 0 {
		head := r.pending[0]
		if head.open || head.From >= r.lo {
			break
		}
		r.pending.pop()
		if err := s.write(r, &head.Tuple); err != nil {
			return err
		}
	}
	return s.err
}

func newSortedResult(rel *algebra.Relation, name string, o Options) *sortedResult {
	return &sortedResult{rel: rel, name: name, open: map[any]*sortedRow{}, lo: algebra.Beginning, rw: rowWriter{rel: rel, tf: o.Time}}
}

// write writes one row of result r, its header first.
func (s *Sorted) write(r *sortedResult, t *algebra.Tuple) error {
	r.last = t
	b := s.buf[:0]
	switch s.o.Kind {
	case JSONL:
		r.started = true
		b = r.rw.jsonRow(b, r.name, t)
	case CSV:
		if !r.started {
			r.started = true
			b = r.rw.csvRecord(b, Header(r.rel))
		}
		b = r.rw.csvRow(b, "", t)
	}
	s.buf = b
	if _, err := s.w.Write(b); err != nil && s.err == nil {
		s.err = err
	}
	return s.err
}

// Close writes every result's rows not yet written, the tuples still open
// valid until forever, and the table form's tables.
func (s *Sorted) Close() error {
	for i, r := range s.res {
		if s.err != nil {
			return s.err
		}
		if i > 0 {
			if _, err := fmt.Fprintln(s.w); err != nil {
				return err
			}
		}
		clear(r.open)
		if s.o.Kind == Table {
			t := &algebra.Table{Rel: r.rel}
			for len(r.pending) > 0 {
				t.Rows = append(t.Rows, r.pending.pop().Tuple)
			}
			if err := writeTable(s.w, t, s.o); err != nil {
				return err
			}
			continue
		}
		for len(r.pending) > 0 {
			if err := s.write(r, &r.pending.pop().Tuple); err != nil {
				return err
			}
		}
		if s.o.Kind == CSV && !r.started {
			// An empty result is its header.
			if err := Write(s.w, &algebra.Table{Rel: r.rel}, s.o); err != nil {
				return err
			}
		}
	}
	s.res = nil
	return s.err
}

// Restart forgets the rows not yet written and what has been written: the
// results' elements are coming again from the start (a run over a
// history begins again), and the output with them.
func (s *Sorted) Restart() {
	for i, r := range s.res {
		s.res[i] = newSortedResult(r.rel, r.name, s.o)
	}
	s.err = nil
}

// rowHeap orders rows as algebra.Table.SortRows does: a binary heap,
// typed (container/heap's interface calls were a tenth of a whole
// command's time), each row knowing its index for fix.
type rowHeap []*sortedRow

func (h rowHeap) less(i, j int) bool { return algebra.LessTuple(&h[i].Tuple, &h[j].Tuple) }

func (h rowHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *rowHeap) push(r *sortedRow) {
	r.idx = len(*h)
	*h = append(*h, r)
	h.up(r.idx)
}

func (h *rowHeap) pop() *sortedRow {
	q := *h
	n := len(q) - 1
	q.swap(0, n)
	r := q[n]
	q[n] = nil
	*h = q[:n]
	h.down(0)
	return r
}

// fix restores the order after row i's key changed.
func (h rowHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h rowHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down moves row i down to its place, reporting whether it moved.
func (h rowHeap) down(i int) bool {
	i0, n := i, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > i0
}
