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
	cross       bool
	exit, entry draw.Point
	lane        int
	// pref is the lane wanted; lanes are tried nearest it first, between
	// lo and hi.
	pref, lo, hi int
}

// arrows draws the arrows and connecting lines visible at now. Each turns
// once into a vertical lane: arrows between columns get lanes spread over
// the space between them, arrows within a column lanes to its right.
//
// Routing: no two arrows share a segment or a corner. An arrow's lane is
// the free column nearest the one wanted whose whole route (out along the
// exit row, down the lane, in along the entry row) only crosses other
// arrows, never runs along them or turns where they do; arrows leaving
// one point (or arriving at one) may run together there, branching with
// a tee, as one bus. When no lane is free, the arrow is drawn in its
// relation's colour (Crowded reports which) so that it can still be told
// from those it touches.
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
	w, _ := d.c.Size()
	var cross []*route
	sameCol := map[int]int{} // lanes wanted right of each column edge
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
			r.pref = edge + 1 + sameCol[edge]
			r.lo, r.hi = edge+1, max(edge+1, w-1)
			sameCol[edge]++
		}
		if r.cross {
			cross = append(cross, r)
		}
	}
	// Spread the lanes wanted by arrows between columns over the space
	// they cross, in order of where they start.
	slices.SortStableFunc(cross, func(a, b *route) int {
		if a.exit.Y != b.exit.Y {
			return a.exit.Y - b.exit.Y
		}
		return a.entry.Y - b.entry.Y
	})
	for i, r := range cross {
		lo, hi := min(r.exit.X, r.entry.X), max(r.exit.X, r.entry.X)
		span := hi - lo
		r.pref = lo + 1 + (span-2)*(i+1)/(len(cross)+1)
		r.lo, r.hi = lo+1, hi-1
		if span < 2 {
			r.pref, r.lo, r.hi = lo, lo, lo
		}
	}
	// Route in the order wanted lanes were given, so that an uncrowded
	// picture is the one spread evenly.
	order := append(cross, nil)[:len(cross)]
	for _, r := range routes {
		if !r.cross {
			order = append(order, r)
		}
	}
	g := grid{cells: map[draw.Point]*gridCell{}, groups: map[groupKey]int{}}
	d.s.crowded = d.s.crowded[:0]
	for _, r := range order {
		if !g.place(r) {
			if !slices.Contains(d.s.crowded, r.set) {
				d.s.crowded = append(d.s.crowded, r.set)
			}
			// Its own colour unless the spec colours or shades it
			// (a fading trace stays dim, in that colour).
			if l := d.s.arrows[r.set].l; l.Colour == nil && l.Shade == nil {
				r.st.Fg = CrowdedColour(r.set)
			}
		}
	}
	slices.Sort(d.s.crowded)
	var wires draw.Wires
	for _, r := range routes {
		wires.Add(r.points(), r.head, r.st)
	}
	wires.Draw(d.c)
}

// CrowdedColour is the colour of the arrows of the i-th arrow statement
// that found no free lane.
func CrowdedColour(i int) draw.Color { return draw.Cycle(i) }

// Crowded is an arrow statement some of whose arrows found no free lane,
// drawn in Colour.
type Crowded struct {
	Rel    string
	Colour draw.Color
}

// Crowded lists the arrow statements (by relation) some of whose arrows
// the last Draw found no free lane for.
func (s *Scene) Crowded() []Crowded {
	var out []Crowded
	for _, i := range s.crowded {
		if i < len(s.arrows) {
			out = append(out, Crowded{s.arrows[i].l.Rel.Name, CrowdedColour(i)})
		}
	}
	return out
}

// points is the route's path: out of the first icon to its lane, along
// the lane, into the second.
func (r *route) points() []draw.Point {
	return []draw.Point{r.exit, {X: r.lane, Y: r.exit.Y}, {X: r.lane, Y: r.entry.Y}, r.entry}
}

// grid is what routed arrows occupy: per cell, the group running along it
// horizontally and vertically and whether some arrow turns (or ends)
// there. A group is the arrows leaving one point, or arriving at one (they
// may share the row there), or one arrow's lane.
type grid struct {
	cells  map[draw.Point]*gridCell
	groups map[groupKey]int
	lanes  int
}

type gridCell struct {
	h, v int // groups, 0: none
	turn bool
}

type groupKey struct {
	p  draw.Point
	in bool
}

func (g *grid) group(p draw.Point, in bool) int {
	k := groupKey{p, in}
	if id, ok := g.groups[k]; ok {
		return id
	}
	id := len(g.groups) + 1
	g.groups[k] = id
	return id
}

// use is one cell of a route: run along horizontally (h) or vertically
// (v), or turned in (both).
type use struct {
	p    draw.Point
	h, v int
}

// uses are the cells the route takes with its lane at x.
func (g *grid) uses(r *route, x, gOut, gIn, gLane int) []use {
	var us []use
	row := func(y, from, to, grp int) { // from inclusive, to exclusive
		step := 1
		if to < from {
			step = -1
		}
		for x := from; x != to; x += step {
			us = append(us, use{p: draw.Point{X: x, Y: y}, h: grp})
		}
	}
	if r.exit.Y == r.entry.Y {
		row(r.exit.Y, r.exit.X, r.entry.X, gOut)
		return append(us, use{p: r.entry, h: gIn})
	}
	row(r.exit.Y, r.exit.X, x, gOut)
	us = append(us, use{p: draw.Point{X: x, Y: r.exit.Y}, h: gOut, v: gLane})
	step := 1
	if r.entry.Y < r.exit.Y {
		step = -1
	}
	for y := r.exit.Y + step; y != r.entry.Y; y += step {
		us = append(us, use{p: draw.Point{X: x, Y: y}, v: gLane})
	}
	us = append(us, use{p: draw.Point{X: x, Y: r.entry.Y}, h: gIn, v: gLane})
	if x != r.entry.X {
		row(r.entry.Y, r.entry.X, x, gIn)
	}
	return us
}

// free reports whether a cell can take a use: a run may share a cell with
// its own group's run, or cross another's run at right angles; a turn
// only shares with its own group's run.
func (g *grid) free(u use) bool {
	c := g.cells[u.p]
	if c == nil {
		return true
	}
	turning := u.h != 0 && u.v != 0
	switch {
	case u.v != 0 && c.v != 0: // two lanes never share a cell
		return false
	case u.h != 0 && c.h != 0 && c.h != u.h:
		return false
	case c.turn && c.h != u.h:
		return false
	case turning && c.v != 0:
		return false
	}
	return true
}

// place gives the route a lane: the free one nearest its wanted lane;
// else (false) the nearest free but for the route's two end cells (an
// icon where arrows both leave and arrive has one cell for both); else
// (false) the wanted one though it is not free.
func (g *grid) place(r *route) bool {
	gOut, gIn := g.group(r.exit, false), g.group(r.entry, true)
	g.lanes++
	gLane := -g.lanes
	fits := func(x int, ends bool) bool {
		us := g.uses(r, x, gOut, gIn, gLane)
		for _, u := range us {
			if !g.free(u) && (ends || u.p != r.exit && u.p != r.entry) {
				return false
			}
		}
		return true
	}
	search := func(ends bool) bool {
		for d := 0; d <= max(r.pref-r.lo, r.hi-r.pref); d++ {
			for _, x := range []int{r.pref - d, r.pref + d} {
				if x >= r.lo && x <= r.hi && (d > 0 || x == r.pref) && fits(x, ends) {
					r.lane = x
					return true
				}
			}
		}
		return false
	}
	ok := search(true)
	if !ok && !search(false) {
		r.lane = r.pref
	}
	for _, u := range g.uses(r, r.lane, gOut, gIn, gLane) {
		c := g.cells[u.p]
		if c == nil {
			c = &gridCell{}
			g.cells[u.p] = c
		}
		if u.h != 0 {
			c.h = u.h
		}
		if u.v != 0 {
			c.v = u.v
		}
		if u.h != 0 && u.v != 0 || u.p == r.entry {
			c.turn = true
		}
	}
	return ok
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
		return TraceStyle(lvl), true
	case st.event:
		return base, true
	}
	return base, false
}
