package algebra

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/grammar/source"
)

// Class is the temporal class of a relation.
type Class uint8

const (
	ClassEntity   Class = iota + 1 // entity relation: intervals of an entity's existence (and state)
	ClassEvent                     // event relation: one timestamp per tuple
	ClassInterval                  // interval relation: [from, to)
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

// IsEvent reports whether tuples of the class are events.
func (c Class) IsEvent() bool { return c == ClassEvent }

// Role is an attribute's part in a relationship, naming where enable flags
// live.
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

// Letter is the role's letter in an α variant name (P, I, T).
func (r Role) Letter() string {
	switch r {
	case RolePerformer:
		return "P"
	case RoleInitiator:
		return "I"
	case RoleTarget:
		return "T"
	}
	return "?"
}

// StrategyKind is how a sensor collects.
type StrategyKind uint8

const (
	NotSensed          StrategyKind = iota // no sensor of its own
	Traced                                 // T: a packet each time the sensor fires while enabled
	Sampled                                // S: the state is read at sampling instants
	TracedThenDisabled                     // D: traced, the flag's counter decremented at each firing
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
	return "none"
}

// Strategy is a relation's collection strategy: its α variant.
type Strategy struct {
	Kind    StrategyKind
	On      Role
	Counter int // bits of the enable counter
	// Whole: a traced interval relation whose sensor reports each tuple
	// once, whole, at its end (a kernel binding whose `to` clause binds
	// values: the begin's values wait in the kernel until the end). Such
	// an α's tuples arrive as late as they are long, so it is never "on
	// time" (exec gives it an unbounded MaxLate).
	Whole bool
}

// Variant is the α variant name, e.g. "T:P", "S:T", "D:T"; "" when the
// relation is not sensed.
func (s Strategy) Variant() string {
	var k string
	switch s.Kind {
	case Traced:
		k = "T"
	case Sampled:
		k = "S"
	case TracedThenDisabled:
		k = "D"
	default:
		return ""
	}
	return k + ":" + s.On.Letter()
}

func (s Strategy) String() string {
	if s.Kind == NotSensed {
		return "not sensed"
	}
	w := ""
	if s.Whole {
		w = ", reported whole"
	}
	return fmt.Sprintf("%s on %s counter %d%s", s.Kind, s.On, s.Counter, w)
}

// Attr is an explicit attribute of a relation.
type Attr struct {
	Name string
	Type Type
	Role Role
	Pos  source.Pos
}

// Relation is the schema of a primitive or derived relation.
type Relation struct {
	Name     string
	Class    Class
	Attrs    []Attr
	Strategy Strategy
	// FlagHolder is the index of the attribute whose entity holds the enable
	// flag, or -1.
	FlagHolder int
	// File and Pos locate the declaration (the spec, or the retrieve that
	// derived it); Src is File's text when known, so diagnostics at Pos
	// show their line.
	File string
	Pos  source.Pos
	Src  *source.File
	// Derived marks a relation produced by a retrieve.
	Derived bool
	// ClockN is set for Clock[n] (n ≥ 1); 0 for every other relation.
	ClockN int64
	// Builtin marks the observation relations, Observed and Lost
	// (observe.go): in every catalog, declared by none.
	Builtin bool
}

// AttrIndex returns the index of the named attribute, or -1.
func (r *Relation) AttrIndex(name string) int {
	for i, a := range r.Attrs {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// IsEvent reports whether the relation's tuples are events.
func (r *Relation) IsEvent() bool { return r.Class.IsEvent() }

// IsClock reports whether r is the built-in Clock (or Clock[n]).
func (r *Relation) IsClock() bool { return r.ClockN > 0 }

// Signature prints the relation as declared, e.g.
// "event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target) traced on initiator".
func (r *Relation) Signature() string {
	var b strings.Builder
	if r.Derived {
		b.WriteString("derived ")
	}
	fmt.Fprintf(&b, "%s relation %s(", r.Class, r.Name)
	for i, a := range r.Attrs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %s", a.Name, a.Type)
		if a.Role != RoleNone {
			b.WriteString(" " + a.Role.String())
		}
	}
	b.WriteString(")")
	if r.Strategy.Kind != NotSensed {
		fmt.Fprintf(&b, " %s on %s", r.Strategy.Kind, r.Strategy.On)
	}
	return b.String()
}

// HostAttr is the attribute a fleet's catalog adds, last, to every
// relation: the host a tuple came from (Catalog.Fleet).
const HostAttr = "Host"

// QualifyEntity is entity identifier id of host, in a fleet's catalog:
// HOST/ID. Host names cannot hold '/' (they are NATS tokens), so the
// first '/' splits it again (SplitEntity).
func QualifyEntity(host, id string) string { return host + "/" + id }

// SplitEntity splits a fleet's entity identifier into its host and the
// identifier the host knows it by; ok is false for one without a host.
func SplitEntity(q string) (host, id string, ok bool) {
	host, id, ok = strings.Cut(q, "/")
	return host, id, ok && host != ""
}

// DefaultClockPeriod is the base Clock period when a spec does not say.
const DefaultClockPeriod int64 = 1e9

// Catalog is what a monitor knows about a subject system: its entity types
// and primitive relations, compiled from a sensor description.
type Catalog struct {
	File        string
	EntityTypes []string
	Relations   []*Relation
	// ClockPeriod is the base Clock period in nanoseconds.
	ClockPeriod int64
	// Fleet marks a fleet's catalog (many hosts' residents, one monitor):
	// every relation's last attribute is HostAttr, a string naming the
	// host a tuple came from, and every entity identifier is qualified by
	// its host, HOST/ID (QualifyEntity), so that two hosts' P1 are two
	// entities. The monitor adds both to what residents send; residents
	// know neither (see remote.FleetCatalog).
	Fleet bool

	byName   map[string]*Relation
	types    map[string]bool
	entityR  map[string]*Relation
	builtins []*Relation
}

// NewCatalog makes an empty catalog with the default clock.
func NewCatalog(file string) *Catalog {
	c := &Catalog{
		File:        file,
		ClockPeriod: DefaultClockPeriod,
		byName:      map[string]*Relation{},
		types:       map[string]bool{},
		entityR:     map[string]*Relation{},
		builtins:    observationRelations(false),
	}
	for _, r := range c.builtins {
		c.byName[r.Name] = r
	}
	return c
}

// AddEntityType declares an entity type; it reports false if it exists.
func (c *Catalog) AddEntityType(name string) bool {
	if c.types[name] {
		return false
	}
	c.types[name] = true
	c.EntityTypes = append(c.EntityTypes, name)
	return true
}

// HasEntityType reports whether name is a declared entity type.
func (c *Catalog) HasEntityType(name string) bool { return c.types[name] }

// AddRelation adds r; it reports false if a relation of that name exists.
func (c *Catalog) AddRelation(r *Relation) bool {
	if _, dup := c.byName[r.Name]; dup {
		return false
	}
	c.byName[r.Name] = r
	c.Relations = append(c.Relations, r)
	if r.Class == ClassEntity && len(r.Attrs) > 0 && r.Attrs[0].Type.Kind == KindEntity {
		c.entityR[r.Attrs[0].Type.Entity] = r
	}
	return true
}

// Lookup returns the relation named name, or nil: a declared or derived
// relation, or a built-in one (Observed, Lost: see Builtins). Clock is not
// in the catalog: see ClockRelation.
func (c *Catalog) Lookup(name string) *Relation { return c.byName[name] }

// EntityRelation returns the entity relation of an entity type, or nil.
func (c *Catalog) EntityRelation(entityType string) *Relation { return c.entityR[entityType] }

// ClockRelation is the built-in event relation Clock[n]: no explicit
// attributes, a tick every n base periods.
func ClockRelation(n int64) *Relation {
	name := "Clock"
	if n != 1 {
		name = fmt.Sprintf("Clock[%d]", n)
	}
	return &Relation{Name: name, Class: ClassEvent, FlagHolder: -1, ClockN: n}
}

// Clone returns a copy of the catalog that can be extended (e.g. with derived
// relations) without changing c.
func (c *Catalog) Clone() *Catalog {
	d := NewCatalog(c.File)
	d.ClockPeriod = c.ClockPeriod
	d.Fleet = c.Fleet
	for _, t := range c.EntityTypes {
		d.AddEntityType(t)
	}
	for _, r := range c.Relations {
		d.AddRelation(r)
	}
	// The built-ins are the same relations: a history of c is one of d.
	d.builtins = c.builtins
	for _, r := range c.builtins {
		d.byName[r.Name] = r
	}
	return d
}
