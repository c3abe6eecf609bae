package resident

import "github.com/tqmon/tqmon/resident/wire"

// TypeID indexes Spec.Types; SensorID indexes Spec.Sensors.
type (
	TypeID   uint16
	SensorID uint16
)

// Class is a relation's temporal class.
type Class uint8

const (
	ClassEntity   Class = iota + 1 // an entity relation: always delivered
	ClassEvent                     // an event relation
	ClassInterval                  // an interval relation
)

// Strategy is how a relation's sensor collects.
type Strategy uint8

const (
	NotSensed          Strategy = iota // entity relations and relations without a sensor
	Traced                             // a packet each time the sensor fires while enabled
	Sampled                            // state read at sampling instants
	TracedThenDisabled                 // fires once per tuple, then disables (the monitor re-arms)
)

// AttrSpec describes an attribute.
type AttrSpec struct {
	Name string
	Kind wire.ValueKind
	Type TypeID   // for wire.VEntity
	Enum []string // for wire.VEnum
}

// SensorSpec describes one relation: a sensor, or an entity relation.
type SensorSpec struct {
	Name     string
	Class    Class
	Strategy Strategy
	Attrs    []AttrSpec
	// Flag is the index of the flag holder attribute (an entity), or -1.
	Flag int
}

// Spec is what a subject's generated sensor code declares.
type Spec struct {
	// SDL is the sensor description, announced to remote monitors.
	SDL string
	// Types are the entity types.
	Types []string
	// Sensors are the relations, entity relations included.
	Sensors []SensorSpec
	// EntityRel[t] is the SensorID of type t's entity relation, or -1.
	EntityRel []int
	// Period is the base Clock period in ns (0: one second).
	Period int64
}

// Value is one attribute value as generated code passes it: E for
// entities, N for numbers, bools, times, durations and enum ordinals
// (floats as their bits), S for strings.
type Value struct {
	N uint64
	S string
	E *Entity
}

// Interval identifies an interval tuple between its begin and end calls.
// Generated code keeps it (by value) with the tuple's values.
type Interval struct {
	ID    uint64 // tuple identity
	Begin int64  // when it began (monotonic ns)
	// Sent is set when its begin packet was delivered to some session, so
	// its end will be too.
	Sent bool

	// mask and epoch: the sessions its begin packet went to (as of epoch);
	// its end goes to them too. idx: its entry in a sampled relation's
	// state table.
	mask  uint64
	epoch uint32
	idx   uint32
}

// TruthSink receives every tuple whatever is enabled: the complete ground
// truth, for tests and `tqmon demo --truth`. Calls come from many
// goroutines; implementations synchronise. Times are monotonic ns. vals is
// the sink's to keep (a copy of the caller's).
type TruthSink interface {
	Event(s SensorID, vals []Value, at int64)
	Begin(s SensorID, tuple uint64, vals []Value, at int64)
	End(s SensorID, tuple uint64, at int64)
}

// Options configure a resident.
type Options struct {
	// Name is announced in the handshake.
	Name string
	// Slots is the capacity of each packet ring (one per P that writes
	// packets, made on its first packet) in 64-byte slots (rounded up to
	// a power of two, at least 16; default 1<<14, 1 MiB). An event with
	// at most two values takes one slot, an interval packet at least two,
	// a packet with eight values up to five.
	Slots int
	// Truth, if set, receives every tuple (and arms every sensor).
	Truth TruthSink
	// Clock, if set, replaces the monotonic clock (tests). It is called
	// with the goroutine pinned to its P: it must not block.
	Clock func() int64
	// NoTSC makes the resident read the runtime's monotonic clock even
	// where the TSC clock could be used (see tsc.go).
	NoTSC bool
	// Wall, if set, gives the global time matching Clock's zero (tests);
	// default: the wall clock when the resident starts.
	Wall func() int64
	// PlanQueue bounds the result packets a plan session (CPlan) holds
	// for a monitor that does not read them (default and most: 65,536):
	// past it the plan fragment stops, saying so.
	PlanQueue int
}
