package sdl

import "github.com/tqmon/tqmon/grammar/source"

// Pos is a place in the spec text.
type Pos = source.Pos

// Node is any node of a sensor-description syntax tree (sealed).
type Node interface {
	Pos() Pos
	node()
}

// File is one parsed sensor-description file.
type File struct {
	Name  string
	Stmts []Stmt
}

// Stmt is a top-level statement.
type Stmt interface {
	Node
	stmt()
}

// Ident is a name as written, with its place.
type Ident struct {
	At   Pos
	Name string
}

// EntityTypeDecl is `entity type A, B, C`.
type EntityTypeDecl struct {
	At    Pos // the `entity` keyword
	Names []*Ident
}

// Class is the temporal class of a declared relation.
type Class uint8

const (
	ClassEntity   Class = iota + 1 // entity relation (an interval relation of entity instances)
	ClassEvent                     // event relation
	ClassInterval                  // interval relation
)

func (c Class) String() string {
	switch c {
	case ClassEntity:
		return "entity"
	case ClassEvent:
		return "event"
	case ClassInterval:
		return "interval"
	}
	return "?"
}

// RelationDecl is `(entity|event|interval) relation Name(attr, …) [strategy]`.
type RelationDecl struct {
	At       Pos // the class keyword
	Class    Class
	Name     *Ident
	Attrs    []*Attr
	Strategy *Strategy // nil when absent
}

// Role is where an attribute stands in a relationship, for enable flags.
type Role uint8

const (
	RoleNone Role = iota
	RolePerformer
	RoleInitiator
	RoleTarget
)

func (r Role) String() string {
	switch r {
	case RolePerformer:
		return "performer"
	case RoleInitiator:
		return "initiator"
	case RoleTarget:
		return "target"
	}
	return ""
}

// Attr is `Name: Type [role]`.
type Attr struct {
	Name    *Ident
	Type    *TypeRef
	Role    Role
	RolePos Pos // zero when Role is RoleNone
}

// TypeRef is an attribute type as written: a builtin name (int, float,
// string, bool, time, duration), an entity type name, or an enum.
type TypeRef struct {
	At   Pos
	Name string   // "enum" for enumerations
	Enum []*Ident // members, for enums
}

// StrategyKind is how a relation's sensor collects.
type StrategyKind uint8

const (
	Traced StrategyKind = iota + 1
	Sampled
	TracedThenDisabled
)

func (k StrategyKind) String() string {
	switch k {
	case Traced:
		return "traced"
	case Sampled:
		return "sampled"
	case TracedThenDisabled:
		return "traced then disabled"
	}
	return "?"
}

// Strategy is `(traced | sampled | traced then disabled) on ROLE [counter N]`.
type Strategy struct {
	At         Pos // first keyword
	Kind       StrategyKind
	On         Role
	OnPos      Pos
	Counter    int64 // 0 when absent
	CounterPos Pos
}

// ClockDecl is `clock DURATION`.
type ClockDecl struct {
	At     Pos
	Text   string // as written, e.g. "10ms"
	Period int64  // nanoseconds
	ValPos Pos
}

func (x *Ident) Pos() Pos          { return x.At }
func (x *EntityTypeDecl) Pos() Pos { return x.At }
func (x *RelationDecl) Pos() Pos   { return x.At }
func (x *Attr) Pos() Pos           { return x.Name.At }
func (x *TypeRef) Pos() Pos        { return x.At }
func (x *Strategy) Pos() Pos       { return x.At }
func (x *ClockDecl) Pos() Pos      { return x.At }

func (*Ident) node()          {}
func (*EntityTypeDecl) node() {}
func (*RelationDecl) node()   {}
func (*Attr) node()           {}
func (*TypeRef) node()        {}
func (*Strategy) node()       {}
func (*ClockDecl) node()      {}

func (*EntityTypeDecl) stmt() {}
func (*RelationDecl) stmt()   {}
func (*ClockDecl) stmt()      {}
