package show

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

// paperLosses are gaps in the paper example as a recording would list
// them (its Lost relation): sends lost before P2's wait on M7, waits lost
// after it.
func paperLosses(t *testing.T) []scene.Loss {
	return []scene.Loss{
		{Rel: "SendMessage", From: clockTime(t, "2:40:00"), To: clockTime(t, "2:45:00"), Count: 3},
		{Rel: "Waiting", From: clockTime(t, "2:52:00"), To: clockTime(t, "2:53:30"), Count: 2},
	}
}

// TestGoldenObservation: a playback fed a list of gaps with counts and a
// sampled relation shows them — the status line says "lost N" (the
// packets of the gaps play has reached) and which relations were sampled;
// the timeline marks each gap '×', on a "lost" row per relation and over
// the rows the relation draws.
func TestGoldenObservation(t *testing.T) {
	s, h := paperSetup(t)
	start := clockTime(t, "1:59:00")
	pb, err := NewPlayback(context.Background(), s, play.HistorySource(h, nil), h.Window,
		play.Options{Speed: 1, Start: &start, Paused: true, Clock: play.NewFakeClock(time.Unix(0, 0))},
		Options{Title: "tqmon view testdata/paper", Losses: paperLosses(t),
			Sampled: []scene.Sampling{{Rel: "RunningOn", Period: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pb.Close)
	settle(t, pb)
	sim := simScreen(t, 100, 30)
	status := func() string {
		lines := strings.Split(strings.TrimRight(term.Text(sim), "\n"), "\n")
		return lines[len(lines)-1]
	}

	// Before the first gap: nothing lost yet, RunningOn sampled.
	seek(t, pb, sim, "2:00:10")
	if st := status(); strings.Contains(st, "lost") || !strings.Contains(st, "sampled RunningOn/1s") {
		t.Errorf("2:00:10: status %q", st)
	}
	// Past the first: lost 3; past both: lost 5.
	seek(t, pb, sim, "2:50:00")
	checkGolden(t, "observation-2-50-00.txt", term.Dump(sim))
	if st := status(); !strings.Contains(st, "lost 3 · sampled RunningOn/1s") {
		t.Errorf("2:50:00: status %q", st)
	}
	seek(t, pb, sim, "2:58:00")
	if st := status(); !strings.Contains(st, "lost 5 ·") {
		t.Errorf("2:58:00: status %q", st)
	}

	// The timeline, 50 s a column: a "lost" row per relation, '×' over
	// each gap's span.
	timeline50s(pb, sim)
	checkGolden(t, "observation-timeline-2-58-00.txt", term.Dump(sim))
	g := term.Text(sim)
	lostRow := func(rel string) string { return timelineRow(t, g, "lost "+rel) }
	// 2:40:00–2:45:00 spans 6 columns of 50 s (7 cells, the columns not
	// aligned to it), 2:52:00–2:53:30 two (3).
	if n := strings.Count(lostRow("SendMessage"), "×"); n != 7 {
		t.Errorf("lost SendMessage: %d × marks, want 7: %s", n, lostRow("SendMessage"))
	}
	if n := strings.Count(lostRow("Waiting"), "×"); n != 3 {
		t.Errorf("lost Waiting: %d × marks, want 3: %s", n, lostRow("Waiting"))
	}
	// The rows of Waiting's tuples carry its gap.
	for range len(s.Spec.Relations()) { // entities, Processor… to Waiting
		pb.Model.Handle(ui.KeyRows)
		if strings.Contains(pb.Model.Timeline.Describe(), "Waiting") {
			break
		}
	}
	frame(pb, sim)
	if g := term.Text(sim); !strings.Contains(g, "timeline: Waiting") || strings.Count(g, "×") < 3 || strings.Contains(g, "lost SendMessage") {
		t.Errorf("Waiting's rows:\n%s", g)
	}
}
