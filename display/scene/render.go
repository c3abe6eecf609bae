package scene

import (
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// Placed is an icon the last Draw put on the canvas.
type Placed struct {
	Rel  string
	Key  string
	Rect draw.Rect
	// Container marks a box that holds others; In is the index in
	// Placed() of the box a held icon is drawn in, or -1.
	Container bool
	In        int
	// Trace marks a past state (a fading copy).
	Trace bool
}

// Placed lists the icons of the last Draw: those in view, and those cut
// by its top or bottom edge (their Rect reaches past it; only the part in
// view is drawn).
func (s *Scene) Placed() []Placed { return s.placed }

// Hidden is the number of icons the last layout could not fit.
func (s *Scene) Hidden() int { return s.lay.hidden }

// ScrollRows moves the view over the icons n rows down (negative: up);
// page moves it by screens instead (a row of the last screen stays in
// view). It reports whether the view moved. The next Draw keeps the view
// within the icons.
func (s *Scene) ScrollRows(n int, page bool) bool {
	h := s.lay.area.H
	if page {
		n *= max(1, h-1)
	}
	top := max(0, min(s.top+n, s.lay.height-h))
	moved := top != s.top
	s.top = top
	return moved
}

// Scrolled is how many icons the last Draw left above the view and below
// it (wholly or partly out of it; an icon held in a box counts with its
// box, and one not drawn at all, gone with no trace left, not at all);
// both are 0 when every icon fits.
func (s *Scene) Scrolled() (above, below int) { return s.above, s.below }

// Icons is the number of icons in the model.
func (s *Scene) Icons() int {
	n := 0
	for _, set := range s.icons {
		n += len(set.byKey)
	}
	return n
}

// Draw draws the scene as it is at now into area of c: the time-dependent
// aspects are computed here; the layout only when stale or the area
// changed.
func (s *Scene) Draw(c draw.Canvas, area draw.Rect, now algebra.Time) {
	// Plots take the bottom rows; the icons the rest.
	ps, rows := s.plots(now, area.W, area.H)
	if rows > 0 {
		area.H -= rows
		defer drawPlots(c, draw.Rect{X: area.X, Y: area.Bottom(), W: area.W, H: rows}, ps,
			plotGeometry{labelX: area.X + 1, labelW: plotLabelW, value: true})
	}
	s.sweep(now)
	s.placeChildren()
	if s.stale || area != s.lay.area {
		s.relayout(area)
	}
	s.top = max(0, min(s.top, s.lay.height-area.H))
	s.above, s.below = 0, 0
	s.placed = s.placed[:0]
	// The layout's rows from top are drawn on the area's: everything is
	// drawn shifted up by top and clipped to the area, so that an icon
	// cut by an edge shows its part in view and an arrow to an icon out
	// of view runs to the edge (marked there, see arrows).
	d := &drawing{s: s, c: clip{c, area}, now: now, boxAt: map[*Instance]int{}, area: area, dy: s.top}
	for _, set := range s.icons {
		if set.container {
			for _, in := range set.order() {
				d.icon(in, d.shift(in.home), -1)
			}
		}
	}
	d.arrows()
	for _, set := range s.icons {
		if set.container {
			for _, in := range set.order() {
				d.children(in)
			}
			continue
		}
		for _, in := range set.order() {
			if p, inside := s.containerOf(set, in.Key); inside {
				// Held elsewhere: a trace of it where it was.
				if s.sp.Trace {
					if lvl, ok := s.fade(p.since, now); ok {
						d.trace(in, d.shift(in.home), lvl, -1)
					}
				}
				continue
			}
			d.icon(in, d.shift(in.home), -1)
		}
	}
}

// clip is a canvas drawing only inside area of another.
type clip struct {
	c    draw.Canvas
	area draw.Rect
}

func (k clip) Size() (int, int) { return k.c.Size() }

func (k clip) Set(x, y int, r rune, st draw.Style) {
	if x >= k.area.X && x < k.area.Right() && y >= k.area.Y && y < k.area.Bottom() {
		k.c.Set(x, y, r, st)
	}
}

// sweep forgets what has faded by now.
func (s *Scene) sweep(now algebra.Time) {
	for _, set := range s.icons {
		set.sweep(now)
	}
	for _, a := range s.arrows {
		a.sweep(now)
	}
	for _, f := range s.flashes {
		f.sweep(now)
	}
	for _, in := range s.insides {
		for k, g := range in.ghosts {
			if now-g.ended >= s.sp.Decay && now >= g.ended {
				delete(in.ghosts, k)
			}
		}
	}
}

// heldBy is where a held icon is: its container and since when.
type heldBy struct {
	parent *Instance
	since  algebra.Time
}

// containerOf is the container an icon is drawn in now, if any.
func (s *Scene) containerOf(set *iconSet, k algebra.Value) (heldBy, bool) {
	for _, in := range s.insides {
		if in.child != set {
			continue
		}
		ms := in.member[k]
		if len(ms) == 0 {
			continue
		}
		m := ms[len(ms)-1]
		if p := in.parent.byKey[m.parent]; p != nil {
			return heldBy{parent: p, since: m.t.From}, true
		}
	}
	return heldBy{}, false
}

// placeChildren gives each held icon a slot in its container: an icon
// keeps its slot while it stays; newcomers take the first free ones, in
// key order. A container that must hold more than ever before grows (and
// the layout is recomputed).
func (s *Scene) placeChildren() {
	want := map[*Instance][]childRef{}
	for _, in := range s.insides {
		for c, ms := range in.member {
			p := in.parent.byKey[ms[len(ms)-1].parent]
			if p != nil && in.child.byKey[c] != nil {
				want[p] = append(want[p], childRef{in.child, c})
			}
		}
	}
	for _, set := range s.icons {
		if !set.container {
			continue
		}
		for _, p := range set.byKey {
			refs := want[p]
			for i, r := range p.slots {
				if r.set != nil && !slices.Contains(refs, r) {
					p.slots[i] = childRef{}
				}
			}
			slices.SortFunc(refs, func(a, b childRef) int { return algebra.Compare(a.key, b.key) })
			for _, r := range refs {
				if slices.Contains(p.slots, r) {
					continue
				}
				if i := slices.Index(p.slots, childRef{}); i >= 0 {
					p.slots[i] = r
				} else {
					p.slots = append(p.slots, r)
				}
			}
			if n := len(p.slots); n > set.capacity {
				set.capacity = n
				s.stale = true
			}
		}
	}
}

// drawing is one Draw in progress.
type drawing struct {
	s     *Scene
	c     draw.Canvas
	now   algebra.Time
	boxAt map[*Instance]int // index in placed of each container drawn
	// area is the scene's area; dy the layout rows scrolled out above it.
	area draw.Rect
	dy   int
}

// shift is where a rect of the layout is on the screen, scrolled.
func (d *drawing) shift(r draw.Rect) draw.Rect {
	r.Y -= d.dy
	return r
}

// slotRect is where a container holds its i-th icon.
func slotRect(p *Instance, set *iconSet, i int) draw.Rect {
	return draw.Rect{X: p.home.X + 2, Y: p.home.Y + 1 + i, W: set.width(), H: 1}
}

// at is where an icon is drawn now: in its container's slot or at home;
// ok is false when it is nowhere.
func (s *Scene) at(set *iconSet, k algebra.Value) (draw.Rect, bool) {
	in := set.byKey[k]
	if in == nil {
		return draw.Rect{}, false
	}
	if p, held := s.containerOf(set, k); held {
		if i := slices.Index(p.parent.slots, childRef{set, k}); i >= 0 && p.parent.home.W > 0 {
			return slotRect(p.parent, set, i), true
		}
		return draw.Rect{}, false
	}
	return in.home, in.home.W > 0
}

// children draws what a container holds, and traces of what it held.
func (d *drawing) children(p *Instance) {
	if p.home.W == 0 || !d.shift(p.home).Overlaps(d.area) {
		return
	}
	box, ok := d.boxAt[p]
	if !ok {
		box = -1 // the box is not drawn (out of view, or gone)
	}
	for i, r := range p.slots {
		if r.set == nil {
			continue
		}
		if in := r.set.byKey[r.key]; in != nil {
			d.icon(in, d.shift(slotRect(p, r.set, i)), box)
		}
	}
	if !d.s.sp.Trace {
		return
	}
	for _, in := range d.s.insides {
		if in.parent != p.set {
			continue
		}
		keys := make([]algebra.Value, 0, len(in.ghosts))
		for k := range in.ghosts {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, algebra.Compare)
		for _, k := range keys {
			g := in.ghosts[k]
			if !algebra.Equal(g.parent, p.Key) || g.slot < 0 || g.slot >= len(p.slots) || p.slots[g.slot].set != nil {
				continue
			}
			child := in.child.byKey[k]
			lvl, ok := d.s.fade(g.ended, d.now)
			if child == nil || !ok {
				continue
			}
			d.trace(child, d.shift(slotRect(p, in.child, g.slot)), lvl, box)
		}
	}
}

// icon draws an icon at r as it is at now: its current state, or a trace
// of its last one, or nothing.
func (d *drawing) icon(in *Instance, r draw.Rect, box int) {
	if r.W == 0 {
		return
	}
	if !in.active(d.now) {
		if d.s.sp.Trace {
			if lvl, ok := d.s.fade(in.seen, d.now); ok {
				d.trace(in, r, lvl, box)
			}
		}
		return
	}
	frame, label := d.styles(in)
	d.shape(in, r, frame, label, box, false)
}

// trace draws a past state of an icon, faded to lvl (in the box at index
// box of the placed icons, or -1).
func (d *drawing) trace(in *Instance, r draw.Rect, lvl float64, box int) {
	if r.W == 0 {
		return
	}
	st := TraceStyle(lvl)
	d.shape(in, r, st, st, box, true)
}

// styles are an icon's frame and label styles now: colour, shade, flash.
func (d *drawing) styles(in *Instance) (frame, label draw.Style) {
	frame.Fg = in.colour
	label.Fg = in.colour
	if in.shade >= 0 {
		frame, label = ShadeStyles(in.set.ic.Shape, in.shade, frame)
	}
	for _, fs := range d.s.flashes {
		if fs.icons != in.set {
			continue
		}
		flashing, lit := fs.on(in.Key, d.now)
		switch {
		case !flashing:
		case fs.f.Blink:
			frame.Blink, label.Blink = true, true
		case lit:
			frame.Reverse, label.Reverse = true, true
			frame.Bold, label.Bold = true, true
		}
	}
	return frame, label
}

// ShadeStyles are the frame and label styles of an icon of a shape shaded
// to percent: a box's frame and label in a grey of that intensity, other
// shapes' labels on a grey background; frame is the style before shading.
func ShadeStyles(shape spec.Shape, percent int, frame draw.Style) (draw.Style, draw.Style) {
	lvl := float64(percent) / 100
	label := frame
	if shape == spec.Box {
		frame.Fg = draw.Gray(0.3 + 0.7*lvl)
		label.Fg = frame.Fg
		return frame, label
	}
	label.Bg = draw.Gray(0.1 + 0.85*lvl)
	label.Fg = draw.Palette(15)
	if percent >= 50 {
		label.Fg = draw.Palette(0)
	}
	return frame, label
}

// shape draws an icon's shape at r.
func (d *drawing) shape(in *Instance, r draw.Rect, frame, label draw.Style, box int, trace bool) {
	if box < 0 { // an icon of its own (one held is where its box is)
		switch {
		case r.Y < d.area.Y:
			d.s.above++
		case r.Bottom() > d.area.Bottom():
			d.s.below++
		}
	}
	if !r.Overlaps(d.area) {
		return // scrolled out of view
	}
	c := d.c
	set := in.set
	text := draw.Clip(in.label, set.labelW)
	pad := func(w int) string { // the label centred in w cells
		t := draw.Clip(in.label, w)
		left := (w - draw.Width(t)) / 2
		return strings.Repeat(" ", left) + t + strings.Repeat(" ", w-left-draw.Width(t))
	}
	switch set.ic.Shape {
	case spec.Box:
		draw.Frame(c, r, frame)
		if t := draw.Clip(in.label, r.W-4); t != "" {
			x := r.Right() - 2 - draw.Width(t)
			c.Set(x-1, r.Y, ' ', frame)
			draw.Text(c, x, r.Y, t, label)
			c.Set(x+draw.Width(t), r.Y, ' ', frame)
		}
	case spec.Circle:
		c.Set(r.X, r.Y, '(', frame)
		draw.Text(c, r.X+1, r.Y, pad(r.W-2), label)
		c.Set(r.Right()-1, r.Y, ')', frame)
	case spec.Oval:
		draw.Text(c, r.X, r.Y, "( ", frame)
		draw.Text(c, r.X+2, r.Y, pad(r.W-4), label)
		draw.Text(c, r.Right()-2, r.Y, " )", frame)
	case spec.Text:
		draw.Text(c, r.X, r.Y, pad(r.W), label)
	case spec.Point:
		draw.Text(c, r.X, r.Y, "• ", frame)
		draw.Text(c, r.X+2, r.Y, text, label)
	case spec.Line:
		draw.Text(c, r.X, r.Y, "── ", frame)
		draw.Text(c, r.X+3, r.Y, pad(r.W-6), label)
		draw.Text(c, r.Right()-3, r.Y, " ──", frame)
	}
	p := Placed{Rel: set.ic.Rel.Name, Key: in.Key.Format(algebra.TimeAuto), Rect: r,
		Container: set.container, In: box, Trace: trace}
	if set.container && !trace {
		d.boxAt[in] = len(d.s.placed)
	}
	d.s.placed = append(d.s.placed, p)
}
