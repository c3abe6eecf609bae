package show

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

// wallBase moves the paper example to wall-clock time: its 0:00:00 is
// 2026-11-28T00:00:00Z, as a kernel recording's times are wall-clock.
var wallBase = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).UnixNano()

// wallPlayback plays the paper example moved to wall-clock time, paused,
// with the clock and axis in time zone tz (show.Options.TZ).
func wallPlayback(t *testing.T, tz string) *Playback {
	t.Helper()
	s, h := paperSetup(t)
	shift := func(x algebra.Time) algebra.Time {
		if x == algebra.Beginning || x == algebra.Forever {
			return x
		}
		return x + wallBase
	}
	for _, tb := range h.Tables {
		for i := range tb.Rows {
			tb.Rows[i].From, tb.Rows[i].To = shift(tb.Rows[i].From), shift(tb.Rows[i].To)
		}
	}
	if h.Window != nil {
		h.Window = &algebra.Window{From: shift(h.Window.From), To: shift(h.Window.To)}
	}
	start := shift(clockTime(t, "1:59:00"))
	clock := play.NewFakeClock(time.Unix(0, 0))
	pb, err := NewPlayback(context.Background(), s, play.HistorySource(h, nil), h.Window,
		play.Options{Speed: 1, Start: &start, Paused: true, Clock: clock}, Options{Title: "tqmon view", TZ: tz})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pb.Close)
	settle(t, pb)
	return pb
}

// TestGoldenFramesTZ: --tz is honoured by the animated display: the clock
// and the timeline's axis print wall-clock times in UTC by default and in
// the local time zone with --tz local (here a fixed +05:30).
func TestGoldenFramesTZ(t *testing.T) {
	saved := time.Local
	time.Local = time.FixedZone("IST", 5*3600+30*60)
	t.Cleanup(func() { time.Local = saved })
	for _, tt := range []struct {
		tz, golden, clock, axis string
	}{
		{"", "wall-utc-2-50-00.txt", "2026-11-28T02:50:00Z", "2026-11-28T02:"},
		{"local", "wall-local-2-50-00.txt", "2026-11-28T08:20:00+05:30", "2026-11-28T08:"},
	} {
		pb := wallPlayback(t, tt.tz)
		sim := simScreen(t, 100, 30)
		pb.Player.Seek(wallBase + clockTime(t, "2:50:00"))
		settle(t, pb)
		frame(pb, sim)
		checkGolden(t, tt.golden, term.Dump(sim))
		if head := strings.SplitN(term.Text(sim), "\n", 2)[0]; !strings.Contains(head, tt.clock) {
			t.Errorf("--tz %q: the clock is not %s: %q", tt.tz, tt.clock, head)
		}
		pb.Model.Handle(ui.KeyTimeline)
		frame(pb, sim)
		lines := strings.Split(term.Text(sim), "\n")
		if len(lines) < 2 || !strings.Contains(lines[1], tt.axis) || (tt.tz == "local") != strings.Contains(lines[1], "+05:30") {
			t.Errorf("--tz %q: the timeline's axis lacks %s:\n%s", tt.tz, tt.axis, strings.Join(lines[:min(4, len(lines))], "\n"))
		}
	}
}
