package scene

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// sparks are the eight heights of a sparkline's columns, lowest first.
var sparks = []rune("▁▂▃▄▅▆▇█")

// series is one sparkline of a plot: its key's tuples in the plot's span,
// as the greatest value in each column.
type series struct {
	key   algebra.Value
	label string
	cols  []float64 // NaN: no value in the column
	last  float64   // the value at now (NaN: none)
	st    draw.Style
}

// PlotWindow is the time a plot's sparklines span: Cols columns of Step
// each from From, with values taken up to Now (the columns after it stay
// empty).
type PlotWindow struct {
	From algebra.Time
	Step int64
	Cols int
	Now  algebra.Time
}

// lastWindow is the animated view's window of a plot: its span up to now
// over cols columns.
func lastWindow(p *spec.Plot, now algebra.Time, cols int) PlotWindow {
	return PlotWindow{From: now - p.Span, Step: max(1, (p.Span+int64(cols)-1)/int64(cols)), Cols: cols, Now: now}
}

// plotData is a plot's series over a window, in their key's order, and
// how many more there are than MaxPlotSeries.
func (s *Scene) plotData(p *spec.Plot, win PlotWindow) (out []*series, more int) {
	st := s.Stored(p.Rel.Name)
	cols, now := win.Cols, win.Now
	if st == nil || cols <= 0 {
		return nil, 0
	}
	t0, dt := win.From, max(1, win.Step)
	t1 := t0 + int64(cols)*dt // the window's end
	col := func(t algebra.Time) int { return int(min(int64(cols-1), max(0, (t-t0)/dt))) }
	byKey := map[algebra.Value]*series{}
	var lastFrom map[*series]algebra.Time
	add := func(t *Tuple) {
		to := min(t.To, now+1)
		if to <= t0 || t.From > now || t.From >= t1 {
			return
		}
		var k algebra.Value
		if p.Series >= 0 {
			k = t.Vals[p.Series]
		}
		sr := byKey[k]
		if sr == nil {
			sr = &series{key: k, cols: make([]float64, cols), last: math.NaN()}
			for i := range sr.cols {
				sr.cols[i] = math.NaN()
			}
			if p.Series >= 0 {
				sr.label = k.Format(s.tf)
			} else {
				sr.label = p.Rel.Attrs[p.Attr].Name
			}
			if p.Colour != nil {
				sr.st.Fg = p.Colour.Of(t.Vals[p.Colour.Attr])
			}
			byKey[k] = sr
		}
		v := t.Vals[p.Attr].F()
		for i := col(max(t.From, t0)); i <= col(min(to, t1)-1); i++ {
			if math.IsNaN(sr.cols[i]) || v > sr.cols[i] {
				sr.cols[i] = v
			}
		}
		// The value at now: the latest tuple valid at now.
		if t.From <= now && t.To > now {
			if lastFrom == nil {
				lastFrom = map[*series]algebra.Time{}
			}
			if f, ok := lastFrom[sr]; !ok || t.From >= f {
				lastFrom[sr], sr.last = t.From, v
			}
		}
	}
	st.Open(add)
	st.Closed(func(t *Tuple) bool {
		if t.To <= t0 {
			return false // closed in order: the rest ended earlier
		}
		add(t)
		return true
	})
	for _, sr := range byKey {
		out = append(out, sr)
	}
	slices.SortFunc(out, func(a, b *series) int { return algebra.Compare(a.key, b.key) })
	if len(out) > spec.MaxPlotSeries {
		more = len(out) - spec.MaxPlotSeries
		out = out[:spec.MaxPlotSeries]
	}
	return out, more
}

// plotted is a plot ready to draw.
type plotted struct {
	p      *spec.Plot
	series []*series
	more   int
}

// plots gathers the plots at now for an area w wide and the rows they
// take: a heading and a row per series each, at most half of h (the
// last rows are left out when they do not fit).
func (s *Scene) plots(now algebra.Time, w, h int) ([]plotted, int) {
	return s.gatherPlots(func(p *spec.Plot) PlotWindow { return lastWindow(p, now, plotCols(w)) }, h)
}

func (s *Scene) gatherPlots(win func(*spec.Plot) PlotWindow, h int) ([]plotted, int) {
	if len(s.sp.Plots) == 0 || h < 6 {
		return nil, 0
	}
	var out []plotted
	rows := 0
	for _, p := range s.sp.Plots {
		sr, more := s.plotData(p, win(p))
		out = append(out, plotted{p, sr, more})
		rows += 1 + len(sr)
	}
	return out, min(rows, h/2)
}

// plotLabelW and plotValueW are the widths of a sparkline's label and of
// the value at its end.
const plotLabelW, plotValueW = 10, 8

func plotCols(w int) int { return max(0, w-plotLabelW-plotValueW-4) }

// Plots are the spec's plots over one window, for the timeline: their
// sparklines' columns are the timeline's.
type Plots struct {
	ps   []plotted
	rows int
}

// PlotsOver gathers the spec's plots over win for an area h rows high:
// like the animated view's, they take at most half of it.
func (s *Scene) PlotsOver(win PlotWindow, h int) Plots {
	ps, rows := s.gatherPlots(func(*spec.Plot) PlotWindow { return win }, h)
	return Plots{ps, rows}
}

// Rows is the rows the plots take.
func (p Plots) Rows() int { return p.rows }

// Draw draws the plots into area (Rows high): each series' label in the
// first labelW columns, then '│' and its sparkline, a column per column
// of the window.
func (p Plots) Draw(c draw.Canvas, area draw.Rect, labelW int) {
	drawPlots(c, area, p.ps, plotGeometry{labelX: area.X, labelW: labelW})
}

// plotGeometry is where a plot's parts go on its rows: the label from
// labelX, labelW wide, then '│' and the sparkline; with value (the
// animated view's own window), the span in the heading and a closing '│'
// and the value at now after the sparkline.
type plotGeometry struct {
	labelX, labelW int
	value          bool
}

// drawPlots draws the plots into area, a row each of heading and series.
func drawPlots(c draw.Canvas, area draw.Rect, ps []plotted, g plotGeometry) {
	y := area.Y
	dim := draw.Style{Dim: true}
	for _, pl := range ps {
		if y >= area.Bottom() {
			return
		}
		lo, hi := 0.0, math.Inf(-1)
		for _, sr := range pl.series {
			for _, v := range sr.cols {
				if !math.IsNaN(v) {
					lo, hi = min(lo, v), max(hi, v)
				}
			}
		}
		head := fmt.Sprintf("%s.%s", pl.p.Rel.Name, pl.p.Rel.Attrs[pl.p.Attr].Name)
		if g.value {
			head += " over " + shortDuration(pl.p.Span)
		}
		switch {
		case len(pl.series) == 0:
			head += ": no data"
		case !math.IsInf(hi, -1):
			head += fmt.Sprintf(", %s to %s", formatValue(lo), formatValue(hi))
		}
		if pl.more > 0 {
			head += fmt.Sprintf(" (+%d series)", pl.more)
		}
		draw.Text(c, g.labelX, y, draw.Clip(head, area.Right()-g.labelX-1), dim)
		y++
		for _, sr := range pl.series {
			if y >= area.Bottom() {
				return
			}
			x := g.labelX
			draw.Text(c, x, y, draw.Clip(sr.label, g.labelW), sr.st)
			x += g.labelW + 1
			c.Set(x-1, y, '│', dim)
			for i, v := range sr.cols {
				if !math.IsNaN(v) {
					c.Set(x+i, y, spark(v, lo, hi), sr.st)
				}
			}
			if g.value {
				x += len(sr.cols)
				c.Set(x, y, '│', dim)
				if !math.IsNaN(sr.last) {
					draw.Text(c, x+2, y, draw.Clip(formatValue(sr.last), plotValueW), sr.st)
				}
			}
			y++
		}
	}
}

// spark is the column of value v on a scale from lo to hi.
func spark(v, lo, hi float64) rune {
	if hi <= lo {
		return sparks[0]
	}
	i := int(math.Round((v - lo) / (hi - lo) * float64(len(sparks)-1)))
	return sparks[max(0, min(len(sparks)-1, i))]
}

// formatValue writes a plotted number briefly: whole numbers as such,
// others with three significant digits.
func formatValue(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'g', 3, 64), ".0")
}

// shortDuration writes a span without zero trailing units: 20m, not 20m0s.
func shortDuration(d int64) string {
	s := algebra.FormatDuration(d)
	for _, z := range []string{"0s", "0m"} {
		if t := strings.TrimSuffix(s, z); t != s && t != "" && !strings.HasSuffix(t, ".") && (t[len(t)-1] < '0' || t[len(t)-1] > '9') {
			s = t
		}
	}
	return s
}
