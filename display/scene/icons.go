package scene

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	"github.com/tqmon/tqmon/display/spec"
)

// iconSet is an icon statement's part of the model: one Instance per key
// value (per entity).
type iconSet struct {
	sc    *Scene
	ic    *spec.Icon
	idx   int
	byKey map[algebra.Value]*Instance
	// labelW is the widest label so far: icons of a set share a width,
	// which only grows (so icons do not jump as labels change).
	labelW int
	// container: the set's icons hold others (inside); childSets are the
	// sets of the icons they hold, capacity the most they have held at
	// once (at least 1), which only grows.
	container bool
	childSets []*iconSet
	capacity  int
	// ordered lists the instances in layout order; nil when stale.
	ordered []*Instance
}

// Instance is one icon: the tuples of one key value.
type Instance struct {
	set *iconSet
	Key algebra.Value
	// open are the key's open tuples, the latest last; last is the tuple
	// the attribute-dependent aspects come from (it may have ended).
	open []*Tuple
	last *Tuple
	// seen is when the instance was last valid: the end of its last
	// tuple, or its last event (events of an event relation are shown
	// for the decay).
	seen algebra.Time

	// Attribute-dependent aspects, computed from last.
	label  string
	shade  int // percent; -1 when the spec couples none
	colour draw.Color

	// home is where the layout put the icon (zero size when it did not
	// fit); slots are a container's children, a zero childRef for a free
	// slot.
	home  draw.Rect
	slots []childRef
}

// childRef names an icon held in a container's slot.
type childRef struct {
	set *iconSet
	key algebra.Value
}

// active reports whether the icon shows a current state at now.
func (in *Instance) active(now algebra.Time) bool {
	if len(in.open) > 0 {
		return true
	}
	return in.last != nil && in.last.Event && now-in.seen < in.set.sc.sp.Decay && now >= in.seen
}

func (set *iconSet) key(t *Tuple) algebra.Value { return t.Vals[set.ic.Key] }

func (set *iconSet) get(k algebra.Value) *Instance {
	in := set.byKey[k]
	if in == nil {
		in = &Instance{set: set, Key: k, shade: -1}
		set.byKey[k] = in
		set.ordered = nil
		set.sc.stale = true
	}
	return in
}

func (set *iconSet) begin(t *Tuple) {
	in := set.get(set.key(t))
	in.open = append(in.open, t)
	set.aspects(in, t)
}

func (set *iconSet) end(t *Tuple) {
	in := set.byKey[set.key(t)]
	if in == nil {
		return
	}
	if i := slices.Index(in.open, t); i >= 0 {
		in.open = slices.Delete(in.open, i, i+1)
	}
	in.seen = max(in.seen, t.To)
	if n := len(in.open); n > 0 {
		set.aspects(in, in.open[n-1])
	}
}

func (set *iconSet) event(t *Tuple) {
	in := set.get(set.key(t))
	in.seen = max(in.seen, t.From)
	set.aspects(in, t)
}

// aspects recomputes an icon's attribute-dependent aspects from a tuple,
// marking the layout stale if the icon must move or grow.
func (set *iconSet) aspects(in *Instance, t *Tuple) {
	prev := in.last
	in.last = t
	ic := set.ic
	in.label = t.Vals[ic.Label].Format(set.sc.tf)
	if w := draw.Width(in.label); w > set.labelW {
		set.labelW = w
		set.sc.stale = true
	}
	if ic.Shade != nil {
		in.shade = ic.Shade.Percent(t.Vals[ic.Shade.Attr])
	}
	if ic.Colour != nil {
		in.colour = ic.Colour.Of(t.Vals[ic.Colour.Attr])
	}
	if ic.Order != ic.Key && (prev == nil || !algebra.Equal(prev.Vals[ic.Order], t.Vals[ic.Order])) {
		set.ordered = nil
		set.sc.stale = true
	}
}

// sweep forgets the icons whose last state has faded by now (under plain
// animation too, so that an icon that ends and begins again between two
// frames keeps its place).
func (set *iconSet) sweep(now algebra.Time) {
	for k, in := range set.byKey {
		if len(in.open) == 0 && now-in.seen >= set.sc.sp.Decay && now >= in.seen {
			delete(set.byKey, k)
			set.ordered = nil
			set.sc.stale = true
		}
	}
}

// order lists the instances in layout order: by the order attribute (of
// their latest tuple), then key.
func (set *iconSet) order() []*Instance {
	if set.ordered != nil {
		return set.ordered
	}
	list := make([]*Instance, 0, len(set.byKey))
	for _, in := range set.byKey {
		list = append(list, in)
	}
	oi, desc := set.ic.Order, set.ic.Desc
	slices.SortFunc(list, func(a, b *Instance) int {
		c := algebra.Compare(a.last.Vals[oi], b.last.Vals[oi])
		if desc {
			c = -c
		}
		if c == 0 {
			c = algebra.Compare(a.Key, b.Key)
		}
		return c
	})
	set.ordered = list
	return list
}

// width is the width of the set's icons (not counting what boxes hold).
func (set *iconSet) width() int {
	w := set.labelW
	switch set.ic.Shape {
	case spec.Box:
		w = max(w+4, set.childWidth()+4)
	case spec.Circle:
		w += 2
	case spec.Oval:
		w += 4
	case spec.Point:
		w += 2
	case spec.Line:
		w += 6
	}
	return max(w, 1)
}

// childWidth is the width of the widest icon the set's boxes hold.
func (set *iconSet) childWidth() int {
	w := 0
	for _, c := range set.childSets {
		w = max(w, c.width())
	}
	return w
}

// height is the height of the set's icons.
func (set *iconSet) height() int {
	if set.ic.Shape == spec.Box {
		return 2 + max(1, set.capacity)
	}
	return 1
}
