package algebra

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

func observationRelations() []*Relation {
	return []*Relation{
		{Name: ObservedName, Class: ClassInterval, FlagHolder: -1, Builtin: true, Attrs: []Attr{
			{Name: "Relation", Type: TypeString}, {Name: "Period", Type: TypeDuration}}},
		{Name: LostName, Class: ClassInterval, FlagHolder: -1, Builtin: true, Attrs: []Attr{
			{Name: "Relation", Type: TypeString}, {Name: "Count", Type: TypeInt}}},
	}
}

// Builtins are the catalog's built-in relations, Observed then Lost.
func (c *Catalog) Builtins() []*Relation { return c.builtins }

// Span is a half-open span of valid time [From, To): a gap of a
// relation's observation, for one.
type Span struct{ From, To Time }
