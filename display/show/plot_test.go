package show

import (
	"strings"
	"testing"

	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

// TestGoldenPlot: the paper's queue lengths plotted per mailbox over 20
// minutes (testdata/display/plot.display) at 2:58:00: P2 waited on M7
// from 2:45:29 to 2:54:20, so M7's sparkline is high for that span and
// low before and after, its value now 0; the other mailboxes stay at 0.
// The icons keep to the rows above the plot.
func TestGoldenPlot(t *testing.T) {
	s, h := dirSetup(t, paperDir, "../display/plot.display", "queue_length.tq")
	pb := playback(t, s, h, "2:30:00", "tqmon view testdata/paper")
	sim := simScreen(t, 100, 30)
	seek(t, pb, sim, "2:58:00")
	checkGolden(t, "plot-2-58-00.txt", term.Dump(sim))
	g := term.Text(sim)
	if !strings.Contains(g, "QueueLength.Length over 20m, 0 to 1") {
		t.Errorf("no plot heading:\n%s", g)
	}
	m7 := timelineRow(t, g, "M7")
	if !strings.Contains(m7, "▁█") || !strings.Contains(m7, "█▁") || !strings.HasSuffix(strings.TrimSpace(m7), "0") {
		t.Errorf("M7's sparkline: %s", m7)
	}
	if m1 := timelineRow(t, g, "M1"); strings.Contains(m1, "█") {
		t.Errorf("M1's sparkline: %s", m1)
	}
	placed := pb.Feed.Scene.Placed()
	for _, p := range placed {
		if p.Rect.Bottom() > 30-1-9 {
			t.Errorf("%s %s at %+v overlaps the plot", p.Rel, p.Key, p.Rect)
		}
	}
}

// TestGoldenLegend: l shows what the paper display's shading, arrows,
// flash and trace copies mean (with the plot's sparkline), drawn as the
// display draws them; in the timeline, what its bars and marks mean; l
// again closes it.
func TestGoldenLegend(t *testing.T) {
	s, h := dirSetup(t, paperDir, "../display/plot.display", "queue_length.tq")
	pb := playback(t, s, h, "2:30:00", "tqmon view testdata/paper")
	sim := simScreen(t, 100, 30)
	pb.Player.Seek(clockTime(t, "2:50:00"))
	settle(t, pb)
	pb.Model.Handle(ui.KeyLegend)
	frame(pb, sim)
	checkGolden(t, "legend-2-50-00.txt", term.Dump(sim))
	g := term.Text(sim)
	for _, want := range []string{"legend (l closes)", "Process shaded by State:", " Running  ", "SendMessage: from Process to Mailbox",
		"RunningOn: Process drawn inside Processor", "trace copies: past states and arrows, fading over 5s",
		"QueueLength.Length: low to high"} {
		if !strings.Contains(g, want) {
			t.Errorf("legend lacks %q:\n%s", want, g)
		}
	}
	pb.Model.Handle(ui.KeyTimeline)
	frame(pb, sim)
	checkGolden(t, "legend-timeline-2-50-00.txt", term.Dump(sim))
	if g := term.Text(sim); !strings.Contains(g, "state shaded ≥80%, ≥50%, ≥25%, less") || !strings.Contains(g, "lost: packets missed") {
		t.Errorf("timeline legend:\n%s", g)
	}
	pb.Model.Handle(ui.KeyLegend)
	frame(pb, sim)
	if g := term.Text(sim); strings.Contains(g, "legend (l closes)") {
		t.Errorf("l did not close the legend:\n%s", g)
	}
}

// TestGoldenTimelinePlot: the timeline draws the spec's plots under its
// rows, on its own time axis: at 50 s a column, M7's queue length is high
// in the very columns where P2's row shows its wait on M7 (2:45:29 to
// 2:54:20), and still when the view is zoomed in.
func TestGoldenTimelinePlot(t *testing.T) {
	s, h := dirSetup(t, paperDir, "../display/plot.display", "queue_length.tq")
	pb := playback(t, s, h, "2:30:00", "tqmon view testdata/paper")
	sim := simScreen(t, 100, 30)
	pb.Player.Seek(clockTime(t, "2:58:00"))
	settle(t, pb)
	timeline50s(pb, sim)
	checkGolden(t, "plot-timeline-2-58-00.txt", term.Dump(sim))
	g := term.Text(sim)
	if !strings.Contains(g, "QueueLength.Length, 0 to 1") {
		t.Errorf("no plot heading:\n%s", g)
	}
	// cols are the columns of row that show r.
	cols := func(row string, r rune) []int {
		var out []int
		for i, c := range []rune(row) {
			if c == r {
				out = append(out, i)
			}
		}
		return out
	}
	// The plot's rows are the last labelled M7 (the entity row is above);
	// a column where the wait ends shows the queue's greatest value, 1,
	// and the bar there the state that follows: the plot may be high one
	// column more at each end.
	plotRow := func(g string) string {
		rows := strings.Split(g, "\n")
		for i := len(rows) - 1; i >= 0; i-- {
			if strings.HasPrefix(rows[i], "M7 ") {
				return rows[i]
			}
		}
		t.Fatalf("no plot row M7:\n%s", g)
		return ""
	}
	check := func(when, g string) {
		m7, p2 := cols(plotRow(g), '█'), cols(timelineRow(t, g, "P2"), '▒')
		if len(m7) == 0 || len(p2) == 0 || m7[len(m7)-1]-m7[0] != len(m7)-1 ||
			m7[0] > p2[0] || m7[0] < p2[0]-1 || m7[len(m7)-1] < p2[len(p2)-1] || m7[len(m7)-1] > p2[len(p2)-1]+1 {
			t.Errorf("%s: M7's queue is high in columns %v, P2 waits in %v:\n%s", when, m7, p2, g)
		}
	}
	check("following", g)
	// Zoomed in to 20 s a column: the plot's columns change with the bars'.
	pb.Model.Handle(ui.KeyZoomIn)
	frame(pb, sim)
	check("zoomed in", term.Text(sim))
}
