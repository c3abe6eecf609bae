package show

import (
	"strings"
	"testing"

	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

// TestGoldenTimelineScroll: at 60×12 the paper's 11 entity rows do not
// fit; the last line says how many are below and which keys scroll; ↓
// and PgDn scroll, ↑ back, never past the first or last row.
func TestGoldenTimelineScroll(t *testing.T) {
	pb := paperPlayback(t)
	sim := simScreen(t, 60, 12)
	pb.Player.Seek(clockTime(t, "2:58:00"))
	settle(t, pb)
	timeline50s(pb, sim)
	checkGolden(t, "paper-timeline-60x12-top.txt", term.Dump(sim))
	g := term.Text(sim)
	if !strings.Contains(g, "(↓ 4 rows below; ↑/↓ PgUp/PgDn scroll)") {
		t.Errorf("no scrolling note or key hint:\n%s", g)
	}
	pb.Model.Handle(ui.KeyDown)
	pb.Model.Handle(ui.KeyDown)
	frame(pb, sim)
	g = term.Text(sim)
	if !strings.Contains(g, "(↑ 2 rows above, ↓ 2 rows below;") || timelineRow(t, g, "P1") == "" {
		t.Errorf("two rows down:\n%s", g)
	}
	for i := 0; i < 3; i++ {
		pb.Model.Handle(ui.KeyPageDown)
	}
	frame(pb, sim)
	checkGolden(t, "paper-timeline-60x12-bottom.txt", term.Dump(sim))
	g = term.Text(sim)
	if !strings.Contains(g, "(↑ 4 rows above;") || !strings.Contains(g, "M7  │") || strings.Contains(g, "A   │") {
		t.Errorf("paged to the end:\n%s", g)
	}
	for i := 0; i < 9; i++ {
		pb.Model.Handle(ui.KeyUp)
	}
	frame(pb, sim)
	if g := term.Text(sim); !strings.Contains(g, "A   │") || strings.Contains(g, "above") {
		t.Errorf("back to the top:\n%s", g)
	}
}

// TestGoldenTimelineFirstData: following, the timeline starts at the
// first data (1:00:00 in the paper's history), not a screen before it:
// thirty seconds in, at a second a column, the left edge is 1:00:00 and
// the bars begin in the first column.
func TestGoldenTimelineFirstData(t *testing.T) {
	s, h := paperSetup(t)
	pb := playback(t, s, h, "1:00:00", "tqmon view testdata/paper")
	sim := simScreen(t, 60, 20)
	pb.Player.Seek(clockTime(t, "1:00:30"))
	settle(t, pb)
	pb.Model.Handle(ui.KeyTimeline)
	frame(pb, sim)
	checkGolden(t, "paper-timeline-first-data.txt", term.Dump(sim))
	g := term.Text(sim)
	lines := strings.Split(g, "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[1]), "1:00:00") && !strings.Contains(lines[1], " 1:00:") {
		t.Errorf("axis does not start at the first data: %q", lines[1])
	}
	if strings.Contains(lines[1], "0:59") {
		t.Errorf("time before the first data shown: %q", lines[1])
	}
	if a := timelineRow(t, g, "A"); !strings.Contains(a, "│█") {
		t.Errorf("A's bar does not start in the first column: %q", a)
	}
}
