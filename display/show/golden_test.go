package show

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

var update = flag.Bool("update", false, "rewrite the golden frames in testdata")

const paperDir = "../../testdata/paper"

func readSource(t *testing.T, path string) query.Source {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return query.Source{Name: filepath.Base(path), Text: string(data)}
}

// paperSetup compiles the paper's display with its ResumedbyP1 query over
// the recorded paper example.
func paperSetup(t *testing.T) (*Setup, *algebra.History) {
	t.Helper()
	return dirSetup(t, paperDir, "os.display", "resumed_by_p1.tq")
}

// dirSetup compiles a history directory's display spec with its queries
// over its history.
func dirSetup(t *testing.T, dir, display string, queries ...string) (*Setup, *algebra.History) {
	t.Helper()
	h, err := history.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var qs []query.Source
	for _, q := range queries {
		qs = append(qs, readSource(t, filepath.Join(dir, q)))
	}
	s, err := Compile(Config{
		Catalog: h.Catalog,
		Queries: qs,
		Display: readSource(t, filepath.Join(dir, display)),
		Check:   check.Options{},
		FeedAll: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

func clockTime(t *testing.T, s string) algebra.Time {
	t.Helper()
	v, err := algebra.ParseTime(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// settle waits until the player has released everything up to its
// position and the network has digested it.
func settle(t *testing.T, pb *Playback) {
	t.Helper()
	select {
	case <-pb.Player.Waiting():
	case <-time.After(10 * time.Second):
		t.Fatal("the player never caught up")
	}
}

// goldenDir holds the golden frames.
const goldenDir = "../../testdata/display"

// checkGolden compares a dump with a golden file (rewritten with -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(goldenDir, name)
	if *update {
		if err := os.MkdirAll(goldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./display/show -run Golden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the frame drawn:\n%s", path, got)
	}
}

// paperPlayback plays the paper example, paused, with a fake clock.
func paperPlayback(t *testing.T) *Playback {
	t.Helper()
	s, h := paperSetup(t)
	return playback(t, s, h, "1:59:00", "tqmon view testdata/paper")
}

// playback plays a history from start, paused, with a fake clock.
func playback(t *testing.T, s *Setup, h *algebra.History, from, title string) *Playback {
	t.Helper()
	start := clockTime(t, from)
	clock := play.NewFakeClock(time.Unix(0, 0))
	pb, err := NewPlayback(context.Background(), s, play.HistorySource(h, nil), h.Window,
		play.Options{Speed: 1, Start: &start, Paused: true, Clock: clock}, Options{Title: title})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pb.Close)
	settle(t, pb)
	return pb
}

// seek moves a paused playback to a time and draws the frame there.
func seek(t *testing.T, pb *Playback, sim tcell.SimulationScreen, at string) {
	t.Helper()
	pb.Player.Seek(clockTime(t, at))
	settle(t, pb)
	frame(pb, sim)
}

// frame draws the playback's present frame on the screen.
func frame(pb *Playback, sim tcell.SimulationScreen) {
	pb.Feed.Inbox.Drain()
	pb.Model.Draw(term.Canvas{Screen: sim})
	sim.Show()
}

func simScreen(t *testing.T, w, h int) tcell.SimulationScreen {
	t.Helper()
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Fini)
	sim.SetSize(w, h)
	return sim
}

// placedRect finds a drawn icon.
func placedRect(t *testing.T, pb *Playback, rel, key string, trace bool) scene.Placed {
	t.Helper()
	for _, p := range pb.Feed.Scene.Placed() {
		if p.Rel == rel && p.Key == key && p.Trace == trace {
			return p
		}
	}
	t.Fatalf("%s %s (trace %v) is not drawn", rel, key, trace)
	return scene.Placed{}
}

// cell is the rune and style description of a screen cell.
func cell(sim tcell.SimulationScreen, x, y int) (rune, tcell.Style) {
	cells, w, _ := sim.GetContents()
	c := cells[y*w+x]
	if len(c.Runes) == 0 {
		return ' ', c.Style
	}
	return c.Runes[0], c.Style
}

// The paper's example at three instants, at 100×30, against the golden
// frames, with what each must show checked on its own too.
func TestGoldenFramesPaper(t *testing.T) {
	pb := paperPlayback(t)
	sim := simScreen(t, 100, 30)

	// 2:00:10: P1 runs on A (drawn inside it), P2 is ready; P1's send to
	// M4 four seconds ago fades, the one to M3 five seconds ago is gone.
	seek(t, pb, sim, "2:00:10")
	checkGolden(t, "paper-2-00-10.txt", term.Dump(sim))
	checkLayout(t, pb.Feed.Scene.Placed(), 100, 30)
	a, p1 := placedRect(t, pb, "Processor", "A", false), placedRect(t, pb, "Process", "P1", false)
	if !a.Container || p1.In < 0 || pb.Feed.Scene.Placed()[p1.In].Key != "A" || !a.Rect.Contains(p1.Rect) {
		t.Errorf("P1 is not drawn inside A: %+v %+v", p1, a)
	}
	m4, m3 := placedRect(t, pb, "Mailbox", "M4", false), placedRect(t, pb, "Mailbox", "M3", false)
	if r, st := cell(sim, m4.Rect.X-1, m4.Rect.MidY()); r != '>' || !hasAttr(st, tcell.AttrDim) {
		t.Errorf("no fading arrow into M4: %q %v", r, st)
	}
	if r, _ := cell(sim, m3.Rect.X-1, m3.Rect.MidY()); r != ' ' {
		t.Errorf("the send to M3 five seconds ago is still drawn: %q", r)
	}

	// 2:50:00: P1 runs on A again; P2 waits on M7: an arrow from M7 to P2,
	// full strength.
	seek(t, pb, sim, "2:50:00")
	checkGolden(t, "paper-2-50-00.txt", term.Dump(sim))
	checkLayout(t, pb.Feed.Scene.Placed(), 100, 30)
	p2 := placedRect(t, pb, "Process", "P2", false)
	if r, st := cell(sim, p2.Rect.Right(), p2.Rect.MidY()); r != '<' || hasAttr(st, tcell.AttrDim) {
		t.Errorf("no arrow from M7 into P2: %q %v", r, st)
	}
	m7 := placedRect(t, pb, "Mailbox", "M7", false)
	if r, _ := cell(sim, m7.Rect.X-1, m7.Rect.MidY()); r != '─' {
		t.Errorf("the arrow does not leave M7: %q", r)
	}

	// 2:54:20: P1 resumed P2 (ResumedbyP1): P2 flashes (lit at the
	// event); its wait just ended: the arrow from M7 fades.
	seek(t, pb, sim, "2:54:20")
	checkGolden(t, "paper-2-54-20.txt", term.Dump(sim))
	checkLayout(t, pb.Feed.Scene.Placed(), 100, 30)
	p2 = placedRect(t, pb, "Process", "P2", false)
	if _, st := cell(sim, p2.Rect.X+1, p2.Rect.Y); !hasAttr(st, tcell.AttrReverse) {
		t.Errorf("P2 does not flash at 2:54:20: %v", st)
	}
	if r, st := cell(sim, p2.Rect.Right(), p2.Rect.MidY()); r != '<' || !hasAttr(st, tcell.AttrDim) {
		t.Errorf("no fading arrow from M7 into P2: %q %v", r, st)
	}
	// Half a flash phase later it is dark, and after the flash's 5 s it
	// has stopped.
	pb.Player.Seek(clockTime(t, "2:54:20.7"))
	settle(t, pb)
	frame(pb, sim)
	if _, st := cell(sim, p2.Rect.X+1, p2.Rect.Y); hasAttr(st, tcell.AttrReverse) {
		t.Errorf("P2 still lit 0.7 s after the event")
	}
	seek(t, pb, sim, "2:54:26")
	if _, st := cell(sim, p2.Rect.X+1, p2.Rect.Y); hasAttr(st, tcell.AttrReverse) {
		t.Errorf("P2 still flashes 6 s after the event")
	}
}

// Resized to 60×20 the scene is laid out again: every icon on the screen,
// none overlapping another, held icons inside their box.
func TestGoldenFramesResize(t *testing.T) {
	pb := paperPlayback(t)
	sim := simScreen(t, 100, 30)
	for _, at := range []string{"2:00:10", "2:50:00", "2:54:20"} {
		seek(t, pb, sim, at)
		before := pb.Feed.Scene.Placed()
		sim.SetSize(60, 20)
		frame(pb, sim)
		after := pb.Feed.Scene.Placed()
		checkLayout(t, after, 60, 20)
		if len(after) != len(before) || pb.Feed.Scene.Hidden() != 0 {
			t.Errorf("%s: %d icons at 100×30, %d at 60×20 (%d hidden)", at, len(before), len(after), pb.Feed.Scene.Hidden())
		}
		if at == "2:50:00" {
			checkGolden(t, "paper-2-50-00-60x20.txt", term.Dump(sim))
		}
		sim.SetSize(100, 30)
	}
	// Much smaller: what does not fit is out of view (below; the view
	// scrolls to it) and counted, nothing overlaps.
	sim.SetSize(24, 8)
	frame(pb, sim)
	checkScrolled(t, pb.Feed.Scene.Placed(), 24, 8)
	if _, below := pb.Feed.Scene.Scrolled(); below == 0 {
		t.Errorf("everything fits in 24×8?")
	}
}

func hasAttr(st tcell.Style, a tcell.AttrMask) bool {
	_, _, attrs := st.Decompose()
	return attrs&a != 0
}

// checkLayout: every icon lies in the scene's rows of a w×h screen; icons
// held by a box lie inside its border; no two others share a cell.
func checkLayout(t *testing.T, placed []scene.Placed, w, h int) {
	t.Helper()
	area := draw.Rect{X: 0, Y: 1, W: w, H: h - 2}
	for i, p := range placed {
		if !area.Contains(p.Rect) {
			t.Errorf("%s %s at %+v is off the scene %+v", p.Rel, p.Key, p.Rect, area)
		}
		if p.In >= 0 {
			box := placed[p.In].Rect
			inner := draw.Rect{X: box.X + 1, Y: box.Y + 1, W: box.W - 2, H: box.H - 2}
			if !inner.Contains(p.Rect) {
				t.Errorf("%s %s at %+v is not inside its box %+v", p.Rel, p.Key, p.Rect, box)
			}
		}
		for j := i + 1; j < len(placed); j++ {
			q := placed[j]
			if p.In == j || q.In == i {
				continue
			}
			if p.Rect.Overlaps(q.Rect) {
				t.Errorf("%s %s at %+v overlaps %s %s at %+v", p.Rel, p.Key, p.Rect, q.Rel, q.Key, q.Rect)
			}
		}
	}
}

// The timeline of the paper example: a row per entity with its states as
// bars shaded as the icons are, ResumedbyP1 as a '*' on P2's row; then a
// row per RunningOn tuple.
func TestGoldenTimelinePaper(t *testing.T) {
	pb := paperPlayback(t)
	sim := simScreen(t, 100, 30)
	pb.Player.Seek(clockTime(t, "2:58:00"))
	settle(t, pb)
	timeline50s(pb, sim)
	checkGolden(t, "paper-timeline-2-58-00.txt", term.Dump(sim))
	g := term.Text(sim)
	row := func(label string) string { return timelineRow(t, g, label) }
	if p1 := row("P1"); !strings.Contains(p1, "█") || !strings.Contains(p1, "▓") || !strings.Contains(p1, "░") {
		t.Errorf("P1's row lacks running, ready or done: %s", p1)
	}
	if p2 := row("P2"); !strings.Contains(p2, "*") || !strings.Contains(p2, "▒") {
		t.Errorf("P2's row lacks the wait or ResumedbyP1: %s", p2)
	}
	if !strings.Contains(g, "timeline: entities, 50s/column, following") {
		t.Errorf("status:\n%s", g)
	}
	// Scrolled back a quarter screen (25 columns of 50 s), then forward
	// to the present again; zoomed in.
	pb.Model.Handle(ui.KeyBack)
	frame(pb, sim)
	if g := term.Text(sim); !strings.Contains(g, "timeline: entities, 50s/column, at 2:37:10") {
		t.Errorf("scroll back:\n%s", g)
	}
	pb.Model.Handle(ui.KeyForward)
	pb.Model.Handle(ui.KeyZoomIn)
	frame(pb, sim)
	if g := term.Text(sim); !strings.Contains(g, "timeline: entities, 20s/column, following") {
		t.Errorf("scroll forward, zoom in:\n%s", g)
	}
	for i := 0; i < 4; i++ {
		pb.Model.Handle(ui.KeyRows)
	}
	frame(pb, sim)
	g = term.Text(sim)
	for _, label := range []string{"P1 A", "P2 A", "P2 B"} {
		if r := row(label); !strings.Contains(r, "█") {
			t.Errorf("no bar on %s", r)
		}
	}
	if !strings.Contains(g, "timeline: RunningOn") {
		t.Errorf("status:\n%s", g)
	}
}

// timelineRow is the line of a timeline's text g whose row is labelled
// label.
func timelineRow(t *testing.T, g, label string) string {
	t.Helper()
	for _, l := range strings.Split(g, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), label+" ") || strings.HasPrefix(strings.TrimSpace(l), label+"│") {
			return l
		}
	}
	t.Fatalf("no row %s in\n%s", label, g)
	return ""
}

// timeline50s switches to the timeline, zoomed out to 50 s a column, and
// draws it.
func timeline50s(pb *Playback, sim tcell.SimulationScreen) {
	pb.Model.Handle(ui.KeyTimeline)
	for i := 0; i < 5; i++ {
		pb.Model.Handle(ui.KeyZoomOut)
	}
	frame(pb, sim)
}
