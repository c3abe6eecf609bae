package scene

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// route is an arrow (or line) to draw.
type route struct {
	set      int
	key      pairKey
	from, to draw.Rect
	head     bool
	st       draw.Style
	// cross: the ends are in different columns (a lane between them);
	// otherwise both are on the right of one column.
	cross        bool
	exit, entry  draw.Point
	laneLo, lane int
}

// arrows draws the arrows and connecting lines visible at now. Each turns
// once into a vertical lane: arrows between columns get lanes spread over
// the space between them, arrows within a column lanes to its right.
func (d *drawing) arrows() {
	var routes []*route
	for si, a := range d.s.arrows {
		keys := make([]pairKey, 0, len(a.pairs))
		for k := range a.pairs {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y pairKey) int {
			if c := algebra.Compare(x.from, y.from); c != 0 {
				return c
			}
			return algebra.Compare(x.to, y.to)
		})
		for _, k := range keys {
			st, ok := d.arrowStyle(a, a.pairs[k])
			if !ok {
				continue
			}
			from, ok1 := d.s.at(a.from, k.from)
			to, ok2 := d.s.at(a.to, k.to)
			if !ok1 || !ok2 || from == to {
				continue
			}
			routes = append(routes, &route{set: si, key: k, from: from, to: to, head: a.l.Kind == spec.Arrow, st: st})
		}
	}
	var cross []*route
	sameCol := map[int]int{} // lanes used right of each column edge
	for _, r := range routes {
		switch {
		case r.to.X >= r.from.Right()+2:
			r.cross = true
			r.exit = draw.Point{X: r.from.Right(), Y: r.from.MidY()}
			r.entry = draw.Point{X: r.to.X - 1, Y: r.to.MidY()}
		case r.from.X >= r.to.Right()+2:
			r.cross = true
			r.exit = draw.Point{X: r.from.X - 1, Y: r.from.MidY()}
			r.entry = draw.Point{X: r.to.Right(), Y: r.to.MidY()}
		default:
			r.exit = draw.Point{X: r.from.Right(), Y: r.from.MidY()}
			r.entry = draw.Point{X: r.to.Right(), Y: r.to.MidY()}
			edge := max(r.from.Right(), r.to.Right())
			r.lane = edge + 1 + sameCol[edge]
			sameCol[edge]++
		}
		if r.cross {
			cross = append(cross, r)
		}
	}
	// Spread the lanes of arrows between columns over the space they
	// cross, in order of where they start.
	slices.SortStableFunc(cross, func(a, b *route) int {
		if a.exit.Y != b.exit.Y {
			return a.exit.Y - b.exit.Y
		}
		return a.entry.Y - b.entry.Y
	})
	for i, r := range cross {
		lo, hi := min(r.exit.X, r.entry.X), max(r.exit.X, r.entry.X)
		span := hi - lo
		r.lane = lo + 1 + (span-2)*(i+1)/(len(cross)+1)
		if span < 2 {
			r.lane = lo
		}
	}
	// Lines first, then the heads, so that a line leaving an icon where
	// another arrow arrives does not hide its head.
	for _, r := range routes {
		draw.Path(d.c, r.points(), false, r.st)
	}
	for _, r := range routes {
		if r.head {
			pts := r.points()
			draw.Head(d.c, pts[2], pts[3], r.st)
		}
	}
}

// points is the route's path: out of the first icon to its lane, along
// the lane, into the second.
func (r *route) points() []draw.Point {
	return []draw.Point{r.exit, {X: r.lane, Y: r.exit.Y}, {X: r.lane, Y: r.entry.Y}, r.entry}
}

// arrowStyle is how an arrow looks at now, if it is visible: open tuples
// and events younger than the decay at full strength (events fade under
// animationtrace), ended tuples fading under animationtrace.
func (d *drawing) arrowStyle(a *arrowSet, st *arrowState) (draw.Style, bool) {
	var base draw.Style
	if t := st.last; t != nil {
		if c := a.l.Colour; c != nil {
			base.Fg = c.Of(t.Vals[c.Attr])
		}
		if sh := a.l.Shade; sh != nil {
			base.Fg = draw.Gray(0.3 + 0.7*float64(sh.Percent(t.Vals[sh.Attr]))/100)
		}
	}
	if st.open > 0 {
		return base, true
	}
	lvl, ok := d.s.fade(st.ended, d.now)
	switch {
	case !ok:
		return base, false
	case d.s.sp.Trace && st.event && lvl == 1:
		return base, true // an event is current for the first quarter of the decay
	case d.s.sp.Trace:
		return traceStyle(lvl), true
	case st.event:
		return base, true
	}
	return base, false
}
