package exec

import (
	"cmp"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Gaps says where a relation was not observed (Options.Gaps): its gaps,
// half-open, in any order, possibly overlapping. It is asked again as the
// run goes on and may have grown — a live run learns of a loss before it
// delivers anything the loss covers — but only by appending: a gap once
// given stays, where it was; and only between the driver's steps (a
// Cut asks once per Advance whether any gap is known).
type Gaps func(rel string) []algebra.Span

// Cut removes from a statement's result stream every valid time inside a
// gap of a primitive relation the statement reads (directly, or through a
// relation an earlier statement derived): inside a gap nothing about the
// relation is known, so no answer reading it — an aggregate included —
// claims anything there. A tuple valid across a gap is cut in two: it
// ends where the gap begins and a copy begins where the gap ends (while
// the tuple is still valid); an event in a gap is dropped.
//
// Once a gap is known, elements are buffered until the next Advance and
// handled in time order: so the gaps are asked only about times the
// network has passed (whose gaps are final), and the output is in time
// order with each piece's End at the gap's start before anything later.
// Before any gap is known, elements pass at once (a gap learnt later
// starts after them). The memory it holds is the result tuples open (and,
// until the next gap or compaction, as many ended ones).
type Cut struct {
	rels []string
	gaps Gaps
	out  stream.Receiver
	buf  []stream.Elem
	// open maps each result tuple begun (and not ended) to the piece of
	// it currently out, or nil while it is inside a gap.
	open  map[*stream.Rec]*stream.Rec
	order []*stream.Rec // open's keys (and some ended), in begin order: pieces resume in it
	pos   algebra.Time  // boundaries up to pos are handled
	in    bool          // pos is inside a gap
	// merged are the gaps of rels, sorted, as of known of them.
	merged []algebra.Span
	known  int
	// asked says none was set since the last Advance: whether no gap
	// was known then (noGaps).
	asked, none bool
	// cached says merged is this step's (gaps change only between the
	// driver's steps: Gaps), so spans asks once a step, not once an
	// element; skip counts the first merged gaps that end at or before
	// pos (pos only grows, so they never matter again): with thousands
	// of gaps — a long run losing often — an element costs no scan of
	// them all.
	cached bool
	skip   int
}

// NewCut cuts out the gaps of rels.
func NewCut(rels []string, gaps Gaps, out stream.Receiver) *Cut {
	return &Cut{rels: rels, gaps: gaps, out: out, open: map[*stream.Rec]*stream.Rec{}, pos: algebra.Beginning}
}

func (c *Cut) Push(e stream.Elem) {
	if len(c.buf) == 0 && !c.in && c.noGaps() {
		// No gap: nothing to wait for, no boundary to handle (what
		// c.to(e.T) does when there is none).
		c.pos = max(c.pos, e.T)
		c.pass(e)
		return
	}
	c.buf = append(c.buf, e)
}

// noGaps reports whether no gap is known: asked once between two
// Advances (a driver learns of gaps between its steps, not while it
// pushes an instant's elements through the network: see Gaps).
func (c *Cut) noGaps() bool {
	if !c.asked {
		c.asked, c.none = true, len(c.spans()) == 0
	}
	return c.none
}

func (c *Cut) Advance(t algebra.Time) {
	c.asked, c.cached = false, false
	defer func() { c.cached = false }() // (the next step may know more)
	slices.SortStableFunc(c.buf, stream.Compare)
	for _, e := range c.buf {
		c.to(e.T, true)
		c.pass(e)
	}
	clear(c.buf)
	c.buf = c.buf[:0]
	if t == algebra.Forever {
		// The stream ends: a tuple inside a gap that reaches the end
		// does not resume (nothing after the gap was observed).
		c.out.Advance(t)
		return
	}
	c.to(t, false)
	if c.in && c.gapEnd() == t {
		// Tuples resume at t only once time is past it (or something
		// happens at t): until then the output is promised up to t-1.
		t--
	}
	c.out.Advance(t)
}

// pass passes one element at a time handled.
func (c *Cut) pass(e stream.Elem) {
	switch e.Kind {
	case stream.Event:
		if !c.in {
			c.out.Push(e)
		}
	case stream.Begin:
		if c.in {
			c.open[e.Rec] = nil // resumes where the gap ends
		} else {
			c.open[e.Rec] = e.Rec
			c.out.Push(e)
		}
		c.order = append(c.order, e.Rec)
		if len(c.order) >= 64 && len(c.order) >= 2*len(c.open) {
			c.compact()
		}
	case stream.End:
		piece, ok := c.open[e.Rec]
		if !ok {
			return
		}
		delete(c.open, e.Rec)
		if piece != nil {
			c.out.Push(stream.Elem{Kind: stream.End, T: e.T, Rec: piece})
		}
	default:
		c.out.Push(e)
	}
}

// gapEnd is the end of the gap pos is in, merged with those it overlaps
// or touches.
func (c *Cut) gapEnd() algebra.Time {
	end := c.pos
	spans := c.spans()
	for _, s := range spans[min(c.skip, len(spans)):] { // (before skip: To ≤ pos ≤ end)
		if s.From > end {
			break // by start: none later starts by end
		}
		if s.To > end {
			end = s.To
		}
	}
	return end
}

// to handles the gap boundaries up to t: at a gap's start every piece out
// ends; at its end every tuple still valid resumes as a new piece — when
// the gap ends at t itself, only if resume says so (an element at t).
func (c *Cut) to(t algebra.Time, resume bool) {
	for {
		spans := c.spans()
		if c.in {
			end := c.gapEnd()
			if end > t || end == t && !resume {
				return
			}
			c.pos, c.in = end, false
			c.compact()
			for _, r := range c.order {
				if piece, ok := c.open[r]; ok && piece == nil {
					p := &stream.Rec{Vals: r.Vals, From: end}
					c.open[r] = p
					c.out.Push(stream.Elem{Kind: stream.Begin, T: end, Rec: p})
				}
			}
			continue
		}
		// The first gap ending after pos that starts by t (spans are by
		// start: none after one starting past t does).
		for c.skip < len(spans) && spans[c.skip].To <= c.pos {
			c.skip++
		}
		i := -1
		for j := c.skip; j < len(spans) && spans[j].From <= t; j++ {
			if spans[j].To > c.pos {
				i = j
				break
			}
		}
		if i < 0 {
			c.pos = max(c.pos, t)
			return
		}
		start := max(spans[i].From, c.pos)
		c.pos, c.in = start, true
		c.compact()
		for _, r := range c.order {
			if piece := c.open[r]; piece != nil {
				c.open[r] = nil
				c.out.Push(stream.Elem{Kind: stream.End, T: start, Rec: piece})
			}
		}
	}
}

// compact drops ended tuples from order.
func (c *Cut) compact() {
	c.order = slices.DeleteFunc(c.order, func(r *stream.Rec) bool { _, ok := c.open[r]; return !ok })
}

// spans are the gaps of every relation cut, by start. Gaps only grow
// (Gaps): they are merged again only when there are more of them.
func (c *Cut) spans() []algebra.Span {
	if c.cached {
		return c.merged
	}
	c.cached = true
	n := 0
	for _, r := range c.rels {
		n += len(c.gaps(r))
	}
	if n == c.known {
		return c.merged
	}
	var out []algebra.Span
	for _, r := range c.rels {
		for _, s := range c.gaps(r) {
			if s.To > s.From {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b algebra.Span) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	c.merged, c.known, c.skip = out, n, 0
	return out
}

// primitiveReads are the primitive relations a statement reads, through
// the relations earlier statements derived (reads holds theirs), the
// observation's own and Clock excepted.
func primitiveReads(p plan.Node, reads map[*check.Retrieve][]string) []string {
	var out []string
	plan.Walk(p, func(n plan.Node) {
		var rel *algebra.Relation
		switch x := n.(type) {
		case *plan.Scan:
			if x.From != nil {
				out = append(out, reads[x.From]...)
				return
			}
			rel = x.Rel
		case *plan.Alpha:
			rel = x.Rel
		case *plan.EntitySource:
			rel = x.Rel
		}
		if rel != nil && !rel.IsClock() && !rel.Builtin && !rel.Derived {
			out = append(out, rel.Name)
		}
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// TableGaps are the gaps a Lost table holds (nil if it holds none): each
// tuple's valid time is a gap of the relation its Relation names — and,
// a fleet's (a Host attribute), of that host's part (HostPart).
func TableGaps(lost *algebra.Table) Gaps {
	if lost == nil || len(lost.Rows) == 0 {
		return nil
	}
	host := lost.Rel.AttrIndex(algebra.HostAttr)
	gaps := map[string][]algebra.Span{}
	for _, row := range lost.Rows {
		g := algebra.Span{From: row.From, To: row.To}
		gaps[row.Vals[0].S] = append(gaps[row.Vals[0].S], g)
		if host >= 0 {
			k := HostPart(row.Vals[0].S, row.Vals[host].S)
			gaps[k] = append(gaps[k], g)
		}
	}
	return func(rel string) []algebra.Span { return gaps[rel] }
}
