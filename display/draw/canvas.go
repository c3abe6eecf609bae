package draw

import (
	"strings"
	"unicode/utf8"
)

// Canvas is a grid of character cells the display draws on: the terminal
// (through tcell) or a Grid in memory. Cells outside the canvas are
// ignored, so drawing clips.
type Canvas interface {
	Size() (w, h int)
	Set(x, y int, r rune, st Style)
}

// Rect is a rectangle of cells.
type Rect struct {
	X, Y, W, H int
}

// Right is the column just right of r; Bottom the row just below.
func (r Rect) Right() int  { return r.X + r.W }
func (r Rect) Bottom() int { return r.Y + r.H }

// MidY is r's middle row.
func (r Rect) MidY() int { return r.Y + (r.H-1)/2 }

// Overlaps reports whether r and s share a cell.
func (r Rect) Overlaps(s Rect) bool {
	return r.W > 0 && r.H > 0 && s.W > 0 && s.H > 0 &&
		r.X < s.Right() && s.X < r.Right() && r.Y < s.Bottom() && s.Y < r.Bottom()
}

// Contains reports whether s lies inside r.
func (r Rect) Contains(s Rect) bool {
	return s.X >= r.X && s.Right() <= r.Right() && s.Y >= r.Y && s.Bottom() <= r.Bottom()
}

// Text writes s from (x, y) on one row and returns the column after it.
func Text(c Canvas, x, y int, s string, st Style) int {
	for _, r := range s {
		c.Set(x, y, r, st)
		x++
	}
	return x
}

// Fill fills a rectangle with r.
func Fill(c Canvas, rc Rect, r rune, st Style) {
	for y := rc.Y; y < rc.Bottom(); y++ {
		for x := rc.X; x < rc.Right(); x++ {
			c.Set(x, y, r, st)
		}
	}
}

// Frame draws the border of a rectangle at least 2×2 in box-drawing
// characters.
func Frame(c Canvas, rc Rect, st Style) {
	if rc.W < 2 || rc.H < 2 {
		return
	}
	x2, y2 := rc.Right()-1, rc.Bottom()-1
	for x := rc.X + 1; x < x2; x++ {
		c.Set(x, rc.Y, '─', st)
		c.Set(x, y2, '─', st)
	}
	for y := rc.Y + 1; y < y2; y++ {
		c.Set(rc.X, y, '│', st)
		c.Set(x2, y, '│', st)
	}
	c.Set(rc.X, rc.Y, '┌', st)
	c.Set(x2, rc.Y, '┐', st)
	c.Set(rc.X, y2, '└', st)
	c.Set(x2, y2, '┘', st)
}

// Width is the number of cells s takes (one per rune).
func Width(s string) int { return utf8.RuneCountInString(s) }

// Clip shortens s to at most n cells, marking a cut with '…'.
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if Width(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Grid is a Canvas in memory, for tests and text dumps.
type Grid struct {
	W, H   int
	Cells  []rune
	Styles []Style
}

// NewGrid makes a blank w×h grid.
func NewGrid(w, h int) *Grid {
	g := &Grid{W: w, H: h, Cells: make([]rune, w*h), Styles: make([]Style, w*h)}
	for i := range g.Cells {
		g.Cells[i] = ' '
	}
	return g
}

func (g *Grid) Size() (int, int) { return g.W, g.H }

func (g *Grid) Set(x, y int, r rune, st Style) {
	if x < 0 || y < 0 || x >= g.W || y >= g.H {
		return
	}
	g.Cells[y*g.W+x] = r
	g.Styles[y*g.W+x] = st
}

// At is the rune and style of a cell.
func (g *Grid) At(x, y int) (rune, Style) {
	return g.Cells[y*g.W+x], g.Styles[y*g.W+x]
}

// Row is the text of row y, trailing blanks kept.
func (g *Grid) Row(y int) string { return string(g.Cells[y*g.W : (y+1)*g.W]) }

// String is the text of every row, one per line, trailing blanks trimmed.
func (g *Grid) String() string {
	var b strings.Builder
	for y := 0; y < g.H; y++ {
		b.WriteString(strings.TrimRight(g.Row(y), " "))
		b.WriteByte('\n')
	}
	return b.String()
}
