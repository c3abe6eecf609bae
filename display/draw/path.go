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

var joins = map[int]rune{
	sideLeft | sideRight: '─', sideUp | sideDown: '│',
	sideLeft | sideDown: '┐', sideLeft | sideUp: '┘',
	sideRight | sideDown: '┌', sideRight | sideUp: '└',
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

// Path draws a line through points, each segment horizontal or vertical,
// with corners where it turns; with head, the last cell is an arrowhead
// pointing the way the line goes. Repeated points are skipped.
func Path(c Canvas, pts []Point, head bool, st Style) {
	var p []Point
	for _, q := range pts {
		if len(p) == 0 || p[len(p)-1] != q {
			p = append(p, q)
		}
	}
	if len(p) == 0 {
		return
	}
	if len(p) == 1 {
		if head {
			c.Set(p[0].X, p[0].Y, '>', st)
		} else {
			c.Set(p[0].X, p[0].Y, '─', st)
		}
		return
	}
	inSide := 0 // the side the line enters the current cell by
	for i := 0; i+1 < len(p); i++ {
		a, b := p[i], p[i+1]
		dx, dy := dir(a, b)
		out := sideOf(dx, dy)
		for x, y := a.X, a.Y; x != b.X || y != b.Y; x, y = x+dx, y+dy {
			conn := out
			if x == a.X && y == a.Y {
				if inSide != 0 {
					conn |= inSide
				} else {
					conn |= sideOf(-dx, -dy) // a straight start
				}
			} else {
				conn |= sideOf(-dx, -dy)
			}
			r, ok := joins[conn]
			if !ok {
				r = '┼'
			}
			c.Set(x, y, r, st)
		}
		inSide = sideOf(-dx, -dy)
	}
	last := p[len(p)-1]
	if head {
		Head(c, p[len(p)-2], last, st)
		return
	}
	dx, dy := dir(p[len(p)-2], last)
	c.Set(last.X, last.Y, joins[sideOf(dx, dy)|sideOf(-dx, -dy)], st)
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
