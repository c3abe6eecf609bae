package draw

import (
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	g := NewGrid(12, 5)
	// Right, down, right with a head; then left, up, left.
	Path(g, []Point{{0, 0}, {4, 0}, {4, 2}, {8, 2}}, true, Style{})
	Path(g, []Point{{11, 4}, {9, 4}, {9, 3}, {6, 3}}, false, Style{})
	want := `────┐
    │
    └───>
      ───┐
         └──
`
	if got := g.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestFrameAndDump(t *testing.T) {
	g := NewGrid(6, 3)
	Frame(g, Rect{0, 0, 6, 3}, Style{Bold: true})
	Text(g, 1, 1, "ab", Style{Fg: Palette(2)})
	got := DumpGrid(g)
	want := strings.Join([]string{
		"screen 6x3",
		"|┌────┐|", "|│ab  │|", "|└────┘|",
		"styles:",
		"|aaaaaa|", "|abb..a|", "|aaaaaa|",
		"legend:", "a: bold", "b: fg=2", "",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if Clip("abcdef", 4) != "abc…" || Clip("ab", 4) != "ab" {
		t.Error("clip")
	}
	a, b := Rect{0, 0, 3, 2}, Rect{2, 1, 3, 2}
	if !a.Overlaps(b) || a.Overlaps(Rect{3, 0, 1, 1}) || !(Rect{0, 0, 5, 5}).Contains(b) {
		t.Error("rects")
	}
}
