package spec

import (
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/draw"
	dgram "github.com/tqmon/tqmon/grammar/display"
	"github.com/tqmon/tqmon/grammar/source"
)

// Schema is what a spec may display: relations by name, primitive and
// derived.
type Schema map[string]*algebra.Relation

// NewSchema is the schema of a catalog's relations and the named derived
// relations (the results of `retrieve NAME (...)`).
func NewSchema(cat *algebra.Catalog, derived ...*algebra.Relation) Schema {
	s := Schema{}
	for _, r := range cat.Relations {
		s[r.Name] = r
	}
	for _, r := range derived {
		if r != nil && r.Name != "" {
			s[r.Name] = r
		}
	}
	return s
}

// Load parses and checks a display spec; name is its file name in
// diagnostics.
func Load(name, text string, sc Schema) (*Spec, error) {
	f, err := dgram.Parse(name, text)
	if err != nil {
		return nil, err
	}
	return Check(f, sc)
}

// Check resolves a parsed spec against a schema. Every problem is reported
// at its place, as many as can be found: unknown relations and attributes
// (with a suggestion), unknown colours and enum members in mappings,
// aspects that do not fit their representation or are given twice,
// relationships between entities no icon shows, a second icon for one
// relation, a second time statement.
func Check(f *dgram.File, sc Schema) (*Spec, error) {
	c := &checker{file: f.Name, src: f.Src, sc: sc, sp: &Spec{File: f.Name, Src: f.Src, Decay: DefaultDecay}}
	var links []*dgram.DisplayStmt
	var flashes []*dgram.DisplayStmt
	// Icons first: relationships refer to them whatever the order.
	for _, st := range f.Stmts {
		switch x := st.(type) {
		case *dgram.DisplayStmt:
			switch x.Rep.(type) {
			case *dgram.IconRep:
				c.icon(x)
			case *dgram.LinkRep:
				links = append(links, x)
			case *dgram.FlashRep:
				flashes = append(flashes, x)
			case *dgram.PlotRep:
				c.plot(x)
			}
		case *dgram.TimeStmt:
			c.time(x)
		case *dgram.ShowStmt:
			c.show(x)
		}
	}
	for _, x := range links {
		c.link(x)
	}
	c.checkNesting()
	for _, x := range flashes {
		c.flash(x)
	}
	c.errs.Sort()
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	return c.sp, nil
}

type checker struct {
	file    string
	src     *source.File
	sc      Schema
	sp      *Spec
	errs    source.ErrorList
	timePos source.Pos
	shown   map[dgram.ShowWhat]source.Pos
	iconAt  map[string]source.Pos
	// failedKeys are the key types of icon statements with errors:
	// relationships to them are not reported again.
	failedKeys []algebra.Type
	// insidePos is where each inside statement stands, by Links index.
	insidePos map[int]source.Pos
}

func (c *checker) errorf(pos source.Pos, format string, args ...any) {
	c.errs.AddIn(c.src, c.file, pos, format, args...)
}

// relation resolves a display statement's relation.
func (c *checker) relation(id *dgram.Ident) *algebra.Relation {
	if r := c.sc[id.Name]; r != nil {
		return r
	}
	names := make([]string, 0, len(c.sc))
	for n := range c.sc {
		names = append(names, n)
	}
	c.errorf(id.At, "unknown relation %s%s", id.Name, suggest(id.Name, names))
	return nil
}

// attr resolves an attribute of rel, or returns -1 having reported it.
func (c *checker) attr(rel *algebra.Relation, id *dgram.Ident) int {
	if i := rel.AttrIndex(id.Name); i >= 0 {
		return i
	}
	names := make([]string, len(rel.Attrs))
	for i, a := range rel.Attrs {
		names[i] = a.Name
	}
	c.errorf(id.At, "%s has no attribute %s%s", rel.Name, id.Name, suggest(id.Name, names))
	return -1
}

// aspects reports aspects that do not apply to a representation (allowed
// lists those that do) or are given twice; it returns those that may be
// used.
func (c *checker) aspects(x *dgram.DisplayStmt, what string, allowed ...string) []dgram.Aspect {
	var out []dgram.Aspect
	seen := map[string]source.Pos{}
	for _, a := range x.Aspects {
		kw := a.Keyword()
		if !contains(allowed, kw) {
			if len(allowed) == 0 {
				c.errorf(a.Pos(), "%s does not apply to %s, which takes no aspects", kw, what)
			} else {
				c.errorf(a.Pos(), "%s does not apply to %s (it takes %s)", kw, what, strings.Join(allowed, ", "))
			}
			continue
		}
		if p, dup := seen[kw]; dup {
			c.errorf(a.Pos(), "%s is given twice (first at %s)", kw, p)
			continue
		}
		seen[kw] = a.Pos()
		out = append(out, a)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (c *checker) icon(x *dgram.DisplayStmt) {
	rep := x.Rep.(*dgram.IconRep)
	rel := c.relation(x.Rel)
	aspects := c.aspects(x, "an icon", "label", "shade", "colour", "order by", "at")
	if rel == nil {
		return
	}
	if c.iconAt == nil {
		c.iconAt = map[string]source.Pos{}
	}
	if p, dup := c.iconAt[rel.Name]; dup {
		c.errorf(x.Rel.At, "%s is already displayed as an icon (at %s)", rel.Name, p)
		return
	}
	c.iconAt[rel.Name] = x.Rel.At
	if len(rel.Attrs) == 0 {
		c.errorf(x.Rel.At, "%s has no attributes to tell its tuples apart", rel.Name)
		return
	}
	ic := &Icon{Pos: x.At, RelPos: x.Rel.At, Rel: rel, Shape: rep.Shape, Side: dgram.Left}
	for i, a := range rel.Attrs {
		if a.Type.Kind == algebra.KindEntity {
			ic.Key = i
			break
		}
	}
	ic.Label, ic.Order = ic.Key, ic.Key
	ok := true
	for _, a := range aspects {
		switch a := a.(type) {
		case *dgram.LabelAspect:
			if ic.Label = c.attr(rel, a.Attr); ic.Label < 0 {
				ok = false
			}
		case *dgram.ShadeAspect:
			if ic.Shade = c.shade(rel, a); ic.Shade == nil {
				ok = false
			}
		case *dgram.ColourAspect:
			if ic.Colour = c.colour(rel, a); ic.Colour == nil {
				ok = false
			}
		case *dgram.OrderAspect:
			if ic.Order = c.attr(rel, a.Attr); ic.Order < 0 {
				ok = false
			}
			ic.Desc = a.Desc
		case *dgram.AtAspect:
			ic.Side = a.Side
		}
	}
	if ok {
		c.sp.Icons = append(c.sp.Icons, ic)
	} else {
		c.failedKeys = append(c.failedKeys, rel.Attrs[ic.Key].Type)
	}
}

// shade resolves a shade aspect.
func (c *checker) shade(rel *algebra.Relation, a *dgram.ShadeAspect) *Shade {
	i := c.attr(rel, a.Attr)
	if i < 0 {
		return nil
	}
	t := rel.Attrs[i].Type
	s := &Shade{Attr: i}
	if t.Kind == algebra.KindEnum && t.Enum != nil {
		s.Members = len(t.Enum.Members)
	}
	if a.Map == nil {
		switch t.Kind {
		case algebra.KindEnum, algebra.KindInt, algebra.KindFloat, algebra.KindBool:
			return s
		}
		c.errorf(a.Attr.At, "shade %s needs a mapping such as (%s = 100%%, …): %s is %s, not an enum, number or bool",
			a.Attr.Name, "VALUE", a.Attr.Name, article(t.String()))
		return nil
	}
	m, ok := mapping(c, rel.Attrs[i], a.Map, func(e *dgram.ShadeEntry) (*dgram.Key, int, bool) {
		return e.Key, e.Percent, true
	})
	if !ok {
		return nil
	}
	s.Map = m
	return s
}

// colour resolves a colour aspect.
func (c *checker) colour(rel *algebra.Relation, a *dgram.ColourAspect) *Colour {
	i := c.attr(rel, a.Attr)
	if i < 0 {
		return nil
	}
	col := &Colour{Attr: i}
	if a.Map == nil {
		return col
	}
	m, ok := mapping(c, rel.Attrs[i], a.Map, func(e *dgram.ColourEntry) (*dgram.Key, draw.Color, bool) {
		named, known := draw.ColorNamed(e.Colour.Name)
		if !known {
			c.errorf(e.Colour.At, "unknown colour %s%s", e.Colour.Name, suggest(e.Colour.Name, draw.ColorNames()))
		}
		return e.Key, named, known
	})
	if !ok {
		return nil
	}
	col.Map = m
	return col
}

// mapping reads the entries of a value mapping: each key a value of the
// attribute, each value what entry says (which reports its own errors);
// a key mapped twice is an error.
func mapping[E any, V any](c *checker, a algebra.Attr, entries []E, entry func(E) (*dgram.Key, V, bool)) (map[algebra.Value]V, bool) {
	m := map[algebra.Value]V{}
	seen := map[algebra.Value]source.Pos{}
	ok := true
	for _, e := range entries {
		k, val, good := entry(e)
		v, known := c.value(a, k)
		if !good || !known {
			ok = false
			continue
		}
		if p, dup := seen[v]; dup {
			c.errorf(k.At, "%s is mapped twice (first at %s)", k.Text, p)
			ok = false
			continue
		}
		seen[v] = k.At
		m[v] = val
	}
	return m, ok
}

// value reads a mapping key as a value of the attribute's type.
func (c *checker) value(a algebra.Attr, k *dgram.Key) (algebra.Value, bool) {
	t := a.Type
	switch t.Kind {
	case algebra.KindEnum:
		if k.Kind != dgram.KeyNumber && t.Enum != nil {
			if v, ok := t.Enum.Value(k.Text); ok {
				return v, true
			}
			c.errorf(k.At, "%s is not a member of %s's type %s%s", k.Text, a.Name, t, suggest(k.Text, t.Enum.Members))
			return algebra.Value{}, false
		}
	case algebra.KindEntity:
		return algebra.Entity(k.Text), true
	case algebra.KindString:
		if k.Kind != dgram.KeyNumber {
			return algebra.Str(k.Text), true
		}
	case algebra.KindInt:
		if k.Kind == dgram.KeyNumber {
			if n, err := strconv.ParseInt(k.Text, 10, 64); err == nil {
				return algebra.Int(n), true
			}
		}
	case algebra.KindFloat:
		if k.Kind == dgram.KeyNumber {
			if f, err := strconv.ParseFloat(k.Text, 64); err == nil {
				return normal(algebra.Float(f)), true
			}
		}
	case algebra.KindBool:
		if k.Kind == dgram.KeyName {
			switch strings.ToLower(k.Text) {
			case "true":
				return algebra.Bool(true), true
			case "false":
				return algebra.Bool(false), true
			}
		}
	}
	c.errorf(k.At, "%s is not a value of %s, which is %s", k.Text, a.Name, article(t.String()))
	return algebra.Value{}, false
}

// endpoint resolves a relationship's attribute to the icon that shows its
// entities, or returns -1 having reported the problem.
func (c *checker) endpoint(rel *algebra.Relation, id *dgram.Ident) (attr, icon int) {
	attr = c.attr(rel, id)
	if attr < 0 {
		return -1, -1
	}
	t := rel.Attrs[attr].Type
	for i, ic := range c.sp.Icons {
		if ic.Shows(t) {
			return attr, i
		}
	}
	for _, ft := range c.failedKeys {
		if algebra.Identical(ft, t) {
			return attr, -1 // that icon statement has errors of its own
		}
	}
	if t.Kind == algebra.KindEntity {
		c.errorf(id.At, "no icon shows %s entities: display a relation of them as box, circle, oval, text, point or line", t.Entity)
	} else {
		c.errorf(id.At, "no icon is identified by %s values like %s.%s: display a relation keyed by one as an icon", t, rel.Name, id.Name)
	}
	return attr, -1
}

func (c *checker) link(x *dgram.DisplayStmt) {
	rep := x.Rep.(*dgram.LinkRep)
	rel := c.relation(x.Rel)
	var aspects []dgram.Aspect
	if rep.Kind == dgram.Inside {
		aspects = c.aspects(x, "inside")
	} else {
		aspects = c.aspects(x, article(rep.Kind.String()), "shade", "colour")
	}
	if rel == nil {
		return
	}
	l := &Link{Pos: x.At, RelPos: x.Rel.At, Rel: rel, Kind: rep.Kind}
	var ok1, ok2 bool
	l.From, l.FromIcon = c.endpoint(rel, rep.From)
	l.To, l.ToIcon = c.endpoint(rel, rep.To)
	ok1, ok2 = l.FromIcon >= 0, l.ToIcon >= 0
	ok := ok1 && ok2
	if ok && rep.Kind == dgram.Inside {
		from, to := c.sp.Icons[l.FromIcon], c.sp.Icons[l.ToIcon]
		switch {
		case l.FromIcon == l.ToIcon:
			c.errorf(rep.To.At, "inside: %s and %s are both drawn by the icons of %s; an icon cannot contain its own kind", rep.From.Name, rep.To.Name, from.Rel.Name)
			ok = false
		case to.Shape != dgram.Box:
			c.errorf(rep.To.At, "inside: %s is drawn as %s; only a box can contain icons", to.Rel.Name, article(to.Shape.String()))
			ok = false
		}
	}
	for _, a := range aspects {
		switch a := a.(type) {
		case *dgram.ShadeAspect:
			if l.Shade = c.shade(rel, a); l.Shade == nil {
				ok = false
			}
		case *dgram.ColourAspect:
			if l.Colour = c.colour(rel, a); l.Colour == nil {
				ok = false
			}
		}
	}
	if ok {
		if rep.Kind == dgram.Inside {
			if c.insidePos == nil {
				c.insidePos = map[int]source.Pos{}
			}
			c.insidePos[len(c.sp.Links)] = x.At
		}
		c.sp.Links = append(c.sp.Links, l)
	}
}

// checkNesting: an icon that contains others is not itself contained
// (inclusion nests one level).
func (c *checker) checkNesting() {
	contained := map[int]bool{}
	for _, l := range c.sp.Links {
		if l.Kind == dgram.Inside {
			contained[l.FromIcon] = true
		}
	}
	keep := c.sp.Links[:0]
	for i, l := range c.sp.Links {
		if l.Kind == dgram.Inside && contained[l.ToIcon] {
			c.errorf(c.insidePos[i], "inside: %s icons are themselves drawn inside others; inclusion nests one level", c.sp.Icons[l.ToIcon].Rel.Name)
			continue
		}
		keep = append(keep, l)
	}
	c.sp.Links = keep
}

func (c *checker) flash(x *dgram.DisplayStmt) {
	rep := x.Rep.(*dgram.FlashRep)
	rel := c.relation(x.Rel)
	what := "flash"
	if rep.Blink {
		what = "blink"
	}
	aspects := c.aspects(x, what, "for")
	if rel == nil {
		return
	}
	fl := &Flash{Pos: x.At, RelPos: x.Rel.At, Rel: rel, Blink: rep.Blink, For: c.sp.Decay}
	var icon int
	fl.Attr, icon = c.endpoint(rel, rep.Attr)
	for _, a := range aspects {
		if f, ok := a.(*dgram.ForAspect); ok {
			fl.For = f.Dur.NS
		}
	}
	if icon >= 0 {
		fl.Icon = icon
		c.sp.Flashes = append(c.sp.Flashes, fl)
	}
}

// plot resolves a plot: its attribute must be a number.
func (c *checker) plot(x *dgram.DisplayStmt) {
	rep := x.Rep.(*dgram.PlotRep)
	rel := c.relation(x.Rel)
	aspects := c.aspects(x, "a plot", "label", "colour", "for")
	if rel == nil {
		return
	}
	p := &Plot{Pos: x.At, RelPos: x.Rel.At, Rel: rel, Series: -1, Span: DefaultPlotSpan}
	ok := true
	if p.Attr = c.attr(rel, rep.Attr); p.Attr < 0 {
		ok = false
	} else if t := rel.Attrs[p.Attr].Type; t.Kind != algebra.KindInt && t.Kind != algebra.KindFloat {
		c.errorf(rep.Attr.At, "plot %s: a plot draws a number, and %s is %s", rep.Attr.Name, rep.Attr.Name, article(t.String()))
		ok = false
	}
	for _, a := range aspects {
		switch a := a.(type) {
		case *dgram.LabelAspect:
			if p.Series = c.attr(rel, a.Attr); p.Series < 0 {
				ok = false
			}
		case *dgram.ColourAspect:
			if p.Colour = c.colour(rel, a); p.Colour == nil {
				ok = false
			}
		case *dgram.ForAspect:
			p.Span = a.Dur.NS
		}
	}
	if ok {
		c.sp.Plots = append(c.sp.Plots, p)
	}
}

func (c *checker) time(x *dgram.TimeStmt) {
	if c.timePos.IsValid() {
		c.errorf(x.At, "the time representation is already given (at %s)", c.timePos)
		return
	}
	c.timePos = x.At
	c.sp.Trace = x.Trace
	if x.Decay != nil {
		c.sp.Decay = x.Decay.NS
	}
}

func (c *checker) show(x *dgram.ShowStmt) {
	if c.shown == nil {
		c.shown = map[dgram.ShowWhat]source.Pos{}
	}
	if p, dup := c.shown[x.What]; dup {
		c.errorf(x.At, "show %s is already given (at %s)", x.What, p)
		return
	}
	c.shown[x.What] = x.At
	switch x.What {
	case dgram.ShowClock:
		c.sp.Clock = true
	case dgram.ShowTimeline:
		c.sp.Timeline = true
	}
}

// suggest is source.Suggest.
func suggest(name string, cands []string) string { return source.Suggest(name, cands) }

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}
