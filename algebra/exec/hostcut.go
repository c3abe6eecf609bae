package exec

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// HostPart names one host's part of relation rel, in a fleet, to Gaps:
// Gaps(rel) are the gaps of every host's part, Gaps(HostPart(rel, host))
// that host's only (relation names hold no '@'). TableGaps and a live
// run's gaps answer both.
func HostPart(rel, host string) string { return rel + "@" + host }

// hostColumn is the column of r's result that names the host every
// result tuple came from, in a fleet, or -1. It is one only when that is
// sure: r has one range variable, over a primitive relation, no
// aggregate (an aggregate may count every host's tuples), and a target
// that is that variable's Host. Then each result tuple is made of one
// host's tuple, and a gap of another host says nothing about it: the
// statement is cut per host (HostCut). Otherwise every host's gaps cut
// it (Cut), as outside a fleet.
func hostColumn(r *check.Retrieve) int {
	if len(r.Vars) != 1 || len(r.Aggs) > 0 || r.Vars[0].From != nil || r.Vars[0].Rel.Derived {
		return -1
	}
	for i, t := range r.Targets {
		if c, ok := t.Expr.(*expr.Col); ok && c.Var == 0 && c.AttrName == algebra.HostAttr {
			return i
		}
	}
	return -1
}

// HostCut is Cut for a fleet's statement whose result names its host
// (hostColumn): one Cut per host, each cutting out that host's gaps
// only, so a gap on web-2 does not cut web-1's tuples. The pieces' outputs
// are gathered and passed on at each Advance in time order (each Cut's
// is; their merge is sorted), up to the least time every Cut promised.
type HostCut struct {
	rels  []string
	gaps  Gaps
	col   int
	out   stream.Receiver
	cuts  map[string]*hostPart
	hosts []string // cuts' keys, in the order met
	buf   []stream.Elem
	// direct: no gap of any host is known, nothing is buffered — what
	// the Cuts pass goes out at once (as Cut's does before any gap).
	direct bool
}

// hostPart is one host's Cut and what it has passed on.
type hostPart struct {
	cut *Cut
	h   *HostCut
	adv algebra.Time // the last time it advanced its output to
}

func (p *hostPart) Push(e stream.Elem) {
	if p.h.direct {
		p.h.out.Push(e)
		return
	}
	p.h.buf = append(p.h.buf, e)
}
func (p *hostPart) Advance(t algebra.Time) { p.adv = t }

// NewHostCut cuts each host's result tuples (column col) out of that
// host's gaps of rels (gaps of HostPart).
func NewHostCut(rels []string, gaps Gaps, col int, out stream.Receiver) *HostCut {
	return &HostCut{rels: rels, gaps: gaps, col: col, out: out, cuts: map[string]*hostPart{}}
}

func (c *HostCut) Push(e stream.Elem) {
	c.direct = len(c.buf) == 0 && !c.anyGap()
	defer func() { c.direct = false }()
	if e.Rec == nil || c.col >= len(e.Rec.Vals) {
		(&hostPart{h: c}).Push(e) // no host: passed on as the Cuts' are
		return
	}
	host := e.Rec.Vals[c.col].S
	p := c.cuts[host]
	if p == nil {
		p = &hostPart{h: c, adv: algebra.Beginning}
		p.cut = NewCut(c.rels, func(rel string) []algebra.Span { return c.gaps(HostPart(rel, host)) }, p)
		c.cuts[host] = p
		c.hosts = append(c.hosts, host)
	}
	p.cut.Push(e)
}

// anyGap reports whether a gap of rels is known, on any host.
func (c *HostCut) anyGap() bool {
	for _, r := range c.rels {
		if len(c.gaps(r)) > 0 {
			return true
		}
	}
	return false
}

func (c *HostCut) Advance(t algebra.Time) {
	to := t
	for _, h := range c.hosts {
		p := c.cuts[h]
		p.cut.Advance(t)
		to = min(to, p.adv)
	}
	slices.SortStableFunc(c.buf, stream.Compare)
	for _, e := range c.buf {
		c.out.Push(e)
	}
	clear(c.buf)
	c.buf = c.buf[:0]
	c.out.Advance(to)
}
