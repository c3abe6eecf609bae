package format

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"sort"

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
	pending rowGroups
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
	r.pending.closed(row.From)
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
	r.pending.add(row)
	r.lo = max(r.lo, row.From)
}

// settle writes the first result's settled rows.
func (s *Sorted) settle(i int) error {
	if i != 0 || s.o.Kind == Table || s.err != nil {
		return s.err
	}
	r := s.res[0]
	for {
		rows := r.pending.first(r.lo, false)
		if rows == nil {
			return s.err
		}
		for _, row := range rows {
			if err := s.write(r, &row.Tuple); err != nil {
				return err
			}
		}
		r.pending.drop()
	}
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
			for rows := r.pending.first(0, true); rows != nil; rows = r.pending.first(0, true) {
				for _, row := range rows {
					t.Rows = append(t.Rows, row.Tuple)
				}
				r.pending.drop()
			}
			if err := writeTable(s.w, t, s.o); err != nil {
				return err
			}
			continue
		}
		for rows := r.pending.first(0, true); rows != nil; rows = r.pending.first(0, true) {
			for _, row := range rows {
				if err := s.write(r, &row.Tuple); err != nil {
					return err
				}
			}
			r.pending.drop()
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

// rowGroups holds a result's rows not yet written, in groups of equal
// begin, least first — the order algebra.Table.SortRows gives between
// groups. A result's rows come in time order, so a row begins in the last
// group or a new one after it (one that does not, out of order, is put in
// its place all the same). A group goes out whole once none of its rows
// is open and no row still to come can begin in it (its begin is before
// the latest element's time): its rows are then sorted among themselves
// — by values, then end — and only then, so a row is compared only with
// rows of its own begin (a heap over every pending row compared each
// with rows of other begins too, and its comparisons were a tenth of a
// whole command's time). An open row holds back the rest of its group
// with it, and the groups after.
type rowGroups struct {
	rows   []*sortedRow // from rowAt: the groups' rows, group after group
	rowAt  int
	groups []rowGroup // from grpAt
	grpAt  int
}

// rowGroup is the rows beginning at from: n of them, open of them open.
type rowGroup struct {
	from    algebra.Time
	n, open int
}

// add adds a row, open or not.
func (g *rowGroups) add(row *sortedRow) {
	open := 0
	if row.open {
		open = 1
	}
	if n := len(g.groups); n > g.grpAt && g.groups[n-1].from == row.From {
		g.groups[n-1].n++
		g.groups[n-1].open += open
		g.rows = append(g.rows, row)
		return
	}
	if n := len(g.groups); n == g.grpAt || g.groups[n-1].from < row.From {
		g.groups = append(g.groups, rowGroup{from: row.From, n: 1, open: open})
		g.rows = append(g.rows, row)
		return
	}
	// Out of time order: into its group, made where it belongs.
	k, at := g.find(row.From)
	if k == len(g.groups) || g.groups[k].from != row.From {
		g.groups = append(g.groups[:k], append([]rowGroup{{from: row.From}}, g.groups[k:]...)...)
	}
	g.groups[k].n++
	g.groups[k].open += open
	at += g.groups[k].n - 1
	g.rows = append(g.rows[:at], append([]*sortedRow{row}, g.rows[at:]...)...)
}

// find is the index of the first group beginning at or after from, and
// the index in rows of its first row.
func (g *rowGroups) find(from algebra.Time) (int, int) {
	at := g.rowAt
	for k := g.grpAt; k < len(g.groups); k++ {
		if g.groups[k].from >= from {
			return k, at
		}
		at += g.groups[k].n
	}
	return len(g.groups), at
}

// closed notes that an open row beginning at from has ended.
func (g *rowGroups) closed(from algebra.Time) {
	n := len(g.groups)
	if n > g.grpAt && g.groups[n-1].from == from { // mostly the last group, or the first
		g.groups[n-1].open--
		return
	}
	if g.groups[g.grpAt].from == from {
		g.groups[g.grpAt].open--
		return
	}
	// Any other group: found by binary search (the groups from grpAt on
	// begin in increasing order), not by find's walk, which would make a
	// row held back behind one long-open row cost O(groups) at its end
	// (quadratic over a history; TestSortedEndsBehindOpenRow).
	k := g.grpAt + sort.Search(len(g.groups)-g.grpAt, func(j int) bool { return g.groups[g.grpAt+j].from >= from })
	g.groups[k].open--
}

// first is the first group's rows, sorted, if it can go out: none of its
// rows open and its begin before lo (or, at the end, whatever it holds:
// its open rows valid until forever); nil otherwise, or when there are
// none. drop removes them.
func (g *rowGroups) first(lo algebra.Time, end bool) []*sortedRow {
	if g.grpAt == len(g.groups) {
		return nil
	}
	grp := g.groups[g.grpAt]
	if !end && (grp.open > 0 || grp.from >= lo) {
		return nil
	}
	rows := g.rows[g.rowAt : g.rowAt+grp.n]
	if len(rows) > 1 {
		slices.SortFunc(rows, func(a, b *sortedRow) int { // LessTuple's order, at one begin
			if c := algebra.CompareTuples(a.Vals, b.Vals); c != 0 {
				return c
			}
			return cmp.Compare(a.To, b.To)
		})
	}
	return rows
}

// drop removes the first group (first returned its rows), compacting
// what is held once most of it is gone.
func (g *rowGroups) drop() {
	n := g.groups[g.grpAt].n
	clear(g.rows[g.rowAt : g.rowAt+n])
	g.rowAt += n
	g.grpAt++
	if g.grpAt == len(g.groups) {
		g.rows, g.rowAt = g.rows[:0], 0
		g.groups, g.grpAt = g.groups[:0], 0
		return
	}
	if g.grpAt >= 1024 && 2*g.grpAt >= len(g.groups) {
		g.groups = append(g.groups[:0], g.groups[g.grpAt:]...)
		g.grpAt = 0
		m := copy(g.rows, g.rows[g.rowAt:])
		clear(g.rows[m:])
		g.rows, g.rowAt = g.rows[:m], 0
	}
}
