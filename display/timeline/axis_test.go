package timeline

import (
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
)

// TestAxisWallClock: a wall-clock axis labels its ticks in RFC 3339 (the
// default time format, auto), and labels wider than a tick's spacing skip
// ticks rather than overwrite one another; a subject's own clock keeps
// its H:MM:SS labels at every tick.
func TestAxisWallClock(t *testing.T) {
	for _, c := range []struct {
		start  algebra.Time
		parse  func(string) error
		labels int // at least
	}{
		{1795860000e9, func(s string) error { _, err := time.Parse(time.RFC3339Nano, s); return err }, 2},
		{3600e9, func(s string) error { _, err := algebra.ParseTime(s); return err }, 5},
	} {
		g := draw.NewGrid(120, 2)
		(&View{}).axis(g, draw.Rect{W: 120, H: 2}, 0, 120, c.start, 1e8)
		labels := strings.Fields(g.Row(0))
		if len(labels) < c.labels {
			t.Errorf("start %d: labels %q, want at least %d", c.start, labels, c.labels)
		}
		for _, l := range labels {
			if err := c.parse(l); err != nil {
				t.Errorf("start %d: label %q: %v (overwritten?)\n%s", c.start, l, err, g.Row(0))
			}
		}
	}
}
