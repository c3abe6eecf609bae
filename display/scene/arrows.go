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
			// Scrolled: an arrow whose ends are both above the view,
			// or both below, is not drawn (nor routed).
			from, to = d.shift(from), d.shift(to)
			if from.MidY() < d.area.Y && to.MidY() < d.area.Y || from.MidY() >= d.area.Bottom() && to.MidY() >= d.area.Bottom() {
				continue
			}
			routes = append(routes, &route{set: si, key: k, from: from, to: to, head: a.l.Kind == spec.Arrow, st: st})
		}
	}
	w, h := d.c.Size()
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
	g := &d.s.lanes
	g.reset(w, h)
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
	// An arrow running out of the view (to or from an icon scrolled
	// away) is marked where its lane meets the edge: ↑ or ↓, the way to
	// scroll to find its other end.
	for _, r := range routes {
		lo, hi := min(r.exit.Y, r.entry.Y), max(r.exit.Y, r.entry.Y)
		if lo < d.area.Y && hi >= d.area.Y {
			d.c.Set(r.lane, d.area.Y, '↑', r.st)
		}
		if hi >= d.area.Bottom() && lo < d.area.Bottom() {
			d.c.Set(r.lane, d.area.Bottom()-1, '↓', r.st)
		}
	}
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

// grid is what routed arrows occupy: per cell of the canvas, the group
// running along it horizontally and vertically and whether some arrow
// turns (or ends) there. A group is the arrows leaving one point, or
// arriving at one (they may share the row there), or one arrow's lane.
// Cells off the canvas are free (nothing is drawn there).
type grid struct {
	w, h   int
	cells  []gridCell
	groups map[groupKey]int
	lanes  int
	// tries counts the lanes checked since reset (tests hold it to
	// MaxLaneTries per arrow and search).
	tries int
}

type gridCell struct {
	h, v int // groups, 0: none
	turn bool
}

type groupKey struct {
	p  draw.Point
	in bool
}

// MaxLaneTries bounds the lanes tried for one arrow (nearest the wanted
// one first): routing a frame costs at most that many column checks per
// arrow, however crowded.
const MaxLaneTries = 32

// reset makes the grid empty for a w×h canvas, reusing its cells.
func (g *grid) reset(w, h int) {
	g.w, g.h, g.lanes, g.tries = w, h, 0, 0
	if cap(g.cells) < w*h {
		g.cells = make([]gridCell, w*h)
	}
	g.cells = g.cells[:w*h]
	clear(g.cells)
	if g.groups == nil {
		g.groups = map[groupKey]int{}
	}
	clear(g.groups)
}

func (g *grid) cell(p draw.Point) *gridCell {
	if p.X < 0 || p.Y < 0 || p.X >= g.w || p.Y >= g.h {
		return nil
	}
	return &g.cells[p.Y*g.w+p.X]
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

// uses calls f for the cells the route takes with its lane at x, until f
// returns false; it reports whether f accepted them all.
func (r *route) uses(x, gOut, gIn, gLane int, f func(use) bool) bool {
	row := func(y, from, to, grp int) bool { // from inclusive, to exclusive
		step := 1
		if to < from {
			step = -1
		}
		for x := from; x != to; x += step {
			if !f(use{p: draw.Point{X: x, Y: y}, h: grp}) {
				return false
			}
		}
		return true
	}
	if r.exit.Y == r.entry.Y {
		return row(r.exit.Y, r.exit.X, r.entry.X, gOut) && f(use{p: r.entry, h: gIn})
	}
	if !row(r.exit.Y, r.exit.X, x, gOut) || !f(use{p: draw.Point{X: x, Y: r.exit.Y}, h: gOut, v: gLane}) {
		return false
	}
	step := 1
	if r.entry.Y < r.exit.Y {
		step = -1
	}
	for y := r.exit.Y + step; y != r.entry.Y; y += step {
		if !f(use{p: draw.Point{X: x, Y: y}, v: gLane}) {
			return false
		}
	}
	if !f(use{p: draw.Point{X: x, Y: r.entry.Y}, h: gIn, v: gLane}) {
		return false
	}
	return x == r.entry.X || row(r.entry.Y, r.entry.X, x, gIn)
}

// free reports whether a cell can take a use: a run may share a cell with
// its own group's run, or cross another's run at right angles; a turn
// only shares with its own group's run.
func (g *grid) free(u use) bool {
	c := g.cell(u.p)
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

// reach is how far along row y a run of group grp can go from x0 toward
// x1 (inclusive) without a cell it may not take (ends, when lenient, are
// taken whatever): the first such x, or one past x1.
func (g *grid) reach(y, x0, x1, grp int, lenient bool, ends [2]draw.Point) int {
	step := 1
	if x1 < x0 {
		step = -1
	}
	x := x0
	for ; x != x1+step; x += step {
		p := draw.Point{X: x, Y: y}
		if !g.free(use{p: p, h: grp}) && !(lenient && (p == ends[0] || p == ends[1])) {
			break
		}
	}
	return x
}

// place gives the route a lane: the free one nearest its wanted lane;
// else (false) the nearest free but for the route's two end cells (an
// icon where arrows both leave and arrive has one cell for both); else
// (false) the wanted one though it is not free. At most MaxLaneTries
// lanes are tried, each only when the exit and entry rows reach it.
func (g *grid) place(r *route) bool {
	gOut, gIn := g.group(r.exit, false), g.group(r.entry, true)
	g.lanes++
	gLane := -g.lanes
	ends := [2]draw.Point{r.exit, r.entry}
	search := func(lenient bool) bool {
		ok := func(u use) bool { return g.free(u) || lenient && (u.p == r.exit || u.p == r.entry) }
		if r.exit.Y == r.entry.Y {
			r.lane = r.pref
			return r.uses(r.lane, gOut, gIn, gLane, ok)
		}
		// The lanes the rows reach: past the exit row's first blocked
		// cell, or before the entry row's, no lane can be.
		dir := 1 // lanes right of a column; between columns, toward the entry
		if r.cross && r.entry.X < r.exit.X {
			dir = -1
		}
		far := r.hi
		if dir < 0 {
			far = r.lo
		}
		outStop := g.reach(r.exit.Y, r.exit.X, far, gOut, lenient, ends)
		near := r.lo
		if dir < 0 {
			near = r.hi
		}
		inStop := g.reach(r.entry.Y, r.entry.X, near, gIn, lenient, ends)
		if !r.cross {
			inStop = g.reach(r.entry.Y, r.entry.X, far, gIn, lenient, ends)
		}
		reachable := func(x int) bool {
			if r.cross {
				// Out from the exit up to x, in from x to the entry.
				return (x-outStop)*dir < 0 && (x-inStop)*dir > 0
			}
			return x < outStop && x < inStop
		}
		tries := 0
		for d := 0; d <= max(r.pref-r.lo, r.hi-r.pref) && tries < MaxLaneTries; d++ {
			for _, x := range []int{r.pref - d, r.pref + d} {
				if x < r.lo || x > r.hi || d == 0 && x != r.pref || !reachable(x) {
					continue
				}
				tries++
				g.tries++
				if r.uses(x, gOut, gIn, gLane, ok) {
					r.lane = x
					return true
				}
			}
		}
		return false
	}
	ok := search(false)
	if !ok && !search(true) {
		r.lane = r.pref
	}
	r.uses(r.lane, gOut, gIn, gLane, func(u use) bool {
		c := g.cell(u.p)
		if c == nil {
			return true
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
		return true
	})
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
