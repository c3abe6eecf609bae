package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/display/timeline"
)

// span is a piece of a legend line in its style.
type span struct {
	text string
	st   draw.Style
}

// legendLine is one line of the legend: a sample drawn as the display
// draws it, then what it means.
type legendLine []span

func plain(s string) span { return span{s, draw.Style{}} }

// MaxLegendEntries bounds the values one mapping lists in the legend (the
// rest are counted).
const MaxLegendEntries = 6

// Legend is what the display's shading, colours, marks and trace copies
// mean under the present spec: for the animation or the timeline.
func (m *Model) Legend() []legendLine {
	sc := m.Scene
	sp := sc.Spec()
	var out []legendLine
	if m.timelineOn {
		lvl := legendLine{}
		for _, p := range []int{100, 60, 30, 10} {
			lvl = append(lvl, plain(strings.Repeat(string(timeline.ShadeRune(p)), 2)), plain(" "))
		}
		out = append(out, append(lvl, plain("state shaded ≥80%, ≥50%, ≥25%, less")))
		out = append(out, legendLine{plain("|  "), plain("an event    "), {"*", draw.Style{Bold: true}}, plain("  a flash")})
		out = append(out, legendLine{{"×", timeline.LossStyle()}, plain("  lost: packets missed in that span")})
	}
	for _, ic := range sp.Icons {
		if ic.Shade != nil {
			out = append(out, m.shadeLines(ic.Rel, ic.Shape, ic.Shade)...)
		}
		if ic.Colour != nil {
			out = append(out, m.colourLines(ic.Rel, ic.Colour, "██")...)
		}
	}
	if m.timelineOn {
		return append(out, plotLines(sp)...)
	}
	for _, l := range sp.Links {
		a, b := l.Rel.Attrs[l.From].Name, l.Rel.Attrs[l.To].Name
		switch l.Kind {
		case spec.Inside:
			out = append(out, legendLine{plain("[ ] "), plain(fmt.Sprintf("%s: %s drawn inside %s", l.Rel.Name, a, b))})
		case spec.Arrow:
			out = append(out, legendLine{plain("──> "), plain(fmt.Sprintf("%s: from %s to %s", l.Rel.Name, a, b))})
		default:
			out = append(out, legendLine{plain("─── "), plain(fmt.Sprintf("%s: between %s and %s", l.Rel.Name, a, b))})
		}
		if l.Shade != nil {
			out = append(out, m.shadeLines(l.Rel, spec.Box, l.Shade)...)
		}
		if l.Colour != nil {
			out = append(out, m.colourLines(l.Rel, l.Colour, "──>")...)
		}
	}
	for _, c := range sc.Crowded() {
		out = append(out, legendLine{{"──> ", draw.Style{Fg: c.Colour}},
			plain(c.Rel + ": no free lane, drawn in its own colour")})
	}
	for _, f := range sp.Flashes {
		st, how := draw.Style{Reverse: true, Bold: true}, "flashes"
		if f.Blink {
			st, how = draw.Style{Blink: true}, "blinks"
		}
		out = append(out, legendLine{{" icon ", st},
			plain(fmt.Sprintf(" %s %s: %s", f.Rel.Attrs[f.Attr].Name, how, f.Rel.Name))})
	}
	decay := algebra.FormatDuration(sp.Decay)
	if sp.Trace {
		out = append(out, legendLine{{"▓", scene.TraceStyle(1)}, {"▓", scene.TraceStyle(0.5)}, {"▓", scene.TraceStyle(0.25)},
			plain(" trace copies: past states and arrows, fading over " + decay)})
	} else {
		out = append(out, legendLine{plain("events stay drawn for " + decay)})
	}
	return append(out, plotLines(sp)...)
}

// plotLines explain the plots' sparklines.
func plotLines(sp *spec.Spec) []legendLine {
	var out []legendLine
	for _, p := range sp.Plots {
		out = append(out, legendLine{plain("▁▃▅█ "),
			plain(fmt.Sprintf("%s.%s: low to high over the plot's range", p.Rel.Name, p.Rel.Attrs[p.Attr].Name))})
	}
	return out
}

// shadeLines explain a shade aspect: each value's intensity, drawn as an
// icon of the shape would be.
func (m *Model) shadeLines(rel *algebra.Relation, shape spec.Shape, sh *spec.Shade) []legendLine {
	attr := rel.Attrs[sh.Attr]
	head := legendLine{plain(fmt.Sprintf("%s shaded by %s:", rel.Name, attr.Name))}
	type entry struct {
		v   algebra.Value
		pct int
	}
	var es []entry
	switch {
	case sh.Map != nil:
		for v, p := range sh.Map {
			es = append(es, entry{v, p})
		}
	case attr.Type.Kind == algebra.KindEnum && attr.Type.Enum != nil:
		for _, name := range attr.Type.Enum.Members {
			v, _ := attr.Type.Enum.Value(name)
			es = append(es, entry{v, sh.Percent(v)})
		}
	case attr.Type.Kind == algebra.KindBool:
		es = []entry{{algebra.Bool(true), 100}, {algebra.Bool(false), 30}}
	default:
		return []legendLine{append(head, plain(" the value is the intensity in %"))}
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := cmp.Compare(b.pct, a.pct); c != 0 {
			return c
		}
		return algebra.Compare(a.v, b.v)
	})
	line := legendLine{}
	for i, e := range es {
		if i == MaxLegendEntries {
			line = append(line, plain(fmt.Sprintf(" (+%d)", len(es)-i)))
			break
		}
		frame, label := scene.ShadeStyles(shape, e.pct, draw.Style{})
		st := label
		if shape == spec.Box {
			st = frame
		}
		line = append(line, span{" " + e.v.Format(m.timeFormat()) + " ", st}, plain(" "))
	}
	return []legendLine{head, line}
}

// colourLines explain a colour aspect: each mapped value's colour on a
// sample, or that each value has its own.
func (m *Model) colourLines(rel *algebra.Relation, c *spec.Colour, sample string) []legendLine {
	attr := rel.Attrs[c.Attr].Name
	if c.Map == nil {
		return []legendLine{{plain(fmt.Sprintf("%s coloured by %s: a colour per value", rel.Name, attr))}}
	}
	var vs []algebra.Value
	for v := range c.Map {
		vs = append(vs, v)
	}
	slices.SortFunc(vs, algebra.Compare)
	line := legendLine{plain(fmt.Sprintf("%s coloured by %s: ", rel.Name, attr))}
	for i, v := range vs {
		if i == MaxLegendEntries {
			line = append(line, plain(fmt.Sprintf(" (+%d)", len(vs)-i)))
			break
		}
		line = append(line, span{sample, draw.Style{Fg: c.Map[v]}}, plain(" "+v.Format(m.timeFormat())+"  "))
	}
	return []legendLine{line}
}

// drawLegend draws the legend in a box at the bottom right of the area,
// above the status line; lines that do not fit are cut.
func (m *Model) drawLegend(c draw.Canvas, w, h int) {
	lines := m.Legend()
	width := 0
	for _, l := range lines {
		n := 0
		for _, s := range l {
			n += draw.Width(s.text)
		}
		width = max(width, n)
	}
	bw := min(w, width+4)
	bh := min(h-2, len(lines)+2)
	if bw < 12 || bh < 3 {
		return
	}
	r := draw.Rect{X: w - bw, Y: h - 1 - bh, W: bw, H: bh}
	draw.Fill(c, r, ' ', draw.Style{})
	draw.Frame(c, r, draw.Style{Bold: true})
	draw.Text(c, r.X+2, r.Y, " legend (l closes) ", draw.Style{Bold: true})
	for i, l := range lines {
		y := r.Y + 1 + i
		if y >= r.Bottom()-1 {
			break
		}
		x, room := r.X+2, r.W-4
		for _, s := range l {
			t := draw.Clip(s.text, room)
			x = draw.Text(c, x, y, t, s.st)
			room -= draw.Width(t)
			if room <= 0 {
				break
			}
		}
	}
}
