package scene

import (
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// layout is where the icons are: computed when the model changed in a way
// that moves icons, or the area changed.
type layout struct {
	area draw.Rect
	// hidden counts the icons that did not fit: taller than the area, or
	// in a column the width has no room for at all.
	hidden int
	// height is the rows the icons take from area.Y: more than area.H
	// when the columns had to grow taller than the area to fit the width
	// (the view scrolls over them; see Scene.ScrollRows).
	height int
}

// MinLane is the least number of columns kept free between two columns of
// icons, for arrows.
const MinLane = 4

// column is the icons of one side.
type column struct {
	sets  []*iconSet
	items []*Instance
	w     int // widest icon
	subs  [][]*Instance
	h     int // the height subs were packed into
}

// relayout places every icon: each side's icons in a column (sets in spec
// order, each set's icons in their order), one below the other with blank rows
// between when they fit, otherwise packed and wrapped into
// further columns; columns that cannot all fit the width keep fewer
// sub-columns, each taller than the area: the view scrolls over them
// (layout.height). Only a column the width has no room for at all, and
// icons taller than the area, are hidden.
func (s *Scene) relayout(area draw.Rect) {
	s.layouts++
	s.lay = layout{area: area}
	s.stale = false
	var cols [3]*column
	for i := range cols {
		cols[i] = &column{}
	}
	for _, set := range s.icons {
		c := cols[sideIndex(set.ic.Side)]
		c.sets = append(c.sets, set)
		c.w = max(c.w, set.width())
		for _, in := range set.order() {
			in.home = draw.Rect{}
			c.items = append(c.items, in)
		}
	}
	for _, c := range cols {
		c.pack(area.H, area.H)
	}
	packed := [3]int{len(cols[0].subs), len(cols[1].subs), len(cols[2].subs)}
	// Fit the width: 1 column margin each side, MinLane between columns.
	need := func() int {
		total, n := 2, 0
		for _, c := range cols {
			if k := len(c.subs); k > 0 {
				total += k*c.w + (k - 1)
				n++
			}
		}
		if n > 1 {
			total += (n - 1) * MinLane
		}
		return total
	}
	for need() > area.W {
		// Drop a sub-column of the column with the most; a lone column
		// that cannot fit goes whole, the center first.
		widest := -1
		for i, c := range cols {
			if len(c.subs) > 1 && (widest < 0 || len(c.subs) > len(cols[widest].subs)) {
				widest = i
			}
		}
		if widest < 0 {
			for _, i := range []int{1, 2, 0} {
				if len(cols[i].subs) > 0 {
					widest = i
					break
				}
			}
		}
		c := cols[widest]
		c.subs = c.subs[:len(c.subs)-1]
	}
	// A column left fewer sub-columns than it packed into at the area's
	// height is packed again into that many, as short as they can be.
	for i, c := range cols {
		if k := len(c.subs); k > 0 && k < packed[i] {
			c.packInto(k, area.H)
		}
	}
	for i, c := range cols {
		shown := 0
		for _, sub := range c.subs {
			shown += len(sub)
		}
		s.lay.hidden += len(c.items) - shown
		k := len(c.subs)
		if k == 0 {
			continue
		}
		blockW := k*c.w + (k - 1)
		var x0 int
		switch i {
		case 0:
			x0 = area.X + 1
		case 1:
			x0 = area.X + (area.W-blockW)/2
		case 2:
			x0 = area.Right() - 1 - blockW
		}
		for j, sub := range c.subs {
			sx := x0 + j*(c.w+1)
			gap := c.gap(c.h)
			y := area.Y
			for _, in := range sub {
				w, h := in.set.width(), in.set.height()
				x := sx
				switch i {
				case 1:
					x = sx + (c.w-w)/2
				case 2:
					x = sx + c.w - w
				}
				in.home = draw.Rect{X: x, Y: y, W: w, H: h}
				y += h + gap
			}
			s.lay.height = max(s.lay.height, y-gap-area.Y)
		}
	}
}

func sideIndex(s spec.Side) int {
	switch s {
	case spec.Center:
		return 1
	case spec.Right:
		return 2
	}
	return 0
}

// MaxGap is the most blank rows left between two icons of a column.
const MaxGap = 2

// gap is the blank rows between icons: as many as fit (up to MaxGap) with
// the column in one sub-column, else none.
func (c *column) gap(h int) int {
	for g := MaxGap; g > 0; g-- {
		if c.height(g) <= h {
			return g
		}
	}
	return 0
}

// height is the column's height in one sub-column with the given gap.
func (c *column) height(gap int) int {
	total := 0
	for i, in := range c.items {
		if i > 0 {
			total += gap
		}
		total += in.set.height()
	}
	return total
}

// pack splits the column into sub-columns no taller than h. Icons taller
// than limit are left out (hidden).
func (c *column) pack(h, limit int) {
	c.subs, c.h = nil, h
	gap := c.gap(h)
	var cur []*Instance
	used := 0
	for _, in := range c.items {
		ih := in.set.height()
		if ih > limit {
			continue
		}
		need := ih
		if len(cur) > 0 {
			need += gap
		}
		if used+need > h {
			c.subs = append(c.subs, cur)
			cur, used, need = nil, 0, ih
		}
		cur = append(cur, in)
		used += need
	}
	if len(cur) > 0 {
		c.subs = append(c.subs, cur)
	}
}

// packInto packs the column into at most k sub-columns (k ≥ 1), as short
// as they can be and at least h tall (icons taller than h are left out, as
// pack does). The number of sub-columns pack makes only falls as the
// height grows, so the least height is found by bisection: O(n log n) for
// n icons.
func (c *column) packInto(k, h int) {
	lo, hi := h, max(h, c.height(0)) // pack(hi) makes one sub-column
	for lo < hi {
		mid := lo + (hi-lo)/2
		c.pack(mid, h)
		if len(c.subs) <= k {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	c.pack(lo, h)
}
