package show

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

const manyDir = "../../testdata/display/many"

// TestGoldenScroll: 112 icons at 60×16 and 60×20 do not fit; rather than
// being hidden they are laid out taller than the screen and the view
// scrolls over them (↓/j a row, PgDn a screen, ↑/k and PgUp back). The
// status line counts the icons above and below; an arrow to an icon out
// of view runs to the edge, marked ↑ or ↓ there.
func TestGoldenScroll(t *testing.T) {
	s, h := dirSetup(t, manyDir, "many.display")
	pb := playback(t, s, h, "1:00:00", "tqmon view testdata/display/many")
	sc := pb.Feed.Scene
	for _, size := range []struct {
		w, h int
		name string
	}{{60, 16, "60x16"}, {60, 20, "60x20"}} {
		sim := simScreen(t, size.w, size.h)
		seek(t, pb, sim, "1:00:10")
		for sc.ScrollRows(-1, true) {
		}
		frame(pb, sim)
		checkGolden(t, "scroll-"+size.name+"-top.txt", term.Dump(sim))
		above, below := sc.Scrolled()
		if sc.Hidden() != 0 || above != 0 || below == 0 {
			t.Errorf("%s top: %d hidden, %d above, %d below", size.name, sc.Hidden(), above, below)
		}
		g := term.Text(sim)
		if !strings.Contains(textRow(g, size.h-2), "↓") {
			t.Errorf("%s top: no arrow marked at the bottom edge:\n%s", size.name, g)
		}
		checkScrolled(t, sc.Placed(), size.w, size.h)

		pb.Model.Handle(ui.KeyPageDown)
		frame(pb, sim)
		checkGolden(t, "scroll-"+size.name+"-page.txt", term.Dump(sim))
		checkScrolled(t, sc.Placed(), size.w, size.h)
		a2, b2 := sc.Scrolled()
		if a2 == 0 || a2+b2 >= above+below+sc.Icons() {
			t.Errorf("%s page down: %d above, %d below", size.name, a2, b2)
		}
		if g := term.Text(sim); !strings.Contains(g, fmt.Sprintf("↑%d above", a2)) || !strings.Contains(textRow(g, 1), "↑") {
			t.Errorf("%s page down: the status does not count what is above:\n%s", size.name, g)
		}
		// A row up (↑ or k), then a screen up: back at the top.
		pb.Model.Handle(ui.KeyUp)
		frame(pb, sim)
		if a3, _ := sc.Scrolled(); a3 >= a2 {
			t.Errorf("%s ↑: %d above, %d before", size.name, a3, a2)
		}
		pb.Model.Handle(ui.KeyPageUp)
		frame(pb, sim)
		if a4, b4 := sc.Scrolled(); a4 != 0 || b4 != below {
			t.Errorf("%s PgUp: %d above, %d below; want 0, %d", size.name, a4, b4, below)
		}
	}
	// Where everything fits, the keys say so.
	sim := simScreen(t, 160, 50)
	frame(pb, sim)
	pb.Model.Handle(ui.KeyDown)
	frame(pb, sim)
	if g := term.Text(sim); !strings.Contains(g, "nothing to scroll") {
		t.Errorf("160×50: ↓ with every icon in view:\n%s", g)
	}
}

// checkScrolled: the icons drawn lie in the scene's rows but for those
// cut by its top or bottom edge; none overlaps another (held icons aside).
func checkScrolled(t *testing.T, placed []scene.Placed, w, h int) {
	t.Helper()
	area := draw.Rect{X: 0, Y: 1, W: w, H: h - 2}
	for i, p := range placed {
		if !p.Rect.Overlaps(area) {
			t.Errorf("%s %s at %+v is drawn out of view %+v", p.Rel, p.Key, p.Rect, area)
		}
		for j := i + 1; j < len(placed); j++ {
			q := placed[j]
			if p.In != j && q.In != i && p.Rect.Overlaps(q.Rect) {
				t.Errorf("%s %s at %+v overlaps %s %s at %+v", p.Rel, p.Key, p.Rect, q.Rel, q.Key, q.Rect)
			}
		}
	}
}

// textRow is row y of a screen's text.
func textRow(g string, y int) string {
	rows := strings.Split(g, "\n")
	if y < 0 || y >= len(rows) {
		return ""
	}
	return rows[y]
}
