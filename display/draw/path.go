package draw

// Point is a cell.
type Point struct{ X, Y int }

// side bits of a cell's connections.
const (
	sideLeft = 1 << iota
	sideRight
	sideUp
	sideDown
)

// joins is the box-drawing character of each set of connected sides: runs,
// corners, tees where lines branch and a cross where two lines cross.
var joins = [16]rune{
	sideLeft: '─', sideRight: '─', sideLeft | sideRight: '─',
	sideUp: '│', sideDown: '│', sideUp | sideDown: '│',
	sideLeft | sideDown: '┐', sideLeft | sideUp: '┘',
	sideRight | sideDown: '┌', sideRight | sideUp: '└',
	sideLeft | sideRight | sideDown: '┬', sideLeft | sideRight | sideUp: '┴',
	sideUp | sideDown | sideRight: '├', sideUp | sideDown | sideLeft: '┤',
	sideLeft | sideRight | sideUp | sideDown: '┼',
}

// dir is the unit step from a to b along one axis (a != b).
func dir(a, b Point) (dx, dy int) {
	switch {
	case b.X > a.X:
		return 1, 0
	case b.X < a.X:
		return -1, 0
	case b.Y > a.Y:
		return 0, 1
	}
	return 0, -1
}

// sideOf is the side of a cell a step (dx, dy) leaves by.
func sideOf(dx, dy int) int {
	switch {
	case dx > 0:
		return sideRight
	case dx < 0:
		return sideLeft
	case dy > 0:
		return sideDown
	}
	return sideUp
}

// Wires collects lines, each a path of horizontal and vertical segments,
// and draws them together: where lines meet, a cell joins the sides of
// every line through it (a tee where they branch, a cross where they
// cross), so that one line never overwrites another's corner.
type Wires struct {
	cells map[Point]*wire
	order []Point // cells in the order first used (drawing is deterministic)
	heads []head
}

type wire struct {
	sides int
	st    Style
}

type head struct {
	from, to Point
	st       Style
}

// Cells lists the cells of a path through pts (repeated points skipped),
// in order, with the sides each connects: where Path would draw.
func Cells(pts []Point) (cells []Point, sides []int) {
	var p []Point
	for _, q := range pts {
		if len(p) == 0 || p[len(p)-1] != q {
			p = append(p, q)
		}
	}
	switch len(p) {
	case 0:
		return nil, nil
	case 1:
		return p, []int{sideLeft | sideRight}
	}
	inSide := 0 // the side the line enters the current cell by
	for i := 0; i+1 < len(p); i++ {
		a, b := p[i], p[i+1]
		dx, dy := dir(a, b)
		out := sideOf(dx, dy)
		for x, y := a.X, a.Y; x != b.X || y != b.Y; x, y = x+dx, y+dy {
			conn := out
			switch {
			case x != a.X || y != a.Y:
				conn |= sideOf(-dx, -dy)
			case inSide != 0:
				conn |= inSide
			default:
				conn |= sideOf(-dx, -dy) // a straight start
			}
			cells = append(cells, Point{x, y})
			sides = append(sides, conn)
		}
		inSide = sideOf(-dx, -dy)
	}
	last := p[len(p)-1]
	dx, dy := dir(p[len(p)-2], last)
	return append(cells, last), append(sides, sideOf(dx, dy)|sideOf(-dx, -dy))
}

// Add adds a line through pts (see Path).
func (w *Wires) Add(pts []Point, withHead bool, st Style) {
	if w.cells == nil {
		w.cells = map[Point]*wire{}
	}
	cells, sides := Cells(pts)
	for i, c := range cells {
		cw := w.cells[c]
		if cw == nil {
			cw = &wire{st: st}
			w.cells[c] = cw
			w.order = append(w.order, c)
		} else if !st.Dim || cw.st.Dim {
			// A line at full strength shows over a fading one.
			cw.st = st
		}
		cw.sides |= sides[i]
	}
	if withHead && len(cells) > 0 {
		from := cells[0]
		if len(cells) > 1 {
			from = cells[len(cells)-2]
		}
		w.heads = append(w.heads, head{from, cells[len(cells)-1], st})
	}
}

// Draw draws the lines, then their heads (a line leaving an icon where
// another arrives does not hide its head).
func (w *Wires) Draw(c Canvas) {
	for _, p := range w.order {
		cw := w.cells[p]
		c.Set(p.X, p.Y, joins[cw.sides], cw.st)
	}
	for _, h := range w.heads {
		Head(c, h.from, h.to, h.st)
	}
}

// Path draws a line through points, each segment horizontal or vertical,
// with corners where it turns; with head, the last cell is an arrowhead
// pointing the way the line goes. Repeated points are skipped.
func Path(c Canvas, pts []Point, withHead bool, st Style) {
	var w Wires
	w.Add(pts, withHead, st)
	w.Draw(c)
}

// Head draws an arrowhead at to, pointing the way from from (a cell in
// line with it) to to.
func Head(c Canvas, from, to Point, st Style) {
	r := '>'
	if from != to {
		switch dx, dy := dir(from, to); {
		case dx < 0:
			r = '<'
		case dy > 0:
			r = 'v'
		case dy < 0:
			r = '^'
		}
	}
	c.Set(to.X, to.Y, r, st)
}
