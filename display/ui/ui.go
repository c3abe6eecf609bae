package ui

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/display/timeline"
)

// Controls change how recorded data plays (play.Player has them); live
// displays have none.
type Controls interface {
	TogglePause()
	Faster()
	Slower()
	Step()
	State() play.State
}

// Key is a command key.
type Key uint8

const (
	KeyNone     Key = iota
	KeyPause        // space: pause, resume
	KeyFaster       // +
	KeySlower       // -
	KeyStep         // →: to the next change
	KeyTimeline     // t: timeline view, and back
	KeyHelp         // ?
	KeyQuit         // q, Ctrl-C
	KeyReload       // r: read the display spec again
	KeyZoomIn       // z (timeline)
	KeyZoomOut      // x (timeline)
	KeyBack         // ← or < (timeline: scroll back)
	KeyForward      // > (timeline: scroll forward)
	KeyFollow       // f (timeline: follow the present, or stay)
	KeyRows         // Tab (timeline: entities, or a relation's tuples)
	KeyUp           // ↑ or k: scroll the icons or the timeline's rows up
	KeyDown         // ↓ or j: scroll them down
	KeyPageUp       // PgUp: a screen up
	KeyPageDown     // PgDn: a screen down
	KeyLegend       // l: what shading, colours and traces mean
)

// Model is the whole display's state.
type Model struct {
	Scene    *scene.Scene
	Timeline *timeline.View
	// Title is shown top left.
	Title string
	// Controls are nil for live displays.
	Controls Controls
	// Reload reads the display spec again (nil: not possible); it returns
	// the new spec or the error to show.
	Reload func() (*spec.Spec, error)
	// Clock is the display's present time (the play position, or the
	// live subject's clock).
	Clock func() algebra.Time
	// Ended says the data has ended (the residents stopped, or the
	// recording was played to its end).
	Ended func() bool
	// Local: the clock in local time (SetLocal).
	Local bool

	timelineOn bool
	help       bool
	legend     bool
	message    string
	area       draw.Rect
}

// New makes a model over a scene.
func New(sc *scene.Scene, title string, clock func() algebra.Time) *Model {
	m := &Model{Scene: sc, Timeline: timeline.New(sc), Title: title, Clock: clock}
	m.timelineOn = sc.Spec().Timeline
	return m
}

// Message shows a message in the status line until the next key.
func (m *Model) Message(format string, args ...any) { m.message = fmt.Sprintf(format, args...) }

// Handle acts on a key; it reports whether the display should end.
func (m *Model) Handle(k Key) (quit bool) {
	if k != KeyNone {
		m.message = ""
	}
	if m.help && k != KeyQuit && k != KeyNone {
		m.help = false
		return false
	}
	now := m.Clock()
	switch k {
	case KeyQuit:
		return true
	case KeyHelp:
		m.help = true
	case KeyLegend:
		m.legend = !m.legend
	case KeyTimeline:
		m.timelineOn = !m.timelineOn
	case KeyPause, KeyFaster, KeySlower, KeyStep:
		c := m.Controls
		if c == nil {
			m.Message("live: time runs with the subject (pause, speed and step are for recorded data)")
			return false
		}
		switch k {
		case KeyPause:
			c.TogglePause()
		case KeyFaster:
			c.Faster()
		case KeySlower:
			c.Slower()
		case KeyStep:
			c.Step()
		}
	case KeyReload:
		if m.Reload == nil {
			m.Message("this display spec cannot be read again")
			return false
		}
		sp, err := m.Reload()
		if err != nil {
			m.Message("spec not changed: %s", firstLine(err.Error()))
			return false
		}
		m.Scene.SetSpec(sp, now)
		m.Timeline.Mode = 0
		m.Message("spec read again: %d icons, %d relationships, %d flashes", len(sp.Icons), len(sp.Links), len(sp.Flashes))
	case KeyZoomIn:
		m.Timeline.ZoomIn()
	case KeyZoomOut:
		m.Timeline.ZoomOut()
	case KeyBack, KeyForward:
		n := -1
		if k == KeyForward {
			n = 1
		}
		m.Timeline.Scroll(n, now, m.area.W)
	case KeyFollow:
		m.Timeline.ToggleFollow(now)
	case KeyRows:
		m.Timeline.NextMode()
		m.Timeline.Top = 0
	case KeyUp, KeyDown, KeyPageUp, KeyPageDown:
		n := 1
		if k == KeyUp || k == KeyPageUp {
			n = -1
		}
		page := k == KeyPageUp || k == KeyPageDown
		if m.timelineOn {
			m.Timeline.ScrollRows(n, page)
			return false
		}
		if above, below := m.Scene.Scrolled(); above == 0 && below == 0 {
			m.Message("every icon is in view: nothing to scroll")
			return false
		}
		m.Scene.ScrollRows(n, page)
	}
	return false
}

func firstLine(s string) string {
	first, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		n := strings.Count(rest, "\n") + 1
		return fmt.Sprintf("%s (and %d more)", first, n)
	}
	return first
}

// TimelineOn reports whether the timeline view is showing.
func (m *Model) TimelineOn() bool { return m.timelineOn }

// FormatClock is the digital clock's text in format tf: H:MM:SS, with
// tenths when the time is not a whole second, or for wall-clock times
// (TimeAuto) RFC 3339 to the tenth, in UTC or with TimeLocal local time.
func FormatClock(t algebra.Time, tf algebra.TimeFormat) string {
	if t == algebra.Beginning || t == algebra.Forever {
		return "-:--:--"
	}
	return algebra.FormatTime(t-t%1e8, tf)
}

// SetLocal makes the clock, the timeline's axis and rows, the scene's
// labels and the legend print wall-clock times in the local time zone
// (--tz local), not UTC.
func (m *Model) SetLocal(local bool) {
	m.Local, m.Timeline.Local = local, local
	m.Scene.SetLocal(local)
}

// timeFormat is how the model prints times: algebra.TimeAuto, local with
// Local.
func (m *Model) timeFormat() algebra.TimeFormat {
	if m.Local {
		return algebra.TimeAuto | algebra.TimeLocal
	}
	return algebra.TimeAuto
}

// Draw draws the whole screen.
func (m *Model) Draw(c draw.Canvas) {
	w, h := c.Size()
	draw.Fill(c, draw.Rect{W: w, H: h}, ' ', draw.Style{})
	if w < 10 || h < 4 {
		draw.Text(c, 0, 0, draw.Clip("too small", w), draw.Style{})
		return
	}
	now := m.Clock()
	m.area = draw.Rect{X: 0, Y: 1, W: w, H: h - 2}
	// Header: title, clock.
	head := draw.Style{Bold: true}
	draw.Text(c, 1, 0, draw.Clip(m.Title, w-14), head)
	if m.Scene.Spec().Clock {
		clk := FormatClock(now, m.timeFormat())
		draw.Text(c, w-1-draw.Width(clk), 0, clk, draw.Style{Bold: true, Reverse: true})
	}
	if m.timelineOn {
		m.Timeline.Draw(c, m.area, now)
	} else {
		m.Scene.Draw(c, m.area, now)
	}
	m.status(c, w, h)
	if m.legend {
		m.drawLegend(c, w, h)
	}
	if m.help {
		m.drawHelp(c, w, h)
	}
}

// status writes the bottom line: play state, then a message or the view
// and key hints, then how many icons did not fit.
func (m *Model) status(c draw.Canvas, w, h int) {
	y := h - 1
	var state string
	switch {
	case m.Controls != nil:
		st := m.Controls.State()
		sym := "▶"
		if st.Paused {
			sym = "❚❚"
		}
		state = fmt.Sprintf("%s %s", sym, formatSpeed(st.Speed))
		if st.Ended {
			state += " end"
		}
	case m.Ended != nil && m.Ended():
		state = "live: ended"
	default:
		state = "live"
	}
	x := draw.Text(c, 1, y, state, draw.Style{Bold: true})
	if obs := m.observed(); obs != "" {
		x = draw.Text(c, x+2, y, draw.Clip(obs, w-x-4), timeline.LossStyle())
	}
	var right string
	above, below := m.Scene.Scrolled()
	if !m.timelineOn {
		right = scrolledNote(above, below, m.Scene.Hidden())
	}
	text := m.message
	if text == "" && m.timelineOn {
		text = m.Timeline.Describe() + "  z/x zoom  </> scroll  ↑/↓ rows  l legend  ? help"
	}
	if text == "" {
		text = "space pause  +/- speed  → step  t timeline  l legend  ? help  q quit"
		if m.Controls == nil {
			text = "t timeline  l legend  ? help  q quit"
		}
		if above > 0 || below > 0 {
			text = "↑↓ scroll  " + text
		}
	}
	room := w - x - 3
	if right != "" {
		room -= draw.Width(right) + 1 // a blank between
	}
	draw.Text(c, x+2, y, draw.Clip(text, room), draw.Style{Dim: m.message == ""})
	if right != "" {
		draw.Text(c, w-1-draw.Width(right), y, right, draw.Style{Bold: true})
	}
}

// scrolledNote says, for the status line's right end, how many icons are
// out of view above and below (the view scrolls) and how many did not
// fit at all: "↑3 above ↓5 below +2 hidden"; "" when all are in view.
func scrolledNote(above, below, hidden int) string {
	var parts []string
	if above > 0 {
		parts = append(parts, fmt.Sprintf("↑%d above", above))
	}
	if below > 0 {
		parts = append(parts, fmt.Sprintf("↓%d below", below))
	}
	if hidden > 0 {
		parts = append(parts, fmt.Sprintf("+%d hidden", hidden))
	}
	return strings.Join(parts, " ")
}

// observed says how the data drawn was observed, for the status line:
// "lost N" (the packets lost in the gaps begun by now) and the relations
// seen only at sampling instants, "sampled RunningOn/10ms"; "" when the
// data is complete.
func (m *Model) observed() string {
	obs := m.Scene.Observed
	var parts []string
	if n := obs.Lost(m.Clock()); n > 0 {
		parts = append(parts, fmt.Sprintf("lost %d", n))
	}
	var sampled []string
	for _, s := range obs.Sampled() {
		if s.Period > 0 {
			sampled = append(sampled, s.Rel+"/"+algebra.FormatDuration(int64(s.Period)))
		} else {
			sampled = append(sampled, s.Rel)
		}
	}
	if len(sampled) > 0 {
		parts = append(parts, "sampled "+strings.Join(sampled, ", "))
	}
	return strings.Join(parts, " · ")
}

func formatSpeed(s float64) string {
	if s >= 1 {
		return fmt.Sprintf("%gx", s)
	}
	return fmt.Sprintf("1/%gx", 1/s)
}

var helpLines = []string{
	"space   pause / resume (recorded data)",
	"+ -     faster / slower",
	"→       step to the next change",
	"t       timeline view / animation",
	"l       legend: shading, colours, traces",
	"r       read the display spec again",
	"q       quit",
	"",
	"↑ ↓ PgUp PgDn  scroll the icons or rows",
	"",
	"timeline: z x zoom, < > scroll time,",
	"          f follow, tab rows of a relation",
	"",
	"any key closes this help",
}

func (m *Model) drawHelp(c draw.Canvas, w, h int) {
	bw, bh := 46, len(helpLines)+2
	r := draw.Rect{X: max(0, (w-bw)/2), Y: max(0, (h-bh)/2), W: min(bw, w), H: min(bh, h)}
	draw.Fill(c, r, ' ', draw.Style{})
	draw.Frame(c, r, draw.Style{Bold: true})
	draw.Text(c, r.X+2, r.Y, " keys ", draw.Style{Bold: true})
	for i, l := range helpLines {
		if 1+i < r.H-1 {
			draw.Text(c, r.X+2, r.Y+1+i, draw.Clip(l, r.W-4), draw.Style{})
		}
	}
}
