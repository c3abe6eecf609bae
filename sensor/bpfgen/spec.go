package bpfgen

import (
	"github.com/cilium/ebpf"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// Record layout. Every packet a program writes to a ring buffer starts
// with the same header; interval packets (begin, end, whole) extend it
// with the interval's begin time and key; the values follow.
const (
	OffTS      = 0  // u64: the packet's time (CLOCK_MONOTONIC ns, read after the reservation)
	OffSensor  = 8  // u16: the relation's index in the catalog (the wire sensor ID)
	OffKind    = 10 // u8: a Kind
	OffBinding = 11 // u8: the binding's index among the relation's bindings
	OffBegin   = 16 // u64: an interval's begin time (end, whole)
	OffKey     = 24 // 2×u64: the interval's key (begin, end, whole)

	EventHeader    = 16
	IntervalHeader = 40
)

// Kind is what a record reports.
type Kind uint8

const (
	KindEvent Kind = iota + 1 // an event
	KindBegin                 // an interval begins (values follow)
	KindEnd                   // an interval ends (no values: its begin had them)
	KindWhole                 // a whole interval, reported at its end (values follow)
	// Entity records (the built-in lifecycle programs), on the entity ring.
	KindFork // a task was created: pid, tgid, comm
	KindExec // a task executed a program: pid, tgid, old pid, comm
	KindExit // a task exited: pid, tgid, whether its thread group died
)

var kindNames = [...]string{KindEvent: "event", KindBegin: "begin", KindEnd: "end", KindWhole: "whole",
	KindFork: "fork", KindExec: "exec", KindExit: "exit"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "kind?"
}

// Entity record layouts (after the event header).
const (
	OffPid     = 16 // u64
	OffTgid    = 24 // u64
	OffArg     = 32 // u64: fork's parent thread group, exec's old pid, exit's group-dead flag
	OffComm    = 40 // [16]byte: fork's and exec's command name
	CommSize   = 16
	EntitySize = OffComm + CommSize
)

// Mode is how a binding reports its tuples.
type Mode uint8

const (
	ModeEvent Mode = iota + 1 // one event packet
	ModeSplit                 // a begin packet, then an end packet
	ModeWhole                 // one whole packet at the end
)

func (m Mode) String() string {
	switch m {
	case ModeEvent:
		return "event"
	case ModeSplit:
		return "begin/end"
	case ModeWhole:
		return "whole"
	}
	return "mode?"
}

// Decoder turns a number a program wrote into an attribute's value in
// user space.
type Decoder uint8

const (
	DecodeNone      Decoder = iota
	DecodeSyscall           // a system call number → its name (string)
	DecodeTaskState         // a task state → Preempted, Sleeping, Blocked, Idle or Other (enum)
)

// Slot is where a value sits in a record.
type Slot struct {
	Attr   int // the relation's attribute
	Off    int
	Size   int  // 8 for numbers; a string's buffer
	Str    bool // a NUL-terminated string
	Decode Decoder
	// Entity is the entity type the number identifies (Process: a thread
	// group ID, Thread: a thread ID, Processor: a CPU number), or "".
	Entity string
	// Signed: the number is an int64 (else a uint64).
	Signed bool
}

// Layout is the layout of one binding's records (event, begin or whole).
type Layout struct {
	Size  int
	Slots []Slot // one per attribute, in attribute order
}

// ProbeKind is where a program attaches.
type ProbeKind uint8

const (
	AttachTracepoint ProbeKind = iota + 1 // a BTF-enabled raw tracepoint (tp_btf)
	AttachUprobe                          // a uprobe at Symbol+Offset
	AttachUretprobe                       // a uretprobe on Symbol
)

// Attach says where a program attaches.
type Attach struct {
	Kind   ProbeKind
	Event  string // tracepoints: the event (sched_switch)
	Group  string // tracepoints: the group, as written (informative)
	Path   string // uprobes: the executable
	Symbol string // uprobes: the function
	// Offsets are the offsets from Symbol to attach to (uprobes); a
	// function entry is {0}, a Go function's returns are its RET
	// instructions.
	Offsets []uint64
}

// Program is one generated program.
type Program struct {
	// Name is the kernel's name for it: "tqm_" + a short form of the
	// sensor; every program of ours has the prefix.
	Name    string
	Sensor  int // the relation's index in the catalog; -1 for entity programs
	Binding int
	End     bool // the end probe of an interval
	Attach  Attach
	Spec    *ebpf.ProgramSpec
	// Source maps raw instruction offsets to the spec places their
	// instructions come from (ascending offsets; each holds until the
	// next).
	Source []SourceAt
}

// SourceAt says that the instructions from raw offset Off on come from
// the spec at Pos (What: the clause or bind as written).
type SourceAt struct {
	Off  int
	File string
	Pos  source.Pos
	What string
}

// Binding is one `sensor` statement of a relation.
type Binding struct {
	Index    int
	File     string
	Pos      source.Pos
	Mode     Mode
	Layout   Layout
	Programs []*Program

	clauses [2]*clause // begin (or event) and end
}

// Sensor is a relation with kernel bindings.
type Sensor struct {
	Rel *algebra.Relation
	// ID is the relation's index in the catalog (the wire sensor ID).
	ID int
	// Flag is the flag holder's attribute; FlagType its entity type.
	Flag     int
	FlagType string
	// Decrement: a traced-then-disabled sensor decrements its flag's
	// counter when it fires (the resident re-arms it).
	Decrement bool
	Bindings  []*Binding
	// follow: its programs test a holder's root too (Options.Follow,
	// follow.go; Process flag holders only).
	follow bool
	// Maps are the sensor's own maps: "enable" and one "state<i>" per
	// interval binding. Programs also reference the shared maps (see
	// SharedMaps).
	Maps map[string]*ebpf.MapSpec
}

// Programs returns all of the sensor's programs.
func (s *Sensor) Programs() []*Program {
	var out []*Program
	for _, b := range s.Bindings {
		out = append(out, b.Programs...)
	}
	return out
}

// Spec is a description's kernel sensors.
type Spec struct {
	Catalog *algebra.Catalog
	// Sensors, in catalog order.
	Sensors []*Sensor
	// Entities are the built-in lifecycle programs feeding the Process
	// and Thread entity relations.
	Entities []*Program
	// Relations is the number of relations in the catalog (the counters'
	// size: one slot per relation, plus one for the entity programs).
	Relations int
	// MaxRecord is the largest record a sensor writes.
	MaxRecord int
	// Follow: the programs follow descendants (Options.Follow), in a map
	// of FollowEntries (0: the default).
	Follow        bool
	FollowEntries int
	// EntSelEntries sizes the entsel map (0: EntSelEntries).
	EntSelEntries int
}

// Sensor returns the sensor of relation id, or nil.
func (s *Spec) Sensor(id int) *Sensor {
	for _, x := range s.Sensors {
		if x.ID == id {
			return x
		}
	}
	return nil
}

// EntityCounter is the index of the entity programs' counters.
func (s *Spec) EntityCounter() int { return s.Relations }
