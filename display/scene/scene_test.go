package scene

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/internal/testkit"
)

const sec = int64(1e9)

// paperCatalog is the paper's relations.
func paperCatalog(t testing.TB) spec.Schema {
	t.Helper()
	return spec.NewSchema(testkit.PaperCatalog(t))
}

func load(t testing.TB, sc spec.Schema, text string) *spec.Spec {
	t.Helper()
	sp, err := spec.Load("t.display", text, sc)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// feeder pushes hand-made deltas into a scene.
type feeder struct {
	t  testing.TB
	sc spec.Schema
	s  *Scene
}

func (f *feeder) vals(rel string, vs []string) []algebra.Value {
	r := f.sc[rel]
	out := make([]algebra.Value, len(vs))
	for i, v := range vs {
		switch at := r.Attrs[i].Type; at.Kind {
		case algebra.KindEnum:
			ev, ok := at.Enum.Value(v)
			if !ok {
				f.t.Fatalf("%s: no member %s", rel, v)
			}
			out[i] = ev
		default:
			out[i] = algebra.Entity(v)
		}
	}
	return out
}

func (f *feeder) begin(rel string, at int64, vs ...string) *stream.Rec {
	rec := &stream.Rec{Vals: f.vals(rel, vs), From: at}
	f.s.Relation(f.sc[rel]).Push(stream.Elem{Kind: stream.Begin, T: at, Rec: rec})
	return rec
}

func (f *feeder) end(rel string, rec *stream.Rec, at int64) {
	f.s.Relation(f.sc[rel]).Push(stream.Elem{Kind: stream.End, T: at, Rec: rec})
}

func (f *feeder) event(rel string, at int64, vs ...string) {
	f.s.Relation(f.sc[rel]).Push(stream.Elem{Kind: stream.Event, T: at, Rec: &stream.Rec{Vals: f.vals(rel, vs), From: at}})
}

func newFeeder(t testing.TB, text string) *feeder {
	sc := paperCatalog(t)
	return &feeder{t: t, sc: sc, s: New(load(t, sc, text))}
}

const paperSpec = `display Processor as box label Processor order by Processor at left
display Process as circle label Process shade State (Running = 100%, Ready = 60%, Waiting = 30%, Done = 10%) order by Process at left
display Mailbox as oval label Mailbox order by Mailbox at right
display RunningOn as inside (Process, Processor)
display Waiting as arrow from Mailbox to Process
display SendMessage as arrow from Process to Mailbox
time animationtrace decay 4s
`

var screen = draw.Rect{X: 0, Y: 1, W: 60, H: 18}

func (f *feeder) draw(at int64) *draw.Grid {
	g := draw.NewGrid(60, 20)
	f.s.Draw(g, screen, at)
	return g
}

func (f *feeder) placed(rel, key string, trace bool) (Placed, bool) {
	for _, p := range f.s.Placed() {
		if p.Rel == rel && p.Key == key && p.Trace == trace {
			return p, true
		}
	}
	return Placed{}, false
}

// An icon's attributes change (shade) without moving anything: no new
// layout. A new icon, a box that must hold more, a resize: a new layout.
func TestRelayoutOnlyWhenIconsMove(t *testing.T) {
	f := newFeeder(t, paperSpec)
	f.begin("Processor", 0, "A")
	p1 := f.begin("Process", 0, "P1", "Ready")
	g := f.draw(1 * sec)
	if f.s.Layouts() != 1 {
		t.Fatalf("layouts %d", f.s.Layouts())
	}
	pp, _ := f.placed("Process", "P1", false)
	_, ready := g.At(pp.Rect.X+1, pp.Rect.Y)
	f.end("Process", p1, 2*sec)
	f.begin("Process", 2*sec, "P1", "Running")
	g = f.draw(3 * sec)
	_, running := g.At(pp.Rect.X+1, pp.Rect.Y)
	if f.s.Layouts() != 1 || ready == running {
		t.Errorf("state change: layouts %d, style %v then %v", f.s.Layouts(), ready, running)
	}
	f.draw(3*sec + 1) // time passes: still the same layout
	if f.s.Layouts() != 1 {
		t.Errorf("time passing relaid out: %d", f.s.Layouts())
	}
	f.begin("Process", 4*sec, "P2", "Ready")
	f.draw(4 * sec)
	if f.s.Layouts() != 2 {
		t.Errorf("new icon: layouts %d", f.s.Layouts())
	}
	// Two processes on A at once: the box grows to hold both.
	f.begin("RunningOn", 5*sec, "P1", "A")
	f.draw(5 * sec)
	a, _ := f.placed("Processor", "A", false)
	f.begin("RunningOn", 6*sec, "P2", "A")
	f.draw(6 * sec)
	a2, _ := f.placed("Processor", "A", false)
	if a.Rect.H != 3 || a2.Rect.H != 4 || f.s.Layouts() != 3 {
		t.Errorf("box heights %d then %d, layouts %d", a.Rect.H, a2.Rect.H, f.s.Layouts())
	}
	in1, ok1 := f.placed("Process", "P1", false)
	in2, ok2 := f.placed("Process", "P2", false)
	if !ok1 || !ok2 || !a2.Rect.Contains(in1.Rect) || !a2.Rect.Contains(in2.Rect) || in1.Rect.Y == in2.Rect.Y {
		t.Errorf("P1 %+v and P2 %+v not both in A %+v", in1, in2, a2)
	}
	g = draw.NewGrid(80, 30)
	f.s.Draw(g, draw.Rect{X: 0, Y: 1, W: 80, H: 28}, 6*sec)
	if f.s.Layouts() != 4 {
		t.Errorf("resize: layouts %d", f.s.Layouts())
	}
}

// Under animationtrace, an event's arrow is at full strength at first,
// then fades, and is gone after the decay; an ended tuple's arrow fades.
// Under plain animation an event shows for the decay at full strength and
// an ended tuple's arrow goes at once.
func TestTraceAndAnimation(t *testing.T) {
	for _, trace := range []bool{true, false} {
		text := paperSpec
		if !trace {
			text = strings.Replace(text, "animationtrace", "animation", 1)
		}
		f := newFeeder(t, text)
		f.begin("Process", 0, "P1", "Running")
		f.begin("Mailbox", 0, "M1")
		f.event("SendMessage", 10*sec, "P1", "M1")
		w := f.begin("Waiting", 10*sec, "P1", "M1")
		f.end("Waiting", w, 12*sec)
		arrowInto := func(g *draw.Grid, rel, key string, left bool) (rune, draw.Style) {
			p, _ := f.placed(rel, key, false)
			if left {
				return g.At(p.Rect.X-1, p.Rect.MidY())
			}
			return g.At(p.Rect.Right(), p.Rect.MidY())
		}
		g := f.draw(10 * sec)
		if r, st := arrowInto(g, "Mailbox", "M1", true); r != '>' || st.Dim {
			t.Errorf("trace %v: the send at its time: %q %v", trace, r, st)
		}
		g = f.draw(12*sec + sec/2)
		r, st := arrowInto(g, "Mailbox", "M1", true)
		if trace && (r != '>' || !st.Dim) || !trace && (r != '>' || st.Dim) {
			t.Errorf("trace %v: the send 2.5 s later: %q %v", trace, r, st)
		}
		r, st = arrowInto(g, "Process", "P1", false)
		if trace && (r != '<' || !st.Dim) || !trace && r == '<' {
			t.Errorf("trace %v: the wait ended 0.5 s ago: %q %v", trace, r, st)
		}
		g = f.draw(14 * sec)
		if r, _ := arrowInto(g, "Mailbox", "M1", true); r == '>' {
			t.Errorf("trace %v: the send is still drawn after the decay", trace)
		}
		g = f.draw(16 * sec)
		if r, _ := arrowInto(g, "Process", "P1", false); r == '<' {
			t.Errorf("trace %v: the wait is still drawn after the decay", trace)
		}
	}
}

// A process leaves a processor: under animationtrace a fading copy stays
// in the box for the decay, and one at home while it is inside; an entity
// that ends fades out and is forgotten (the layout closes up).
func TestTracesAndForgetting(t *testing.T) {
	f := newFeeder(t, paperSpec)
	f.begin("Processor", 0, "A")
	f.begin("Process", 0, "P1", "Running")
	p2 := f.begin("Process", 0, "P2", "Ready")
	r := f.begin("RunningOn", 10*sec, "P1", "A")
	f.draw(11 * sec)
	if _, ok := f.placed("Process", "P1", true); !ok {
		t.Errorf("no trace of P1 at home just after it went into A")
	}
	f.end("RunningOn", r, 20*sec)
	f.draw(21 * sec)
	ghost, ok := f.placed("Process", "P1", true)
	a, _ := f.placed("Processor", "A", false)
	if !ok || !a.Rect.Contains(ghost.Rect) || ghost.In < 0 {
		t.Errorf("no trace of P1 in A after it left: %+v in %+v", ghost, a)
	}
	if home, ok := f.placed("Process", "P1", false); !ok || a.Rect.Contains(home.Rect) {
		t.Errorf("P1 not back home: %+v", home)
	}
	f.draw(25 * sec)
	if _, ok := f.placed("Process", "P1", true); ok {
		t.Errorf("trace still there after the decay")
	}
	f.end("Process", p2, 30*sec)
	f.draw(31 * sec)
	if p, ok := f.placed("Process", "P2", true); !ok {
		t.Errorf("P2 ended: no fading copy (%+v)", p)
	}
	n := f.s.Icons()
	f.draw(34 * sec)
	if _, ok := f.placed("Process", "P2", true); ok || f.s.Icons() != n-1 {
		t.Errorf("P2 not forgotten after the decay: %d icons", f.s.Icons())
	}
}

// A flash is lit at the event, dark half a phase later, over after its
// duration; a blink holds while its tuple is open.
func TestFlash(t *testing.T) {
	f := newFeeder(t, paperSpec+"display SendMessage as flash Mailbox for 8s\ndisplay Waiting as blink Process\n")
	f.begin("Process", 0, "P1", "Ready")
	f.begin("Mailbox", 0, "M1")
	f.event("SendMessage", 10*sec, "P1", "M1")
	w := f.begin("Waiting", 10*sec, "P1", "M1")
	style := func(at int64, rel, key string) draw.Style {
		g := f.draw(at)
		p, _ := f.placed(rel, key, false)
		_, st := g.At(p.Rect.X+2, p.Rect.Y)
		return st
	}
	if st := style(10*sec, "Mailbox", "M1"); !st.Reverse {
		t.Errorf("not lit at the event: %v", st)
	}
	if st := style(11*sec+sec/2, "Mailbox", "M1"); st.Reverse {
		t.Errorf("lit 1.5 s later (phase 1 s): %v", st)
	}
	if st := style(12*sec+sec/2, "Mailbox", "M1"); !st.Reverse {
		t.Errorf("dark 2.5 s later: %v", st)
	}
	if st := style(18*sec, "Mailbox", "M1"); st.Reverse {
		t.Errorf("still flashing after 8 s: %v", st)
	}
	if st := style(30*sec, "Process", "P1"); !st.Blink {
		t.Errorf("not blinking while waiting: %v", st)
	}
	f.end("Waiting", w, 31*sec)
	if st := style(40*sec, "Process", "P1"); st.Blink {
		t.Errorf("blinking after the wait (and its 2 s): %v", st)
	}
}

// The spec changes while running: the views are rebuilt from the stored
// tuples.
func TestSetSpecWhileRunning(t *testing.T) {
	f := newFeeder(t, paperSpec)
	f.begin("Processor", 0, "A")
	f.begin("Process", 0, "P1", "Running")
	f.begin("Mailbox", 0, "M1")
	f.begin("RunningOn", 0, "P1", "A")
	f.draw(sec)
	if p, _ := f.placed("Process", "P1", false); p.In < 0 {
		t.Fatalf("P1 not in A")
	}
	sp := load(t, f.sc, `display Process as box label State at right
display Mailbox as text at left
display Waiting as arrow from Process to Mailbox`)
	f.s.SetSpec(sp, sec)
	g := f.draw(2 * sec)
	p, ok := f.placed("Process", "P1", false)
	if !ok || p.In >= 0 || p.Rect.X < 30 || !strings.Contains(g.Row(p.Rect.Y), "Running") {
		t.Errorf("P1 not redrawn as a box labelled by its state at the right: %+v\n%s", p, g)
	}
	if _, ok := f.placed("Processor", "A", false); ok {
		t.Errorf("Processor still drawn")
	}
	f.begin("Waiting", 3*sec, "P1", "M1")
	g = f.draw(3 * sec)
	m, _ := f.placed("Mailbox", "M1", false)
	if r, _ := g.At(m.Rect.Right(), m.Rect.MidY()); r != '<' {
		t.Errorf("no arrow into M1 from the right:\n%s", g)
	}
}

// A connecting line has no head; a text icon is its label; a point a dot.
func TestLineTextPoint(t *testing.T) {
	f := newFeeder(t, `display Process as text at left
display Mailbox as point at right
display Waiting as line from Process to Mailbox colour Mailbox (M1 = red)`)
	f.begin("Process", 0, "P1", "Ready")
	f.begin("Mailbox", 0, "M1")
	f.begin("Waiting", 0, "P1", "M1")
	g := f.draw(sec)
	p, _ := f.placed("Process", "P1", false)
	m, _ := f.placed("Mailbox", "M1", false)
	if !strings.HasPrefix(strings.TrimLeft(g.Row(p.Rect.Y), " "), "P1─") || !strings.Contains(g.Row(m.Rect.Y), "─• M1") {
		t.Errorf("line between text and point:\n%s", g)
	}
	r, st := g.At(m.Rect.X-1, m.Rect.Y)
	if red, _ := draw.ColorNamed("red"); r != '─' || st.Fg != red {
		t.Errorf("line end %q %v", r, st)
	}
}

// More icons than rows: the column wraps into sub-columns; what cannot fit
// the width is laid out taller than the area and scrolled to, counted
// above or below the view; a column the width has no room for at all is
// hidden and counted; nothing overlaps.
func TestWrapScrollAndHide(t *testing.T) {
	f := newFeeder(t, paperSpec)
	for i := 0; i < 40; i++ {
		f.begin("Process", 0, "P"+strconv.Itoa(i+1), "Ready")
		f.begin("Mailbox", 0, "M"+strconv.Itoa(i+1))
	}
	for _, size := range []struct {
		w, h   int
		scroll bool
		hidden int
	}{{120, 20, false, 0}, {30, 10, true, 0}, {12, 10, true, 40}} {
		g := draw.NewGrid(size.w, size.h)
		f.s.top = 0
		f.s.Draw(g, draw.Rect{X: 0, Y: 0, W: size.w, H: size.h}, sec)
		for scrolled := 0; ; scrolled++ {
			placed := f.s.Placed()
			for i, p := range placed {
				if p.Rect.X < 0 || p.Rect.Right() > size.w || p.Rect.Y < 0 || p.Rect.Bottom() > size.h {
					t.Errorf("%dx%d: %s off screen at %+v", size.w, size.h, p.Key, p.Rect)
				}
				for _, q := range placed[i+1:] {
					if p.Rect.Overlaps(q.Rect) {
						t.Errorf("%dx%d: %s %+v overlaps %s %+v", size.w, size.h, p.Key, p.Rect, q.Key, q.Rect)
					}
				}
			}
			above, below := f.s.Scrolled()
			hidden := f.s.Hidden()
			if hidden != size.hidden || len(placed)+above+below+hidden != 80 || (above+below > 0) != size.scroll {
				t.Errorf("%dx%d scrolled %d: %d drawn, %d above, %d below, %d hidden", size.w, size.h, scrolled, len(placed), above, below, hidden)
			}
			if scrolled > 0 && above == 0 {
				t.Errorf("%dx%d: scrolled %d rows, nothing above", size.w, size.h, scrolled)
			}
			if !f.s.ScrollRows(1, false) {
				if below != 0 {
					t.Errorf("%dx%d: scrolled to the end, %d below", size.w, size.h, below)
				}
				break
			}
			f.s.Draw(g, draw.Rect{X: 0, Y: 0, W: size.w, H: size.h}, sec)
		}
	}
}

// TestArrowRoutingBounded: a hundred processes each sending to every one
// of forty mailboxes at once on a wide, short screen: lanes run out, the
// arrows without one take their relation's colour, and no arrow checks
// more than MaxLaneTries lanes in each of its two searches.
func TestArrowRoutingBounded(t *testing.T) {
	f := newFeeder(t, paperSpec)
	for p := 0; p < 100; p++ {
		f.begin("Process", 0, fmt.Sprintf("P%d", p), "Ready")
	}
	for m := 0; m < 40; m++ {
		f.begin("Mailbox", 0, fmt.Sprintf("M%d", m))
	}
	routes := 0
	for p := 0; p < 100; p++ {
		for m := 0; m < 40; m += 1 + p%7 {
			f.event("SendMessage", sec, fmt.Sprintf("P%d", p), fmt.Sprintf("M%d", m))
			routes++
		}
	}
	g := draw.NewGrid(300, 20)
	f.s.Draw(g, draw.Rect{X: 0, Y: 1, W: 300, H: 18}, sec)
	t.Logf("%d arrows, %d lanes checked", routes, f.s.lanes.tries)
	if len(f.s.Crowded()) != 1 {
		t.Errorf("crowded %v: lanes did not run out?", f.s.Crowded())
	}
	if n := f.s.lanes.tries; n > 2*MaxLaneTries*routes {
		t.Errorf("%d lanes checked for %d arrows", n, routes)
	}
}

// TestScrollArrowsToTheEdge: scrolled, an arrow to an icon out of view runs
// to the edge of the view and is marked there (↓ below, ↑ above) in its
// lane; an arrow with both ends out of view on one side is neither routed
// nor drawn.
func TestScrollArrowsToTheEdge(t *testing.T) {
	f := newFeeder(t, paperSpec)
	for i := 1; i <= 40; i++ {
		f.begin("Process", 0, fmt.Sprintf("P%02d", i), "Ready")
		f.begin("Mailbox", 0, fmt.Sprintf("M%02d", i))
	}
	f.event("SendMessage", sec, "P01", "M01")
	f.event("SendMessage", sec, "P40", "M01")
	f.event("SendMessage", sec, "P40", "M40")
	area := draw.Rect{X: 0, Y: 1, W: 30, H: 10}
	frame := func() *draw.Grid {
		g := draw.NewGrid(30, 12)
		f.s.Draw(g, area, sec)
		return g
	}
	g := frame()
	if _, below := f.s.Scrolled(); below == 0 {
		t.Fatalf("nothing below at 30×12:\n%s", g)
	}
	if f.s.lanes.lanes != 2 {
		t.Errorf("top: %d arrows routed, want 2 (P40 → M40 is wholly below)", f.s.lanes.lanes)
	}
	edge := func(g *draw.Grid, y int, mark rune) {
		t.Helper()
		for x := 0; x < g.W; x++ {
			if r, _ := g.At(x, y); r == mark {
				if up, _ := g.At(x, y-1); y > area.Y && up != '│' && up != '┼' && up != '┌' && up != '┐' {
					t.Errorf("the %c at %d,%d ends no lane:\n%s", mark, x, y, g)
				}
				return
			}
		}
		t.Errorf("no %c on row %d:\n%s", mark, y, g)
	}
	edge(g, area.Bottom()-1, '↓')
	for f.s.ScrollRows(1, true) {
		g = frame()
	}
	g = frame()
	if above, below := f.s.Scrolled(); above == 0 || below != 0 {
		t.Fatalf("at the end: %d above, %d below", above, below)
	}
	if f.s.lanes.lanes != 2 {
		t.Errorf("end: %d arrows routed, want 2 (P01 → M01 is wholly above)", f.s.lanes.lanes)
	}
	edge(g, area.Y, '↑')
}

// TestScrollAtScale: 20,000 processes on a 60×16 screen are laid out (the
// column grows taller, bisected to the least height) and a frame draws
// only those in view; every other is counted above or below, wherever
// the view is scrolled to.
func TestScrollAtScale(t *testing.T) {
	f := newFeeder(t, paperSpec)
	const n = 20000
	for i := 0; i < n; i++ {
		f.begin("Process", 0, fmt.Sprintf("P%05d", i), "Ready")
	}
	area := draw.Rect{X: 0, Y: 1, W: 60, H: 14}
	g := draw.NewGrid(60, 16)
	for _, rows := range []int{0, 5000, 1 << 30} {
		f.s.ScrollRows(rows, false)
		f.s.Draw(g, area, sec)
		above, below := f.s.Scrolled()
		drawn := len(f.s.Placed())
		if drawn == 0 || drawn > area.H*area.W/5 || drawn+above+below != n || f.s.Hidden() != 0 {
			t.Errorf("scrolled %d: %d drawn, %d above, %d below, %d hidden", rows, drawn, above, below, f.s.Hidden())
		}
		for _, p := range f.s.Placed() {
			if !area.Contains(p.Rect) {
				t.Errorf("%s at %+v is out of view", p.Key, p.Rect)
			}
		}
	}
	if f.s.Layouts() != 1 {
		t.Errorf("%d layouts: scrolling laid out again", f.s.Layouts())
	}
}
