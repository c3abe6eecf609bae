package spec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	dgram "github.com/tqmon/tqmon/grammar/display"
	"github.com/tqmon/tqmon/grammar/source"
)

// Shape, Side and LinkKind are the grammar's.
type (
	Shape    = dgram.Shape
	Side     = dgram.Side
	LinkKind = dgram.LinkKind
)

// The shapes, sides and relationship kinds.
const (
	Box    = dgram.Box
	Circle = dgram.Circle
	Oval   = dgram.Oval
	Text   = dgram.Text
	Point  = dgram.Point
	Line   = dgram.Line

	Left   = dgram.Left
	Center = dgram.Center
	Right  = dgram.Right

	Inside    = dgram.Inside
	Arrow     = dgram.Arrow
	Connector = dgram.Connector
)

// DefaultDecay is how long past states take to fade (animationtrace) and
// events stay visible when the spec does not say.
const DefaultDecay int64 = 2e9

// Spec is a checked display spec: plain data, every attribute resolved to
// its index in the relation's schema and every relationship to the icons
// it draws between.
type Spec struct {
	File string
	// Src is the text the spec was checked from (nil for a tree not made
	// by the parser): later diagnostics about the spec show its lines.
	Src *source.File
	// Icons, Links, Flashes and Plots are the display statements by
	// kind, each in the order written.
	Icons   []*Icon
	Links   []*Link
	Flashes []*Flash
	Plots   []*Plot
	// Trace is animationtrace: past states fade out over Decay
	// (nanoseconds of subject time). Under plain animation, events stay
	// visible for Decay.
	Trace bool
	Decay int64
	// Clock shows a digital clock; Timeline starts in the timeline view.
	Clock    bool
	Timeline bool
}

// Relations lists the relations the spec draws, each once, in the order
// they first appear.
func (s *Spec) Relations() []*algebra.Relation {
	var out []*algebra.Relation
	seen := map[string]bool{}
	add := func(r *algebra.Relation) {
		if !seen[r.Name] {
			seen[r.Name] = true
			out = append(out, r)
		}
	}
	for _, st := range s.stmts() {
		add(st)
	}
	return out
}

// stmts are the relations of the display statements in the order written.
func (s *Spec) stmts() []*algebra.Relation {
	type at struct {
		pos source.Pos
		rel *algebra.Relation
	}
	var all []at
	for _, x := range s.Icons {
		all = append(all, at{x.Pos, x.Rel})
	}
	for _, x := range s.Links {
		all = append(all, at{x.Pos, x.Rel})
	}
	for _, x := range s.Flashes {
		all = append(all, at{x.Pos, x.Rel})
	}
	for _, x := range s.Plots {
		all = append(all, at{x.Pos, x.Rel})
	}
	// Statements are one per line or more: insertion sort by place.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].pos.Before(all[j-1].pos); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	rels := make([]*algebra.Relation, len(all))
	for i, a := range all {
		rels[i] = a.rel
	}
	return rels
}

// Icon draws each tuple of Rel as an icon of its own, identified by its
// Key attribute's value: the tuples of one entity over time are one icon
// that changes.
type Icon struct {
	// Pos is the statement's place, RelPos its relation's.
	Pos, RelPos source.Pos
	Rel         *algebra.Relation
	Shape       Shape
	// Key is the identifying attribute: the first of an entity type, or
	// the first attribute.
	Key int
	// Label is the attribute written on the icon (the key by default).
	Label int
	// Shade and Colour are nil when the spec does not couple them.
	Shade  *Shade
	Colour *Colour
	// Order is the attribute icons are placed in order of (the key by
	// default), Desc descending.
	Order int
	Desc  bool
	Side  Side
}

// Shows reports whether the icon identifies entities of type t, so that a
// relationship over an attribute of type t is drawn between its icons.
func (ic *Icon) Shows(t algebra.Type) bool {
	return algebra.Identical(ic.Rel.Attrs[ic.Key].Type, t)
}

// Shade couples intensity to an attribute: mapped values get their
// percentage; without a map, enum members fall from 100% (the first) to
// 10% (the last), numbers are percentages themselves, true is 100% and
// false 30%. Values the map does not name are at 100%.
type Shade struct {
	Attr int
	Map  map[algebra.Value]int // nil: from the value
	// Members is the number of members of an enum attribute's type.
	Members int
}

// Percent is the intensity of a value, 0–100.
func (s *Shade) Percent(v algebra.Value) int {
	if s.Map != nil {
		if p, ok := s.Map[normal(v)]; ok {
			return p
		}
		return 100
	}
	switch v.K {
	case algebra.KindEnum:
		return 100 - int(min(v.N, int64(s.Members)))*90/max(1, s.Members-1)
	case algebra.KindInt, algebra.KindFloat:
		return int(max(0, min(100, v.F())))
	case algebra.KindBool:
		if v.B() {
			return 100
		}
		return 30
	}
	return 100
}

// Colour couples colour to an attribute: mapped values get their colour,
// the others one of a cycle of colours by enum ordinal or value.
type Colour struct {
	Attr int
	Map  map[algebra.Value]draw.Color // nil: a colour per value
}

// Of is the colour of a value.
func (c *Colour) Of(v algebra.Value) draw.Color {
	if c.Map != nil {
		if col, ok := c.Map[normal(v)]; ok {
			return col
		}
		return draw.Default
	}
	if v.K == algebra.KindEnum {
		return draw.Cycle(int(v.N))
	}
	h := uint32(2166136261)
	for _, b := range algebra.AppendKey(nil, normal(v)) {
		h = (h ^ uint32(b)) * 16777619
	}
	return draw.Cycle(int(h % 1024))
}

// Link draws each tuple of Rel as a relationship between the icons of the
// entities its From and To attributes name: inclusion (From's icon inside
// To's), an arrow from From to To, or a connecting line.
type Link struct {
	Pos, RelPos source.Pos
	Rel         *algebra.Relation
	Kind        LinkKind
	From, To    int // attribute indexes
	// FromIcon and ToIcon index Spec.Icons.
	FromIcon, ToIcon int
	Shade            *Shade
	Colour           *Colour
}

// Flash makes the icon of the entity Attr names flash (or blink) while a
// tuple of Rel is valid, and for For after each event.
type Flash struct {
	Pos, RelPos source.Pos
	Rel         *algebra.Relation
	Attr        int
	Icon        int // index into Spec.Icons
	Blink       bool
	For         int64
}

// DefaultPlotSpan is the time a plot spans when the spec does not say
// (`for DURATION`).
const DefaultPlotSpan int64 = 60e9

// MaxPlotSeries bounds the series one plot draws (a sparkline each): the
// first in their label's order; the plot's heading counts the others.
const MaxPlotSeries = 8

// Plot draws the numeric attribute Attr of Rel over the last Span of time
// as sparklines: one per value of the Series attribute (`label ATTR`), or
// one for the whole relation (Series -1). At each instant a series' value
// is that of its latest tuple valid then (an event counts at its
// instant); a column of the sparkline shows the greatest value in its
// span.
type Plot struct {
	Pos, RelPos source.Pos
	Rel         *algebra.Relation
	Attr        int
	Series      int
	Span        int64
	// Colour is nil when the spec does not colour the series.
	Colour *Colour
}

// normal makes equal values equal map keys (-0 and +0).
func normal(v algebra.Value) algebra.Value {
	if v.K == algebra.KindFloat && v.F() == 0 {
		return algebra.Float(0)
	}
	return v
}
