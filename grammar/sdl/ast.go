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
	// Src is the parsed text (nil for a tree not made by Parse):
	// diagnostics made through it show their source line.
	Src *source.File
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

// SensorDecl is a sensor binding: where a relation's sensor lives and how
// its attributes are read there.
//
//	sensor Name at PROBE (binds) [key E] [when C]
//	sensor Name from PROBE (binds) [key E] [when C] to PROBE [(binds)] [key E] [when C]
//
// `at` binds an event (or, for a uprobe on an interval relation, the call
// from entry to return); `from … to …` binds an interval from the first
// probe to the second.
type SensorDecl struct {
	At   Pos // the `sensor` keyword
	Name *Ident
	From *ProbeClause // the `at` or `from` clause
	To   *ProbeClause // the `to` clause; nil for `at`
}

// ProbeKind is the kind of place a sensor is attached to.
type ProbeKind uint8

const (
	ProbeTracepoint ProbeKind = iota + 1 // a kernel tracepoint (group:event)
	ProbeUprobe                          // a function's entry in an executable
	ProbeUretprobe                       // a function's return in an executable
)

func (k ProbeKind) String() string {
	switch k {
	case ProbeTracepoint:
		return "tracepoint"
	case ProbeUprobe:
		return "uprobe"
	case ProbeUretprobe:
		return "uretprobe"
	}
	return "?"
}

// Probe is `tracepoint GROUP:EVENT` or `(uprobe|uretprobe) "PATH" "SYMBOL"`.
type Probe struct {
	At    Pos // the kind keyword
	Kind  ProbeKind
	Group *Ident // tracepoints
	Event *Ident
	// Path and Symbol, for uprobes, with the places of their strings.
	Path, Symbol       string
	PathPos, SymbolPos Pos
}

// ProbeClause is a probe with the attributes it fills, the key pairing an
// interval's ends (nil: the default) and its firing conditions (all must
// hold).
type ProbeClause struct {
	Probe  *Probe
	Binds  []*Bind
	Key    BExpr
	KeyPos Pos // the `key` keyword
	Conds  []*Cond
}

// Bind is `Attr = value`.
type Bind struct {
	Name  *Ident
	Value BExpr
}

// BExpr is a value read at a probe (sealed): *BRef, *BCall, *BNum, *BMask.
type BExpr interface {
	Node
	bexpr()
}

// BRef is a name or a path through kernel structures: pid, arg1.tgid.
type BRef struct {
	Path []*Ident
}

// BCall is a conversion: syscall(arg1), user_string(arg0).
type BCall struct {
	Func *Ident
	Arg  BExpr
}

// BNum is a non-negative integer constant.
type BNum struct {
	At    Pos
	Text  string
	Value uint64
}

// BMask is `X & Mask`.
type BMask struct {
	X    BExpr
	Mask *BNum
}

// CondOp is a firing condition's comparison.
type CondOp uint8

const (
	CondEq CondOp = iota + 1
	CondNe
	CondLt
	CondLe
	CondGt
	CondGe
	CondIn
)

var condOpText = [...]string{CondEq: "=", CondNe: "!=", CondLt: "<", CondLe: "<=", CondGt: ">", CondGe: ">=", CondIn: "in"}

func (o CondOp) String() string {
	if int(o) < len(condOpText) && condOpText[o] != "" {
		return condOpText[o]
	}
	return "?"
}

// Cond is `X op N` or `X in (N, …)`.
type Cond struct {
	X      BExpr
	Op     CondOp
	OpPos  Pos
	Values []*BNum // one, except for CondIn
}

func (x *SensorDecl) Pos() Pos  { return x.At }
func (x *Probe) Pos() Pos       { return x.At }
func (x *ProbeClause) Pos() Pos { return x.Probe.At }
func (x *Bind) Pos() Pos        { return x.Name.At }
func (x *BRef) Pos() Pos        { return x.Path[0].At }
func (x *BCall) Pos() Pos       { return x.Func.At }
func (x *BNum) Pos() Pos        { return x.At }
func (x *BMask) Pos() Pos       { return x.X.Pos() }
func (x *Cond) Pos() Pos        { return x.X.Pos() }

func (*SensorDecl) node()  {}
func (*Probe) node()       {}
func (*ProbeClause) node() {}
func (*Bind) node()        {}
func (*BRef) node()        {}
func (*BCall) node()       {}
func (*BNum) node()        {}
func (*BMask) node()       {}
func (*Cond) node()        {}

func (*SensorDecl) stmt() {}

func (*BRef) bexpr()  {}
func (*BCall) bexpr() {}
func (*BNum) bexpr()  {}
func (*BMask) bexpr() {}
