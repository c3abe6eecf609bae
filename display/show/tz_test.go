package show

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

// wallBase moves the paper example to wall-clock time: its 0:00:00 is
// 2026-11-28T00:00:00Z, as a kernel recording's times are wall-clock.
var wallBase = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC).UnixNano()

// wallPlayback plays the paper example moved to wall-clock time, paused,
// with the clock and axis in time zone tz (show.Options.TZ).
func wallPlayback(t *testing.T, tz string) *Playback {
	t.Helper()
	s, h := paperSetup(t)
	return wallPlaybackOf(t, s, h, tz, wallBase)
}

// wallPlaybackOf is wallPlayback of setup s over the paper's history h
// (moved in place), its 0:00:00 at wallBase.
func wallPlaybackOf(t *testing.T, s *Setup, h *algebra.History, tz string, wallBase algebra.Time) *Playback {
	t.Helper()
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

// TestTZLabels: --tz reaches the values the display writes, not only its
// clock and axis: a time-typed attribute (the begin of a wait) printed as
// an icon's label, a plot series' label and a timeline row's label, in
// UTC by default and in the local time zone with --tz local. The wait
// begins at 22:45:29Z on November 30th, December 1st at +05:30, so that
// even a label cut short shows the zone's date.
func TestTZLabels(t *testing.T) {
	base := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC).UnixNano()
	saved := time.Local
	time.Local = time.FixedZone("IST", 5*3600+30*60)
	t.Cleanup(func() { time.Local = saved })
	load := func() *algebra.History {
		h, err := history.Load(paperDir)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := load()
	s, err := Compile(Config{Catalog: h.Catalog, FeedAll: true, Check: check.Options{},
		Queries: []query.Source{{Name: "since.tq", Text: `range of w is Waiting retrieve WaitSince (w.Mailbox, Since = begin of w, N = 1)`}},
		Display: query.Source{Name: "since.display", Text: "display WaitSince as text label Since order by Mailbox at left\n" +
			"display WaitSince as plot N label Since for 20m\nshow clock\n"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ tz, golden, since, cut string }{
		{"", "tz-labels-utc.txt", "2026-11-30T22:45:29Z", "2026-11-3…│"},
		{"local", "tz-labels-local.txt", "2026-12-01T04:15:29+05:30", "2026-12-0…│"},
	} {
		pb := wallPlaybackOf(t, s, load(), tt.tz, base) // a history of its own: wallPlaybackOf moves it
		sim := simScreen(t, 100, 30)
		pb.Player.Seek(base + clockTime(t, "2:50:00"))
		settle(t, pb)
		frame(pb, sim)
		checkGolden(t, tt.golden, term.Dump(sim))
		g := term.Text(sim)
		if !strings.Contains(g, tt.since) || !strings.Contains(g, tt.cut) {
			t.Errorf("--tz %q: the icon's label is not %s or the plot's series not %s:\n%s", tt.tz, tt.since, tt.cut, g)
		}
		pb.Model.Handle(ui.KeyTimeline)
		pb.Model.Timeline.Mode = 1 // a row per WaitSince tuple
		frame(pb, sim)
		if g := term.Text(sim); !strings.Contains(g, "M7 "+tt.since+" 1") {
			t.Errorf("--tz %q: the timeline's rows lack %s:\n%s", tt.tz, tt.since, g)
		}
	}
}
