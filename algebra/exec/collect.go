package exec

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Collector materialises a stream into a table.
type Collector struct {
	Rel *algebra.Relation
	// rows are kept in chunks, each twice the last up to collectChunk and
	// never grown past its capacity: a growing result is never copied (and
	// open rows stay where open points); Table copies it once, into a
	// slice of its exact size.
	rows  [][]algebra.Tuple
	n     int
	open  recMap[*algebra.Tuple]
	Done  bool
	Count int // elements received
	// OnElem, when set, is called for each element as it arrives (streaming
	// output).
	OnElem func(stream.Elem)
	// Discard keeps no rows (with OnElem: they are printed, not kept).
	Discard bool
	// Borrow says OnElem borrows each element: once it has returned it
	// keeps neither an event's record nor any element's values (it
	// copies what it keeps). The operators before the collector may then
	// reuse them (forgets). An interval's record, never reused, it may
	// keep (or key by) to match the interval's End with its Begin. With
	// Borrow false, every element's record and values are OnElem's to
	// keep.
	Borrow bool
	// Observed marks the result of an observation (Options.Observed): its
	// answers are about what was observed, which ends before forever, so
	// an event at forever (the end of a tuple still open when the run
	// ended, as "valid at end of W" makes) or a tuple beginning there is
	// no answer and is dropped. Tuples still open stay open. A history
	// without a window (and the reference evaluator) keeps the language's
	// answer.
	Observed bool
	// sorted says the rows are in Table's order already: the columnar
	// path (addSorted) is their only source.
	sorted bool
	// lent maps the lent records of intervals begun (Keep) to their
	// copies.
	lent map[*stream.Rec]*stream.Rec
}

// NewCollector makes a collector for a relation's tuples.
func NewCollector(rel *algebra.Relation) *Collector {
	return &Collector{Rel: rel}
}

func (c *Collector) Push(e stream.Elem) {
	if c.Observed && e.T >= algebra.Forever && e.Kind != stream.End {
		return
	}
	c.Count++
	if c.Discard {
		if c.OnElem != nil {
			c.OnElem(e)
		}
		return
	}
	switch e.Kind {
	case stream.Begin:
		c.open.put(e.Rec, c.add(algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Forever}))
	case stream.End:
		if row, _ := c.open.take(e.Rec); row != nil {
			row.To = e.T
		}
	case stream.Event:
		c.add(algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Next(e.T)})
	}
	if c.OnElem != nil {
		c.OnElem(e)
	}
}

// Keep pushes a copy of e, an element lent by a borrowing collector's
// OnElem (Borrow): its values copied, an interval's record copied at its
// Begin and that copy ended at its End (matched by the lent record,
// which is never reused while the interval is open).
func (c *Collector) Keep(e stream.Elem) {
	r := c.lent[e.Rec]
	switch {
	case r == nil:
		r = &stream.Rec{Vals: slices.Clone(e.Rec.Vals), From: e.Rec.From}
		if e.Kind == stream.Begin {
			if c.lent == nil {
				c.lent = map[*stream.Rec]*stream.Rec{}
			}
			c.lent[e.Rec] = r
		}
	case e.Kind == stream.End:
		delete(c.lent, e.Rec)
	}
	c.Push(stream.Elem{Kind: e.Kind, T: e.T, Rec: r})
}

func (c *Collector) Advance(t algebra.Time) {
	if t == algebra.Forever {
		c.Done = true
	}
}

// collectChunk is the most rows a chunk of a Collector holds.
const collectChunk = 4096

// add appends a row and returns where it is.
func (c *Collector) add(t algebra.Tuple) *algebra.Tuple {
	last := len(c.rows) - 1
	if last < 0 || len(c.rows[last]) == cap(c.rows[last]) {
		size := 64
		if last >= 0 {
			size = min(2*cap(c.rows[last]), collectChunk)
		}
		c.rows = append(c.rows, make([]algebra.Tuple, 0, size))
		last++
	}
	c.rows[last] = append(c.rows[last], t)
	c.n++
	return &c.rows[last][len(c.rows[last])-1]
}

// addSorted takes the whole result, in Table's order, as one chunk (the
// columnar path, after which nothing is added).
func (c *Collector) addSorted(rows []algebra.Tuple) {
	c.rows, c.n, c.sorted, c.Done = [][]algebra.Tuple{rows}, len(rows), true, true
}

// Table returns the collected tuples, ordered by time then values. A
// result added whole and sorted (addSorted) is returned as it is: the
// table shares its rows with the collector.
func (c *Collector) Table() *algebra.Table {
	t := &algebra.Table{Rel: c.Rel}
	if c.sorted {
		t.Rows = c.rows[0]
		return t
	}
	if c.n > 0 {
		t.Rows = make([]algebra.Tuple, 0, c.n)
	}
	for _, ch := range c.rows {
		t.Rows = append(t.Rows, ch...)
	}
	t.SortRows()
	return t
}
