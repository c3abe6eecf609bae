package scene

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// TestPlot: a float attribute plotted per host over 10 s: intervals fill
// their columns, an event marks its own, a column shows the greatest
// value in its span, the value now ends the row; only MaxPlotSeries
// series are drawn and the heading counts the rest; plots take at most
// half the rows.
func TestPlot(t *testing.T) {
	sc := paperCatalog(t)
	rel := &algebra.Relation{Name: "Load", Derived: true, Attrs: []algebra.Attr{
		{Name: "Host", Type: algebra.TypeString}, {Name: "Value", Type: algebra.TypeFloat}}}
	sc["Load"] = rel
	s := New(load(t, sc, "display Load as plot Value label Host for 10s"))
	st := s.Relation(rel)
	push := func(k stream.Kind, at int64, host string, v float64, rec *stream.Rec) *stream.Rec {
		if rec == nil {
			rec = &stream.Rec{Vals: []algebra.Value{algebra.Str(host), algebra.Float(v)}, From: at}
		}
		st.Push(stream.Elem{Kind: k, T: at, Rec: rec})
		return rec
	}
	// h1: 1.0 over [0 s, 5 s), then 4.0 from 5 s on; h2: an event of 2.5
	// at 7 s.
	r := push(stream.Begin, 0, "h1", 1, nil)
	push(stream.End, 5*sec, "", 0, r)
	push(stream.Begin, 5*sec, "h1", 4, nil)
	push(stream.Event, 7*sec, "h2", 2.5, nil)
	g := draw.NewGrid(40, 20)
	s.Draw(g, draw.Rect{X: 0, Y: 1, W: 40, H: 18}, 10*sec)
	text := g.String()
	if !strings.Contains(text, "Load.Value over 10s, 0 to 4") {
		t.Fatalf("heading:\n%s", text)
	}
	h1, h2 := rowOf(t, text, "h1"), rowOf(t, text, "h2")
	// 18 columns of 40-10-8-4 over 10 s (0.56 s each): up to 5 s at 1
	// of 4 (▃), then at 4 (█) — the column holding 5 s shows the greater;
	// the value now is 4.
	if !strings.Contains(h1, "│▃▃▃▃▃▃▃▃██████████│ 4") {
		t.Errorf("h1: %q", h1)
	}
	// An event: one column, at 2.5 of 4 (▅); nothing valid now.
	if got := strings.Count(h2, "▅"); got != 1 || strings.ContainsAny(h2, "▁▂▃▄▆▇█") || strings.HasSuffix(strings.TrimSpace(h2), "5") {
		t.Errorf("h2: %q", h2)
	}
	// More series than drawn: the heading counts them.
	for i := 3; i <= spec.MaxPlotSeries+4; i++ {
		push(stream.Begin, 9*sec, fmt.Sprintf("h%d", i), float64(i), nil)
	}
	g = draw.NewGrid(60, 30)
	s.Draw(g, draw.Rect{X: 0, Y: 1, W: 60, H: 24}, 10*sec)
	text = g.String()
	if !strings.Contains(text, "(+4 series)") {
		t.Errorf("no count of the series left out:\n%s", text)
	}
	if n := strings.Count(text, "\n h"); n != spec.MaxPlotSeries {
		t.Errorf("%d plot rows in a 24-row area:\n%s", n, text)
	}
	// A small screen: plots take half its rows, the icons the rest.
	g = draw.NewGrid(60, 12)
	s.Draw(g, draw.Rect{X: 0, Y: 1, W: 60, H: 10}, 10*sec)
	if n := strings.Count(g.String(), "\n h"); n != 4 {
		t.Errorf("%d series rows under a heading in a 10-row area, want 4 (half):\n%s", n, g.String())
	}
}

// rowOf is the line of text whose first word is label.
func rowOf(t *testing.T, text, label string) string {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == label {
			return l
		}
	}
	t.Fatalf("no row %s in\n%s", label, text)
	return ""
}
