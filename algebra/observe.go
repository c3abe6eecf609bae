package algebra

import "strings"

// The observation relations: every catalog has them, built in, beside
// the relations its sensor description declares. They say what a monitor
// watched of each primitive relation, so a query can ask it like anything
// else (`range of l is Lost retrieve (l.Relation, l.Count)`):
//
//   - Observed(Relation: string, Period: duration): one tuple per
//     primitive relation and span it was watched, valid over that span;
//     Period is a sampled relation's sampling period (0 for a traced or an
//     entity relation).
//   - Lost(Relation: string, Count: int): one tuple per gap, valid over
//     the span in which Count packets of Relation were lost.
//
// In a fleet's catalog (Catalog.Fleet, MarkFleet) both have a last
// attribute Host: string, like every relation of a fleet: an Observed
// tuple per relation and host, from that host's own start to its end (a
// host lacking the relation has none), and a Lost tuple per gap of one
// host. So `range of o is Observed retrieve (o.Relation, o.Host)` says
// which host was watched when.
//
// They are not in Catalog.Relations (a sensor description never declares
// them, a history file or generator never holds them); Lookup finds them,
// Builtins lists them, and their names are reserved: neither a sensor
// description nor a retrieve may use them.
const (
	ObservedName = "Observed"
	LostName     = "Lost"
)

// IsObservation reports whether name is one of the observation relations.
func IsObservation(name string) bool { return name == ObservedName || name == LostName }

func observationRelations(fleet bool) []*Relation {
	rels := []*Relation{
		{Name: ObservedName, Class: ClassInterval, FlagHolder: -1, Builtin: true, Attrs: []Attr{
			{Name: "Relation", Type: TypeString}, {Name: "Period", Type: TypeDuration}}},
		{Name: LostName, Class: ClassInterval, FlagHolder: -1, Builtin: true, Attrs: []Attr{
			{Name: "Relation", Type: TypeString}, {Name: "Count", Type: TypeInt}}},
	}
	if fleet {
		for _, r := range rels {
			r.Attrs = append(r.Attrs, Attr{Name: HostAttr, Type: TypeString})
		}
	}
	return rels
}

// MarkFleet makes c a fleet's catalog (Catalog.Fleet): its built-in
// relations gain their Host attribute. The relations a description
// declares are left as they are (the fleet's description adds their Host
// itself: remote.FleetCatalog).
func (c *Catalog) MarkFleet() {
	c.Fleet = true
	c.builtins = observationRelations(true)
	for _, r := range c.builtins {
		c.byName[r.Name] = r
	}
}

// FleetMarker begins the description of a fleet (remote.FleetCatalog's
// text, which a recording of a fleet stores as its spec): a catalog
// compiled from a text beginning with it is a fleet's (IsFleetSpec, then
// MarkFleet), so a recording reads back with the built-in relations the
// run had — Observed and Lost with their Host.
const FleetMarker = "-- tqmon fleet:"

// IsFleetSpec reports whether a description's text is a fleet's: it
// begins with FleetMarker.
func IsFleetSpec(text string) bool { return strings.HasPrefix(text, FleetMarker) }

// Builtins are the catalog's built-in relations, Observed then Lost.
func (c *Catalog) Builtins() []*Relation { return c.builtins }

// Span is a half-open span of valid time [From, To): a gap of a
// relation's observation, for one.
type Span struct{ From, To Time }
