package plan

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Alpha is α^{variant}_{Var}(Enable[, When[, Who]]): it stands for the
// primitive relation of a sensed relation, and its output is the tuples the
// sensor produces while enabled. Enable is a relation of flag holders (one
// attribute, of the flag holder's entity type): while an entity is in it the
// sensor's enable flag for that entity is set (flags are counters). For the
// sampled variants, When (an event relation, Clock by default) says when to
// sample, and for S:T, Who says which performers are asked to.
//
// The variant comes from the relation's strategy: T:P, T:I, T:T (traced),
// S:P, S:T (sampled), D:P, D:I, D:T (traced, then disabled by the sensor
// after each packet and re-armed by the monitor while Enable still holds
// the entity).
type Alpha struct {
	Var     int
	VarName string
	Rel     *algebra.Relation
	Enable  Node
	When    Node // sampled variants only
	Who     Node // S:T only, when the relation has a performer
	// Keep lists the attributes the plan uses (nil: all): packets need
	// carry only these; the flag holder is always among them.
	Keep []int
	// Restricted names the join restrictions already applied to Enable (by
	// the rewriter), so a rule does not apply one twice.
	Restricted []string
	// Exists marks the variable existential in its block, as for Scan.
	Exists bool
	// Hosts, in a fleet (algebra.Catalog.Fleet), are the hosts the α is
	// placed on, sorted (nil: every host that has the relation): the
	// rewriter's host placement (rewrite: alpha hosts) from a selection
	// Host = "web-3" over it. The others are not asked to enable its
	// sensor; the selection stays and keeps the result exact.
	Hosts []string
}

// Variant is the α variant, e.g. "T:I".
func (a *Alpha) Variant() string { return a.Rel.Strategy.Variant() }

// Sampled reports whether the α samples (S:P, S:T).
func (a *Alpha) Sampled() bool { return a.Rel.Strategy.Kind == algebra.Sampled }

// EntitySource is the identifiers of an entity relation, valid while each
// entity exists: π_id(R) for an entity relation R, always enabled.
type EntitySource struct {
	Rel *algebra.Relation
}

// AllOf is every entity of a type, at all times: the enable argument when
// the type has no entity relation to serve as a source (the sensor is
// enabled for everyone).
type AllOf struct {
	Type algebra.Type
}

// Const is a constant entity relation: the given identifiers, valid over
// all time.
type Const struct {
	Type algebra.Type
	Vals []algebra.Value
}

// Empty is the empty entity relation of a type.
type Empty struct {
	Type algebra.Type
}

// ClockSrc is Clock[N] used as a relation argument (when to sample).
type ClockSrc struct {
	N int64
}

// SelectEntity is σ[Pred](In) over an entity relation: Pred mentions the
// relation's single attribute as column 1 (expr.Col with Var 0, Attr 0).
type SelectEntity struct {
	Pred expr.Expr
	In   Node
}

func (n *Alpha) Children() []Node {
	kids := []Node{n.Enable}
	if n.When != nil {
		kids = append(kids, n.When)
	}
	if n.Who != nil {
		kids = append(kids, n.Who)
	}
	return kids
}
func (*EntitySource) Children() []Node   { return nil }
func (*AllOf) Children() []Node          { return nil }
func (*Const) Children() []Node          { return nil }
func (*Empty) Children() []Node          { return nil }
func (*ClockSrc) Children() []Node       { return nil }
func (n *SelectEntity) Children() []Node { return []Node{n.In} }

func (*Alpha) node()        {}
func (*EntitySource) node() {}
func (*AllOf) node()        {}
func (*Const) node()        {}
func (*Empty) node()        {}
func (*ClockSrc) node()     {}
func (*SelectEntity) node() {}

func (n *Alpha) Label() string {
	l := fmt.Sprintf("α[%s] %s", n.Variant(), n.VarName)
	if n.Keep != nil {
		names := make([]string, len(n.Keep))
		for i, a := range n.Keep {
			names[i] = n.Rel.Attrs[a].Name
		}
		l += "{" + strings.Join(names, ", ") + "}"
	}
	switch {
	case n.Hosts == nil:
	case len(n.Hosts) == 0:
		l += " @none"
	default:
		l += " @" + strings.Join(n.Hosts, ",")
	}
	return l
}
func (n *EntitySource) Label() string { return n.Rel.Name }
func (n *AllOf) Label() string        { return "all " + n.Type.String() }
func (n *Const) Label() string {
	parts := make([]string, len(n.Vals))
	for i, v := range n.Vals {
		parts[i] = v.Format(algebra.TimeAuto)
	}
	return strings.Join(parts, ", ")
}
func (n *Empty) Label() string { return "∅" }
func (n *ClockSrc) Label() string {
	if n.N == 1 {
		return "Clock"
	}
	return fmt.Sprintf("Clock[%d]", n.N)
}
func (n *SelectEntity) Label() string { return "σ[" + n.Pred.String() + "]" }

// EntityType is the type of the identifiers an entity-relation node yields
// (EntitySource, AllOf, Const, Empty, SelectEntity, SetOp, or a block whose
// single target is entity-typed); ok is false for other nodes.
func EntityType(n Node) (algebra.Type, bool) {
	switch n := n.(type) {
	case *EntitySource:
		return n.Rel.Attrs[0].Type, true
	case *AllOf:
		return n.Type, true
	case *Const:
		return n.Type, true
	case *Empty:
		return n.Type, true
	case *SelectEntity:
		return EntityType(n.In)
	case *SetOp:
		return EntityType(n.L)
	case *Project:
		if !n.Bag && len(n.Targets) == 1 && n.Targets[0].Expr.Type().Kind == algebra.KindEntity {
			return n.Targets[0].Expr.Type(), true
		}
	}
	return algebra.Type{}, false
}

// defaultSource is the entity relation of all entities of a type: its
// entity source, or AllOf when the catalog has no entity relation for it.
func defaultSource(cat *algebra.Catalog, t algebra.Type) Node {
	if r := cat.EntityRelation(t.Entity); r != nil {
		return &EntitySource{Rel: r}
	}
	return &AllOf{Type: t}
}

// WithAlphas replaces each scan of a sensed relation by an α operator with
// default arguments, as the paper's translation does (§8.4): the flag
// holder's entity source to enable, Clock to sample, and for S:T the
// performer's entity source to sample with. Entity relations, relations
// without a sensor, derived relations and Clock stay scans: they are
// always available.
func WithAlphas(n Node, cat *algebra.Catalog) Node {
	return Map(n, func(n Node) Node {
		s, ok := n.(*Scan)
		if !ok || s.Rel.Strategy.Kind == algebra.NotSensed || s.Rel.Derived || s.Rel.IsClock() {
			return n
		}
		rel := s.Rel
		a := &Alpha{Var: s.Var, VarName: s.VarName, Rel: rel, Exists: s.Exists,
			Enable: defaultSource(cat, rel.Attrs[rel.FlagHolder].Type)}
		if rel.Strategy.Kind == algebra.Sampled {
			a.When = &ClockSrc{N: 1}
			if rel.Strategy.On == algebra.RoleTarget {
				for _, at := range rel.Attrs {
					if at.Role == algebra.RolePerformer && at.Type.Kind == algebra.KindEntity {
						a.Who = defaultSource(cat, at.Type)
					}
				}
			}
		}
		return a
	})
}

// Map rebuilds n bottom-up, replacing each node by fn of it (with its
// children already mapped). Nodes fn returns unchanged are kept.
func Map(n Node, fn func(Node) Node) Node {
	return fn(WithChildren(n, mapKids(n.Children(), fn)))
}

func mapKids(kids []Node, fn func(Node) Node) []Node {
	out := make([]Node, len(kids))
	for i, k := range kids {
		out[i] = Map(k, fn)
	}
	return out
}

// WithChildren returns n with its children replaced (a shallow copy), or n
// itself when they are the same.
func WithChildren(n Node, kids []Node) Node {
	old := n.Children()
	same := len(old) == len(kids)
	for i := range old {
		if same && old[i] != kids[i] {
			same = false
		}
	}
	if same {
		return n
	}
	switch n := n.(type) {
	case *Product:
		return &Product{L: kids[0], R: kids[1], Overlap: n.Overlap, Semi: n.Semi}
	case *Join:
		return &Join{L: kids[0], R: kids[1], On: n.On, Overlap: n.Overlap, Semi: n.Semi}
	case *Select:
		return &Select{Pred: n.Pred, In: kids[0]}
	case *SelectT:
		return &SelectT{Pred: n.Pred, In: kids[0]}
	case *ProjectT:
		return &ProjectT{Valid: n.Valid, In: kids[0]}
	case *Project:
		return &Project{Targets: n.Targets, In: kids[0], Bag: n.Bag}
	case *Aggregate:
		c := *n
		c.In = kids[0]
		return &c
	case *Apply:
		c := *n
		c.In = kids[0]
		c.Aggs = make([]*Aggregate, len(kids)-1)
		for i, k := range kids[1:] {
			c.Aggs[i] = k.(*Aggregate)
		}
		return &c
	case *SetOp:
		return &SetOp{Union: n.Union, L: kids[0], R: kids[1]}
	case *SelectEntity:
		return &SelectEntity{Pred: n.Pred, In: kids[0]}
	case *Alpha:
		c := *n
		c.Enable = kids[0]
		i := 1
		if n.When != nil {
			c.When = kids[i]
			i++
		}
		if n.Who != nil {
			c.Who = kids[i]
		}
		return &c
	}
	panic("plan.WithChildren: " + n.Label())
}

// Covering reports whether an enable argument holds each entity it names
// for the entity's whole lifetime (as an entity source, every entity, or a
// constant does, and selections and set operations of those): an α so
// enabled sees each of its tuples from the start.
func Covering(n Node) bool {
	switch n := n.(type) {
	case *EntitySource, *AllOf, *Const, *Empty:
		return true
	case *SelectEntity:
		return Covering(n.In)
	case *SetOp:
		return Covering(n.L) && Covering(n.R)
	}
	return false
}

// MayBeLate reports whether an α can deliver a tuple after its valid time
// began: a traced-then-disabled interval relation (one packet, at the end),
// a sampled relation (seen at the next sampling instant), or a traced
// interval relation whose argument may enable an entity in the middle of a
// tuple (only its end is seen).
func MayBeLate(a *Alpha) bool {
	if a.Rel.IsEvent() {
		return false
	}
	if a.Rel.Strategy.Whole {
		return true // a sensor that reports each tuple whole, at its end
	}
	switch a.Rel.Strategy.Kind {
	case algebra.TracedThenDisabled, algebra.Sampled:
		return true
	}
	return !Covering(a.Enable)
}
