package show

import (
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/term"
)

const crowdedDir = "../../testdata/display/crowded"

// TestGoldenArrowsCrowded: eight sends and a wait at once, arrows leaving
// one process for two mailboxes, two processes sending to one mailbox,
// arrows crossing. No two arrows run along the same cells or turn in one
// (arrows from one icon leave as one bus and branch with a tee; into one
// icon they join likewise); where lanes run out an arrow takes its
// relation's colour (none here at 100×30; at 60×16 some do).
func TestGoldenArrowsCrowded(t *testing.T) {
	s, h := dirSetup(t, crowdedDir, "crowded.display")
	pb := playback(t, s, h, "1:00:00", "tqmon view testdata/display/crowded")
	sim := simScreen(t, 100, 30)
	seek(t, pb, sim, "1:00:10")
	checkGolden(t, "arrows-crowded-100x30.txt", term.Dump(sim))
	// Only P3's send to M1 is crowded: it arrives where M1's wait for P5
	// leaves, the one cell both can use; it is drawn in SendMessage's
	// colour.
	if c := pb.Feed.Scene.Crowded(); len(c) != 1 || c[0].Rel != "SendMessage" || c[0].Colour != scene.CrowdedColour(1) {
		t.Errorf("crowded at 100×30: %v, want [SendMessage]", c)
	}
	m1 := placedRect(t, pb, "Mailbox", "M1", false)
	if r, st := cell(sim, m1.Rect.X-1, m1.Rect.MidY()); r != '>' {
		t.Errorf("the send into M1: %q", r)
	} else if fg, _, _ := st.Decompose(); fg != tcell.PaletteColor(scene.CrowdedColour(1).Index()) {
		t.Errorf("the send into M1 is not in SendMessage's colour: %v", fg)
	}
	checkNoSharedCorners(t, term.Text(sim))

	sim.SetSize(60, 16)
	frame(pb, sim)
	checkGolden(t, "arrows-crowded-60x16.txt", term.Dump(sim))
}

// checkNoSharedCorners: no corner is drawn right next to another line's
// corner on its open side in a way only a shared segment makes (the
// symptom "┌────┌───>"): a corner opening right followed, along the row,
// by another corner opening right with nothing but a run between.
func checkNoSharedCorners(t *testing.T, text string) {
	t.Helper()
	for y, line := range strings.Split(text, "\n") {
		rs := []rune(line)
		for x := 0; x < len(rs); x++ {
			if rs[x] != '┌' && rs[x] != '└' {
				continue
			}
			for x2 := x + 1; x2 < len(rs) && rs[x2] == '─'; x2++ {
				if x2+1 < len(rs) && (rs[x2+1] == '┌' || rs[x2+1] == '└') {
					t.Errorf("row %d: a corner runs into another: %s", y, line)
				}
			}
		}
	}
}
