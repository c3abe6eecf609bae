package display

import "github.com/tqmon/tqmon/grammar/source"

// Pos is a place in the spec text.
type Pos = source.Pos

// Node is any node of a display-spec syntax tree (sealed).
type Node interface {
	Pos() Pos
	node()
}

// File is one parsed display spec.
type File struct {
	Name  string
	Stmts []Stmt
	// Src is the parsed text (nil for a tree not made by Parse):
	// diagnostics made through it show their source line.
	Src *source.File
}

// Stmt is a top-level statement: *DisplayStmt, *TimeStmt or *ShowStmt.
type Stmt interface {
	Node
	stmt()
}

// Ident is a name as written, with its place.
type Ident struct {
	At   Pos
	Name string
}

// DisplayStmt is `display REL as REP aspect…`: how each tuple of the
// relation REL is drawn.
type DisplayStmt struct {
	At      Pos // the `display` keyword
	Rel     *Ident
	Rep     Rep
	Aspects []Aspect
}

// Rep is a representation: *IconRep, *LinkRep, *FlashRep or *PlotRep.
type Rep interface {
	Node
	rep()
}

// Shape is the icon of an IconRep.
type Shape uint8

const (
	Box Shape = iota + 1
	Circle
	Oval
	Text
	Point
	Line
)

func (s Shape) String() string {
	switch s {
	case Box:
		return "box"
	case Circle:
		return "circle"
	case Oval:
		return "oval"
	case Text:
		return "text"
	case Point:
		return "point"
	case Line:
		return "line"
	}
	return "?"
}

// IconRep draws each tuple as an icon of its own.
type IconRep struct {
	At    Pos
	Shape Shape
}

// LinkKind is how a relationship is drawn between two entities' icons.
type LinkKind uint8

const (
	Inside    LinkKind = iota + 1 // inclusion: From's icon drawn inside To's
	Arrow                         // a pointer from From's icon to To's
	Connector                     // a connecting line between them (`line from A to B`)
)

func (k LinkKind) String() string {
	switch k {
	case Inside:
		return "inside"
	case Arrow:
		return "arrow"
	case Connector:
		return "line"
	}
	return "?"
}

// LinkRep draws each tuple as a relationship between the icons of the
// entities named by two of its attributes: `inside (A, B)` (A's icon in
// B's), `arrow from A to B`, `line from A to B`.
type LinkRep struct {
	At       Pos
	Kind     LinkKind
	From, To *Ident
}

// FlashRep makes the icon of the entity an attribute names flash (or
// blink) while a tuple is valid or just after an event: `flash Process`.
type FlashRep struct {
	At    Pos
	Blink bool
	Attr  *Ident
}

// PlotRep draws a numeric attribute of the relation over time, one
// sparkline per series (per value of the label attribute): `plot Length`.
type PlotRep struct {
	At   Pos
	Attr *Ident
}

// Aspect is one aspect of a representation: *LabelAspect, *ShadeAspect,
// *ColourAspect, *OrderAspect, *AtAspect or *ForAspect.
type Aspect interface {
	Node
	aspect()
	// Keyword is the aspect's keyword, for messages.
	Keyword() string
}

// LabelAspect is `label ATTR`: the attribute's value is written on the icon.
type LabelAspect struct {
	At   Pos
	Attr *Ident
}

// Key is a value in a mapping, as written: a name (an enum member or
// entity), a string or a number.
type Key struct {
	At   Pos
	Kind KeyKind
	// Text is the name, the string's value (escapes resolved) or the
	// number as written.
	Text string
}

// KeyKind is how a Key is written.
type KeyKind uint8

const (
	KeyName KeyKind = iota + 1
	KeyString
	KeyNumber
)

// ShadeEntry is `KEY = N%`.
type ShadeEntry struct {
	Key     *Key
	Percent int // 0..100
	PctPos  Pos
}

// ShadeAspect is `shade ATTR [(KEY = N%, …)]`: the icon's intensity follows
// the attribute.
type ShadeAspect struct {
	At   Pos
	Attr *Ident
	Map  []*ShadeEntry // nil: intensity from the value itself
}

// ColourEntry is `KEY = COLOUR`.
type ColourEntry struct {
	Key    *Key
	Colour *Ident
}

// ColourAspect is `colour ATTR [(KEY = COLOUR, …)]` (also spelt `color`).
type ColourAspect struct {
	At   Pos
	Attr *Ident
	Map  []*ColourEntry // nil: a colour per value
}

// OrderAspect is `order by ATTR [asc | desc]`: icons of the relation are
// placed in the order of the attribute's values.
type OrderAspect struct {
	At   Pos
	Attr *Ident
	Desc bool
}

// Side is where a relation's icons stand on the screen.
type Side uint8

const (
	Left Side = iota + 1
	Center
	Right
)

func (s Side) String() string {
	switch s {
	case Left:
		return "left"
	case Center:
		return "center"
	case Right:
		return "right"
	}
	return "?"
}

// AtAspect is `at left | center | right`.
type AtAspect struct {
	At      Pos
	Side    Side
	SidePos Pos
}

// Duration is a duration literal: 5s, 1h30m, 1.5s.
type Duration struct {
	At   Pos
	Text string // as written
	NS   int64
}

// ForAspect is `for DURATION`: how long a flash lasts after an event, or
// the time a plot spans.
type ForAspect struct {
	At  Pos
	Dur *Duration
}

// TimeStmt is `time animation | animationtrace [decay DURATION]`.
type TimeStmt struct {
	At    Pos
	Trace bool // animationtrace
	// Decay is nil when absent.
	Decay *Duration
}

// ShowWhat is what a ShowStmt shows.
type ShowWhat uint8

const (
	ShowClock ShowWhat = iota + 1
	ShowTimeline
)

func (w ShowWhat) String() string {
	if w == ShowTimeline {
		return "timeline"
	}
	return "clock"
}

// ShowStmt is `show clock` (a digital clock) or `show timeline` (start in
// the timeline view).
type ShowStmt struct {
	At   Pos
	What ShowWhat
}

func (x *Ident) Pos() Pos        { return x.At }
func (x *DisplayStmt) Pos() Pos  { return x.At }
func (x *IconRep) Pos() Pos      { return x.At }
func (x *LinkRep) Pos() Pos      { return x.At }
func (x *FlashRep) Pos() Pos     { return x.At }
func (x *PlotRep) Pos() Pos      { return x.At }
func (x *LabelAspect) Pos() Pos  { return x.At }
func (x *ShadeAspect) Pos() Pos  { return x.At }
func (x *ColourAspect) Pos() Pos { return x.At }
func (x *OrderAspect) Pos() Pos  { return x.At }
func (x *AtAspect) Pos() Pos     { return x.At }
func (x *ForAspect) Pos() Pos    { return x.At }
func (x *Key) Pos() Pos          { return x.At }
func (x *Duration) Pos() Pos     { return x.At }
func (x *TimeStmt) Pos() Pos     { return x.At }
func (x *ShowStmt) Pos() Pos     { return x.At }

func (*Ident) node()        {}
func (*DisplayStmt) node()  {}
func (*IconRep) node()      {}
func (*LinkRep) node()      {}
func (*FlashRep) node()     {}
func (*PlotRep) node()      {}
func (*LabelAspect) node()  {}
func (*ShadeAspect) node()  {}
func (*ColourAspect) node() {}
func (*OrderAspect) node()  {}
func (*AtAspect) node()     {}
func (*ForAspect) node()    {}
func (*Key) node()          {}
func (*Duration) node()     {}
func (*TimeStmt) node()     {}
func (*ShowStmt) node()     {}

func (*DisplayStmt) stmt() {}
func (*TimeStmt) stmt()    {}
func (*ShowStmt) stmt()    {}

func (*IconRep) rep()  {}
func (*LinkRep) rep()  {}
func (*FlashRep) rep() {}
func (*PlotRep) rep()  {}

func (*LabelAspect) aspect()  {}
func (*ShadeAspect) aspect()  {}
func (*ColourAspect) aspect() {}
func (*OrderAspect) aspect()  {}
func (*AtAspect) aspect()     {}
func (*ForAspect) aspect()    {}

func (*LabelAspect) Keyword() string  { return "label" }
func (*ShadeAspect) Keyword() string  { return "shade" }
func (*ColourAspect) Keyword() string { return "colour" }
func (*OrderAspect) Keyword() string  { return "order by" }
func (*AtAspect) Keyword() string     { return "at" }
func (*ForAspect) Keyword() string    { return "for" }
