package timeline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
)

// scales are the time one column spans, in nanoseconds: 1, 2, 5 × 10^k
// from a millisecond to an hour.
var scales = func() []int64 {
	var s []int64
	for d := int64(1e6); d <= 3600e9; d *= 10 {
		s = append(s, d, 2*d, 5*d)
	}
	return s
}()

// ticks are the round spans between axis labels.
var ticks = func() []int64 {
	var t []int64
	for d := int64(1e6); d < 1e9; d *= 10 {
		t = append(t, d, 2*d, 5*d)
	}
	for _, s := range []int64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400} {
		t = append(t, s*1e9)
	}
	return t
}()

// View is the timeline's state: what the rows are, the zoom, and whether
// the right edge follows the present.
type View struct {
	sc *scene.Scene
	// Mode 0 shows one row per entity; mode i > 0 one row per tuple value
	// of the spec's i-th relation.
	Mode int
	zoom int
	// Follow keeps the present at the right edge; otherwise End is.
	Follow bool
	End    algebra.Time
	// Top is the first row shown (rows scroll when they outnumber the
	// screen's); Draw keeps it within the rows there are.
	Top int
	// shown and total are the rows the last Draw showed and had.
	shown, total int
	// Local prints the axis's wall-clock labels and the position in the
	// local time zone (--tz local), not UTC.
	Local bool
}

// timeFormat is how the view prints times: algebra.TimeAuto, local with
// Local.
func (v *View) timeFormat() algebra.TimeFormat {
	if v.Local {
		return algebra.TimeAuto | algebra.TimeLocal
	}
	return algebra.TimeAuto
}

// New makes a timeline over a scene's stores, following the present, at a
// zoom where the decay spans about five columns.
func New(sc *scene.Scene) *View {
	v := &View{sc: sc, Follow: true}
	want := sc.Spec().Decay / 5
	for i, s := range scales {
		if s <= want {
			v.zoom = i
		}
	}
	return v
}

// Scale is the time one column spans.
func (v *View) Scale() int64 { return scales[v.zoom] }

// ZoomIn shows less time per column; ZoomOut more.
func (v *View) ZoomIn()  { v.zoom = max(0, v.zoom-1) }
func (v *View) ZoomOut() { v.zoom = min(len(scales)-1, v.zoom+1) }

// Scroll moves the right edge by n screens' quarter (negative: back) and
// stops following; cols is the width of the bars.
func (v *View) Scroll(n int, now algebra.Time, cols int) {
	if v.Follow {
		v.End, v.Follow = now, false
	}
	v.End += int64(n) * int64(max(1, cols/4)) * v.Scale()
	if v.End >= now {
		v.Follow = true
	}
}

// ScrollRows moves the rows shown by n (negative: up); page scrolls by
// screens instead of rows.
func (v *View) ScrollRows(n int, page bool) {
	if page {
		n *= max(1, v.shown-1)
	}
	v.Top = max(0, min(v.Top+n, v.total-v.shown))
}

// ToggleFollow makes the right edge follow the present, or stay.
func (v *View) ToggleFollow(now algebra.Time) {
	v.Follow = !v.Follow
	v.End = now
}

// NextMode cycles the rows: entities, then each relation of the spec.
func (v *View) NextMode() {
	v.Mode = (v.Mode + 1) % (1 + len(v.sc.Spec().Relations()))
}

// Describe says what the view shows, for the status line.
func (v *View) Describe() string {
	rows := "entities"
	if rels := v.sc.Spec().Relations(); v.Mode > 0 && v.Mode <= len(rels) {
		rows = rels[v.Mode-1].Name
	}
	f := "following"
	if !v.Follow {
		f = "at " + algebra.FormatTime(v.End, v.timeFormat())
	}
	return fmt.Sprintf("timeline: %s, %s/column, %s", rows, algebra.FormatDuration(v.Scale()), f)
}

// row is one row of the timeline: rels are the relations its marks come
// from (their gaps are marked over it).
type row struct {
	label string
	key   []algebra.Value
	marks []mark
	rels  []string
}

// mark is a bar [from, to) or, for an event, a tick at from; a gap's bar
// is drawn at least one column wide.
type mark struct {
	from, to algebra.Time
	event    bool
	gap      bool
	r        rune
	st       draw.Style
}

// LossStyle is how what was not observed is drawn: the timeline's gaps
// (marked '×') and the status line's losses.
func LossStyle() draw.Style { return draw.Style{Fg: draw.Palette(1), Bold: true} }

// gapRune marks a gap: a span where packets of a relation were lost.
const gapRune = '×'

// withGaps marks the gaps of each row's relations over its marks, and
// adds a row per relation with gaps begun by now ("lost Rel") — of every
// relation when all is true (the entity rows: a relation the rows do not
// draw may have lost what made them), else of those the rows draw.
func (v *View) withGaps(rows []*row, now algebra.Time, all bool, only string) []*row {
	obs := v.sc.Observed
	gapMarks := func(rel string) []mark {
		var ms []mark
		for _, g := range obs.Gaps(rel) {
			ms = append(ms, mark{from: g.From, to: g.To, gap: true, r: gapRune, st: LossStyle()})
		}
		return ms
	}
	for _, r := range rows {
		for _, rel := range r.rels {
			r.marks = append(r.marks, gapMarks(rel)...)
		}
	}
	for _, rel := range obs.Lossy(now) {
		if all || rel == only {
			rows = append(rows, &row{label: "lost " + rel, marks: gapMarks(rel)})
		}
	}
	return rows
}

// Draw draws the timeline at now into area.
func (v *View) Draw(c draw.Canvas, area draw.Rect, now algebra.Time) {
	if area.H < 3 || area.W < 20 {
		return
	}
	end := now
	if !v.Follow {
		end = v.End
	}
	var rows []*row
	if v.Mode == 0 {
		rows = v.withGaps(v.entityRows(), now, true, "")
	} else if rels := v.sc.Spec().Relations(); v.Mode <= len(rels) {
		rows = v.withGaps(v.tupleRows(rels[v.Mode-1]), now, false, rels[v.Mode-1].Name)
	}
	labelW := 4
	for _, r := range rows {
		labelW = max(labelW, draw.Width(r.label))
	}
	labelW = min(labelW, area.W/3)
	x0 := area.X + labelW + 1
	cols := area.Right() - x0
	scale := v.Scale()
	start := end - int64(cols)*scale
	// Following, the left edge is never before the first data: until the
	// data fills the width the present moves right from it, rather than
	// showing time where nothing was (negative time, for a run from 0).
	if first, ok := firstData(rows); v.Follow && ok && first > start {
		start = first
		end = start + int64(cols)*scale
	}
	col := func(t algebra.Time) int {
		if t <= start {
			return 0
		}
		return int((t - start) / scale)
	}
	// The spec's plots take the bottom rows (at most half of those under
	// the axis), their sparklines on the bars' columns: a column of a
	// plot is the same time as the bars' above it.
	plots := v.sc.PlotsOver(scene.PlotWindow{From: start, Step: scale, Cols: cols, Now: now}, area.H-2)
	if n := plots.Rows(); n > 0 {
		area.H -= n
		defer plots.Draw(c, draw.Rect{X: area.X, Y: area.Bottom(), W: area.W, H: n}, labelW)
	}
	// Rows scroll: Top stays within them (they may have become fewer,
	// or the screen taller), and the last line of the area says how many
	// are above and below when not all fit.
	room := area.H - 2
	v.total = len(rows)
	v.shown = min(room, len(rows))
	if len(rows) > room {
		v.shown = room - 1 // the last line counts what is not shown
	}
	v.Top = max(0, min(v.Top, len(rows)-v.shown))
	v.axis(c, area, x0, cols, start, scale)
	for i, r := range rows[v.Top : v.Top+v.shown] {
		y := area.Y + 2 + i
		draw.Text(c, area.X, y, draw.Clip(r.label, labelW), draw.Style{})
		c.Set(x0-1, y, '│', draw.Style{})
		for _, m := range r.marks {
			to := min(m.to, now)
			if m.event {
				if m.from < start || m.from >= end {
					continue
				}
				c.Set(x0+col(m.from), y, m.r, m.st)
				continue
			}
			if to <= start || m.from >= end || m.gap && m.from >= now {
				continue
			}
			a, b := col(m.from), col(algebra.Prev(to))
			if m.gap {
				b = max(a, b) // a gap shorter than a column still shows
			}
			for x := a; x <= b && x < cols; x++ {
				c.Set(x0+x, y, m.r, m.st)
			}
		}
	}
	if v.shown < len(rows) {
		var parts []string
		if v.Top > 0 {
			parts = append(parts, fmt.Sprintf("↑ %d rows above", v.Top))
		}
		if n := len(rows) - v.Top - v.shown; n > 0 {
			parts = append(parts, fmt.Sprintf("↓ %d rows below", n))
		}
		note := "(" + strings.Join(parts, ", ") + "; ↑/↓ PgUp/PgDn scroll)"
		draw.Text(c, area.X, area.Bottom()-1, draw.Clip(note, area.W), draw.Style{Dim: true})
	}
}

// firstData is the earliest time a row's marks begin at (gaps and tuples
// valid from the beginning aside), if any does.
func firstData(rows []*row) (algebra.Time, bool) {
	first, ok := algebra.Forever, false
	for _, r := range rows {
		for _, m := range r.marks {
			if !m.gap && m.from != algebra.Beginning && m.from < first {
				first, ok = m.from, true
			}
		}
	}
	return first, ok
}

// axis writes time labels over the bars, at round times about 14 columns
// apart, and a rule with a tick under each.
func (v *View) axis(c draw.Canvas, area draw.Rect, x0, cols int, start, scale int64) {
	dim := draw.Style{Dim: true}
	step := scale * 14
	for _, s := range ticks {
		if s >= scale*14 {
			step = s
			break
		}
	}
	for x := 0; x < cols; x++ {
		c.Set(x0+x, area.Y+1, '─', dim)
	}
	c.Set(x0-1, area.Y+1, '┼', dim)
	first := start/step*step + step
	if start < 0 && start%step != 0 {
		first -= step
	}
	free := 0 // labels do not overlap: wall-clock ones (RFC 3339) are wider than a step
	for t := first; ; t += step {
		x := int((t - start) / scale)
		if x >= cols {
			break
		}
		if label := algebra.FormatTime(t, v.timeFormat()); x >= free && x+draw.Width(label) <= cols {
			draw.Text(c, x0+x, area.Y, label, dim)
			free = x + draw.Width(label) + 1
		}
		c.Set(x0+x, area.Y+1, '┬', dim)
	}
}

// tuples lists a relation's stored tuples, open and closed.
func (v *View) tuples(name string) []*scene.Tuple {
	st := v.sc.Stored(name)
	if st == nil {
		return nil
	}
	var out []*scene.Tuple
	st.Open(func(t *scene.Tuple) { out = append(out, t) })
	st.Closed(func(t *scene.Tuple) bool { out = append(out, t); return true })
	return out
}

// entityRows: one row per key of each icon relation, the key's tuples as
// bars (shaded and coloured as the icon) and the flashes aimed at it as
// '*' ticks.
func (v *View) entityRows() []*row {
	sp := v.sc.Spec()
	var rows []*row
	for ii, ic := range sp.Icons {
		byKey := map[algebra.Value]*row{}
		var order []*row
		get := func(k algebra.Value) *row {
			r := byKey[k]
			if r == nil {
				r = &row{label: k.Format(v.timeFormat()), key: []algebra.Value{k}, rels: []string{ic.Rel.Name}}
				byKey[k] = r
				order = append(order, r)
			}
			return r
		}
		for _, t := range v.tuples(ic.Rel.Name) {
			r := get(t.Vals[ic.Key])
			r.marks = append(r.marks, iconMark(ic, t))
		}
		for _, f := range sp.Flashes {
			if f.Icon != ii {
				continue
			}
			for _, t := range v.tuples(f.Rel.Name) {
				if r := byKey[t.Vals[f.Attr]]; r != nil {
					r.marks = append(r.marks, mark{from: t.From, to: t.To, event: true, r: '*', st: draw.Style{Bold: true}})
				}
			}
		}
		slices.SortFunc(order, func(a, b *row) int { return algebra.Compare(a.key[0], b.key[0]) })
		rows = append(rows, order...)
	}
	for _, r := range rows {
		sortMarks(r.marks)
	}
	return rows
}

// iconMark is a tuple of an icon relation as a bar or tick.
func iconMark(ic *spec.Icon, t *scene.Tuple) mark {
	m := mark{from: t.From, to: t.To, event: t.Event, r: '█'}
	if ic.Colour != nil {
		m.st.Fg = ic.Colour.Of(t.Vals[ic.Colour.Attr])
	}
	if ic.Shade != nil {
		m.r = ShadeRune(ic.Shade.Percent(t.Vals[ic.Shade.Attr]))
	}
	if t.Event {
		m.r = '|'
	}
	return m
}

// ShadeRune is the bar of a state shaded to percent: █ from 80%, ▓ from
// 50%, ▒ from 25%, ░ below.
func ShadeRune(percent int) rune {
	switch {
	case percent >= 80:
		return '█'
	case percent >= 50:
		return '▓'
	case percent >= 25:
		return '▒'
	}
	return '░'
}

// tupleRows: one row per distinct value tuple of a relation.
func (v *View) tupleRows(rel *algebra.Relation) []*row {
	byKey := map[string]*row{}
	var order []*row
	for _, t := range v.tuples(rel.Name) {
		parts := make([]string, len(t.Vals))
		for i, x := range t.Vals {
			parts[i] = x.Format(v.timeFormat())
		}
		label := strings.Join(parts, " ")
		r := byKey[label]
		if r == nil {
			r = &row{label: label, key: t.Vals, rels: []string{rel.Name}}
			byKey[label] = r
			order = append(order, r)
		}
		m := mark{from: t.From, to: t.To, event: t.Event, r: '█'}
		if t.Event {
			m.r = '|'
		}
		r.marks = append(r.marks, m)
	}
	slices.SortFunc(order, func(a, b *row) int { return algebra.CompareTuples(a.key, b.key) })
	for i, r := range order {
		for j := range r.marks {
			if !r.marks[j].event {
				r.marks[j].st.Fg = draw.Cycle(i)
			}
		}
		sortMarks(r.marks)
	}
	return order
}

// sortMarks puts bars before ticks, so ticks stay visible.
func sortMarks(ms []mark) {
	slices.SortStableFunc(ms, func(a, b mark) int {
		switch {
		case a.event == b.event:
			return 0
		case b.event:
			return -1
		}
		return 1
	})
}
