package algebra

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Tuple is a tuple of a relation with its valid time [From, To). An event at
// t has To = Next(t). An interval still open has To = Forever.
type Tuple struct {
	Vals     []Value
	From, To Time
}

// Table is a materialised relation: the tuples of a recorded or derived
// relation.
type Table struct {
	Rel  *Relation
	Rows []Tuple
	// gen counts the changes made through Add, AddEvent and SortRows: a
	// history's columns (History.Columns) are rebuilt after one.
	gen uint64
}

// Add appends a tuple.
func (t *Table) Add(vals []Value, from, to Time) {
	t.Rows = append(t.Rows, Tuple{Vals: vals, From: from, To: to})
	t.gen++
}

// AddEvent appends an event at at.
func (t *Table) AddEvent(vals []Value, at Time) {
	t.Rows = append(t.Rows, Tuple{Vals: vals, From: at, To: Next(at)})
	t.gen++
}

// Validate checks that every tuple has one value per attribute of the right
// kind and a non-empty valid time (an event not at forever).
func (t *Table) Validate() error {
	for i, row := range t.Rows {
		if len(row.Vals) != len(t.Rel.Attrs) {
			return fmt.Errorf("%s: tuple %d has %d values, want %d", t.Rel.Name, i, len(row.Vals), len(t.Rel.Attrs))
		}
		for j, v := range row.Vals {
			if v.K != t.Rel.Attrs[j].Type.Kind {
				return fmt.Errorf("%s: tuple %d: %s is a %s, want %s", t.Rel.Name, i, t.Rel.Attrs[j].Name, v.K, t.Rel.Attrs[j].Type)
			}
		}
		if t.Rel.IsEvent() {
			if row.From == Forever || row.To != Next(row.From) {
				return fmt.Errorf("%s: tuple %d: bad event time", t.Rel.Name, i)
			}
		} else if row.From >= row.To {
			return fmt.Errorf("%s: tuple %d: empty valid time [%d, %d)", t.Rel.Name, i, row.From, row.To)
		}
	}
	return nil
}

// SortRows orders tuples by time, then values, then end. Rows already in
// order of time — the order recordings and results arrive in — only have
// their runs at one time sorted (their values stay where they are: near
// one another already). Rows out of time order are sorted and their values
// packed into one slab in the new order, so that a scan of the table in
// time order reads its values in sequence rather than wherever they were
// allocated.
func (t *Table) SortRows() {
	t.gen++
	rows := t.Rows
	byTime := true
	for i := 1; i < len(rows) && byTime; i++ {
		byTime = rows[i-1].From <= rows[i].From
	}
	if !byTime {
		slices.SortFunc(rows, compareRows)
		t.pack()
		return
	}
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].From == rows[i].From {
			j++
		}
		if run := rows[i:j]; len(run) > 1 {
			slices.SortFunc(run, compareRows)
		}
		i = j
	}
}

func compareRows(a, b Tuple) int {
	if a.From != b.From {
		return cmp.Compare(a.From, b.From)
	}
	if c := CompareTuples(a.Vals, b.Vals); c != 0 {
		return c
	}
	return cmp.Compare(a.To, b.To)
}

// pack copies the rows' values into one slab, in row order (each row's
// values capped, so an append to them cannot reach the next row's).
func (t *Table) pack() {
	n := 0
	for i := range t.Rows {
		n += len(t.Rows[i].Vals)
	}
	slab := make([]Value, n)
	for i := range t.Rows {
		r := &t.Rows[i]
		if len(r.Vals) == 0 {
			continue
		}
		k := copy(slab, r.Vals)
		r.Vals, slab = slab[:k:k], slab[k:]
	}
}

// LessTuple orders tuples by From, then values, then To: the order results
// are printed in.
func LessTuple(a, b *Tuple) bool {
	if a.From != b.From {
		return a.From < b.From
	}
	if c := CompareTuples(a.Vals, b.Vals); c != 0 {
		return c < 0
	}
	return a.To < b.To
}

// History is a recorded history: a catalog and one table per relation.
type History struct {
	Catalog *Catalog
	Tables  map[string]*Table
	// Window, when set, is the span the history observed; otherwise it is
	// taken from the tuples (Extent).
	Window *Window
	// cols keeps the tables' columns (Columns); nil unless NewHistory
	// made the history.
	cols *columnCache
}

// Window is an observation span [From, To] (inclusive).
type Window struct {
	From, To Time
}

// NewHistory makes an empty history with a table for every relation of c.
func NewHistory(c *Catalog) *History {
	h := &History{Catalog: c, Tables: map[string]*Table{}, cols: newColumnCache()}
	for _, r := range c.Relations {
		h.Tables[r.Name] = &Table{Rel: r}
	}
	for _, r := range c.Builtins() {
		h.Tables[r.Name] = &Table{Rel: r}
	}
	return h
}

// Table returns the table of a relation (nil if unknown).
func (h *History) Table(name string) *Table { return h.Tables[name] }

// Extent is the span the history observes: its Window if it has one,
// otherwise from its earliest time to its latest finite time (inclusive).
// Clock ticks exist only inside it, and "now" is its end. ok is false for
// an empty history without a window.
func (h *History) Extent() (start, end Time, ok bool) {
	if h.Window != nil {
		return h.Window.From, h.Window.To, true
	}
	start, end = Forever, Beginning
	for _, r := range h.Catalog.Relations {
		t := h.Tables[r.Name]
		if t == nil {
			continue
		}
		for i := range t.Rows {
			row := &t.Rows[i]
			ok = true
			start = min(start, row.From)
			if row.From != Beginning {
				end = max(end, row.From)
			}
			if !r.IsEvent() && row.To != Forever {
				end = max(end, row.To)
			}
		}
	}
	if !ok {
		return 0, 0, false
	}
	if end == Beginning { // every time is an infinity
		end = start
	}
	return start, end, true
}

// ClockTicks returns the ticks of Clock[n] (base period p) inside
// [start, end]: every multiple of n·p.
func ClockTicks(n, period, start, end Time) []Time {
	step := n * period
	if step <= 0 || start > end {
		return nil
	}
	var ticks []Time
	for t := FirstTick(step, start); t <= end; t = NextTick(t, step) {
		ticks = append(ticks, t)
	}
	return ticks
}

// FirstTick is the first multiple of step at or after t (Beginning
// included: it is a chronon like any other), or math.MaxInt64 when none is
// on the time line.
func FirstTick(step, t Time) Time {
	q := t / step * step // rounds toward zero: up for a negative t
	if q < t {
		return NextTick(q, step)
	}
	return q
}

// NextTick is the tick step after t, or math.MaxInt64 — after every
// chronon, so no tick — when that is past Forever.
func NextTick(t, step Time) Time {
	if t > Forever-step {
		return math.MaxInt64
	}
	return t + step
}
