package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Collector materialises a stream into a table.
type Collector struct {
	Rel   *algebra.Relation
	rows  []algebra.Tuple
	open  map[*stream.Rec]int
	Done  bool
	Count int // elements received
	// OnElem, when set, is called for each element as it arrives (streaming
	// output).
	OnElem func(stream.Elem)
	// Discard keeps no rows (with OnElem: they are printed, not kept).
	Discard bool
}

// NewCollector makes a collector for a relation's tuples.
func NewCollector(rel *algebra.Relation) *Collector {
	return &Collector{Rel: rel, open: map[*stream.Rec]int{}}
}

func (c *Collector) Push(e stream.Elem) {
	c.Count++
	if c.Discard {
		if c.OnElem != nil {
			c.OnElem(e)
		}
		return
	}
	switch e.Kind {
	case stream.Begin:
		c.open[e.Rec] = len(c.rows)
		c.rows = append(c.rows, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Forever})
	case stream.End:
		if i, ok := c.open[e.Rec]; ok {
			c.rows[i].To = e.T
			delete(c.open, e.Rec)
		}
	case stream.Event:
		c.rows = append(c.rows, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Next(e.T)})
	}
	if c.OnElem != nil {
		c.OnElem(e)
	}
}

func (c *Collector) Advance(t algebra.Time) {
	if t == algebra.Forever {
		c.Done = true
	}
}

// Table returns the collected tuples, ordered by time then values.
func (c *Collector) Table() *algebra.Table {
	t := &algebra.Table{Rel: c.Rel, Rows: append([]algebra.Tuple(nil), c.rows...)}
	t.SortRows()
	return t
}
