// Package wire owns the resident ↔ remote protocol: the messages (Hello,
// Batch, Command), their binary encoding, and the transport-neutral Conn a
// remote monitor uses to talk to one resident, in process or over gRPC.
//
// A session: the resident sends Hello (version, its sensor description,
// clock information); then Batches flow from resident to remote — packets
// in timestamp order, each batch ending with a watermark (no later packet
// has a timestamp ≤ it) and cumulative per-sensor counts of packets wanted
// and dropped, and how many commands the session had carried out, the
// last when — while Commands flow the other way: enable and disable
// flags, whole-type enables, triggers, standing sampling requests,
// fragments (a selection and projection run at the resident), lease
// renewals. A plan session (CPlan) carries instead the results of a
// program the resident runs: derived tuples (PResult* packets). If the remote stops renewing its lease, the resident clears
// everything the session set.
package wire

import "time"

// Version is the protocol version; Hello carries it and a remote refuses
// other versions.
const Version = 2

// MaxFrame bounds an encoded message; decoders refuse larger input.
const MaxFrame = 4 << 20

// Hello is the resident's handshake.
type Hello struct {
	Version uint32
	Name    string // the resident's name (e.g. "demo", a host name)
	SDL     string // the sensor description the resident announces
	// Types are the entity types, indexed by TypeID.
	Types []string
	// Sensors are the relation names, indexed by SensorID.
	Sensors []string
	// MonoBase and WallBase map the resident's monotonic clock to the
	// global clock: global = WallBase + (mono − MonoBase), in ns.
	MonoBase int64
	WallBase int64
	// Period is the base Clock period (ns).
	Period int64
	// Caps lists the optional commands the resident carries out (see
	// CapTriggers). A remote never sends a command the resident does not
	// advertise; it widens instead.
	Caps []string
}

// CapTriggers: the resident evaluates CTrigger commands itself (enables
// an entity when a packet of another sensor carries it). A kernel resident
// does not; the remote then widens the restricted sensor.
const CapTriggers = "triggers"

// CapWhile: the resident evaluates CTrigger commands with While set (holds
// an enable exactly while an entity's tuple satisfies the conditions).
const CapWhile = "while"

// CapCount: the resident evaluates CTrigger commands with Count set
// (enables an entity once enough packets carrying it fell in a window).
const CapCount = "count"

// CapCountWhile: the resident also evaluates counting triggers with
// While: the enable is held only while the count is at least Count (taken
// back by the resident's drain, within one round of the count falling),
// and the target's intervals in progress on the entity then are still
// sent their end.
const CapCountWhile = "count-while"

// MaxCount is the largest Count a resident counts: a remote with a higher
// threshold widens instead.
const MaxCount = 64

// CapEntityTriggers: the resident evaluates CTrigger commands whose
// trigger is an entity relation (On; the rewriter's entity-selection
// argument, with While when the resident also has CapWhile), though not
// triggers on sensed relations (CapTriggers). A kernel resident enables
// a sensor for the processes whose command matches, in the kernel, at
// their fork or exec.
const CapEntityTriggers = "entity-triggers"

// CapFragments: the resident carries out CFragment commands (filters and
// projects a sensor's packets for the session before sending them).
const CapFragments = "fragments"

// CapEntityFragments: the resident carries out CFragment commands on
// entity relations too (a selection: a session is sent only the entity
// tuples that satisfy it).
const CapEntityFragments = "entity-fragments"

// CapPlans: the resident carries out CPlan (runs a whole program's plan
// where its data is and sends derived tuples).
const CapPlans = "plans"

// Has reports whether the resident advertises capability c.
func (h *Hello) Has(c string) bool {
	for _, x := range h.Caps {
		if x == c {
			return true
		}
	}
	return false
}

// PacketKind says what a packet reports.
type PacketKind uint8

const (
	// PEvent: an event tuple at TS.
	PEvent PacketKind = iota + 1
	// PBegin: an interval tuple (identified by Tuple) begins at TS.
	PBegin
	// PEnd: interval Tuple ends at TS; Begin carries its begin time and
	// Vals its values (so an end whose begin was not delivered is still a
	// whole tuple).
	PEnd
	// PWhole: a complete interval [Begin, TS) reported at its end (a
	// traced-then-disabled sensor fires once).
	PWhole
	// PSample: interval Tuple, valid since Begin, seen by a sample at TS.
	PSample
	// PEntityBegin, PEntityEnd: an entity relation's tuple (an entity's
	// existence, or a state of it) begins or ends; always delivered.
	PEntityBegin
	PEntityEnd
	// PResultBegin, PResultEnd, PResultEvent: a result element of a plan
	// fragment (CPlan) — statement Sensor's result tuple Tuple begins, ends,
	// or is an event, at TS; Vals carry the tuple's values (Begin and
	// Event; every kind's N and S as the algebra holds them, entities by
	// ID in S). Only a plan session sends them.
	PResultBegin
	PResultEnd
	PResultEvent
	// PResultStart: the plan fragment's observation starts at TS (its
	// answers are about what it observed from there).
	PResultStart
	// PResultLoss: the fragment's run lost packets of relation Vals[0].S
	// between Begin and TS (Vals[1].N of them): its answers are cut out of
	// that gap, as a monitor's are.
	PResultLoss
	// PResultLost: the fragment stopped at TS (its memory bound, its
	// output's bound, or its own session lost; Vals[0].S says which): what
	// it sent is right, and nothing after TS was observed.
	PResultLost
)

// ValueKind is the kind of an encoded attribute value.
type ValueKind uint8

const (
	VEntity   ValueKind = iota + 1 // N is an entity key (see EntityDef)
	VInt                           // N is an int64
	VFloat                         // N holds float64 bits
	VString                        // S
	VBool                          // N is 0 or 1
	VTime                          // N is an int64 (ns, global clock)
	VDuration                      // N is an int64 (ns)
	VEnum                          // N is the member's ordinal
)

// Value is one attribute value on the wire.
type Value struct {
	Kind ValueKind
	N    uint64
	S    string
}

// Packet is one sensor report. TS and Begin are on the resident's
// monotonic clock.
type Packet struct {
	TS     int64
	Sensor uint16
	Kind   PacketKind
	Tuple  uint64 // identity of an interval tuple (PBegin, PEnd, PWhole, PSample); 0 for events
	Begin  int64  // PEnd, PWhole, PSample
	Vals   []Value
}

// EntityDef names an entity key the first time a batch uses it.
type EntityDef struct {
	Key  uint64
	Type uint16
	ID   string
}

// Count is a cumulative per-sensor counter.
type Count struct {
	Sensor uint16
	Wanted uint64 // packets the sensor produced while enabled
	Drops  uint64 // of those, lost because a buffer was full
}

// Batch is a run of packets, in timestamp order, closed by a watermark.
type Batch struct {
	Defs      []EntityDef
	Packets   []Packet
	Watermark int64 // monotonic; no later packet has TS ≤ Watermark
	Counts    []Count
	// Applied is how many commands the session had carried out when the
	// batch was made, and AppliedAt the resident's clock (the packets'
	// clock) when it carried out the last of them: what the remote asked
	// for holds for every packet stamped from AppliedAt on, so a remote
	// knows from when it watched what it enabled.
	Applied   uint64
	AppliedAt int64
	// Arena is the backing store of the packets' values when a resident
	// made the batch, kept for reuse (resident.Session.Release). Never
	// encoded; nil in decoded batches.
	Arena []Value
}

// CommandKind says what a command asks.
type CommandKind uint8

const (
	// CEnable / CDisable: increment / decrement Sensor's flag for entity
	// (Type, ID); an entity that does not exist yet gets the flag when
	// created.
	CEnable CommandKind = iota + 1
	CDisable
	// CEnableAll / CDisableAll: Sensor enabled for every entity of its flag
	// holder's type, existing or future.
	CEnableAll
	CDisableAll
	// CTrigger: from now on, whenever sensor On delivers a packet whose
	// values satisfy Conds, enable Sensor for the entity in attribute Attr
	// of that packet (once per entity). With While, On is an entity
	// relation and the enable lasts exactly while the entity's current
	// tuple satisfies Conds: set when a tuple that satisfies them begins (or
	// when the trigger is installed, for the entities whose tuple already
	// does), cleared when one that does not begins or the entity ends.
	// With Count (On traced), the trigger counts instead:
	// it enables the entity once at least Count of On's packets that
	// satisfy Conds and carry it in Attr fell within the last Period ns
	// (inclusive; Period 0: since the trigger was installed) — the gate of
	// two-phase monitoring, count(… by Attr for each Period) ≥ Count,
	// evaluated where the packets are (CapCount) — for the session, or,
	// with While (CapCountWhile), only while the count is at least Count
	// (and Sensor's intervals in progress on the entity when it is
	// disabled are still sent their end).
	// CUntrigger removes trigger ID and what it enabled.
	CTrigger
	CUntrigger
	// CSample: sample Sensor at every multiple of Period (global clock) for
	// entity (Type, ID), or for every entity when All. CUnsample stops it.
	CSample
	CUnsample
	// CLease: renew the session's lease for Period ns.
	CLease
	// CBye: close the session; the resident clears what it set.
	CBye
	// CFragment: fragment ID of the session's plan runs at the resident:
	// of Sensor's packets, send the session only those whose values satisfy
	// Pred (nil: all), with only the attributes in Keep (none listed: all;
	// the others are sent as their kind's zero value). A session's
	// fragments on one sensor combine by union: a packet goes to it when
	// any of them passes it, with the attributes any of them keeps.
	// CUnfragment removes fragment ID.
	CFragment
	CUnfragment
	// CPlan: run a plan fragment — the TQuel program Text (with Args, the
	// values of its $NAME references, as NAME=VALUE) — at the resident,
	// compiled with the monitor's algebra over the resident's own sensor
	// description, within Limit bytes of operator state (0: the
	// resident's default; more than it is refused). It must be the
	// session's first command, and its only one besides leases and bye:
	// the session then carries the program's results (PResult* packets),
	// not the sensors' packets. A CPlan without Text, later, finishes the
	// fragment: it stops, sends what its network settles at its end, and
	// the session ends (io.EOF) — a monitor's end of run that, unlike a
	// bye, keeps the stream open for those last results.
	CPlan
)

// Cond is an equality on a packet attribute, for triggers.
type Cond struct {
	Attr  uint16
	Value Value // entities by ID in S (Kind VEntity, N unused)
}

// PredOp is a predicate node's operator.
type PredOp uint8

const (
	// PAnd, POr: every / some node of Kids holds (at least one kid).
	PAnd PredOp = iota + 1
	POr
	// PNot: Kids[0] (exactly one kid) does not hold.
	PNot
	// PEq … PGe compare attribute Attr with Value (of the attribute's
	// kind): numbers by value (VInt, VTime, VDuration signed; VFloat as a
	// float; VBool, VEnum unsigned), strings and entities (by ID, in S)
	// bytewise.
	PEq
	PNe
	PLt
	PLe
	PGt
	PGe
	// PPrefix: the string or entity ID in attribute Attr begins with
	// Value.S.
	PPrefix
)

// Bounds of a predicate: a decoder refuses a larger or deeper one, and a
// resident evaluates at most MaxPredNodes nodes per fragment per packet.
const (
	MaxPredNodes = 256
	MaxPredDepth = 32
)

// Pred is a selection on a packet's own attributes against constants: a
// tree of PAnd/POr/PNot over comparisons.
type Pred struct {
	Op    PredOp
	Attr  uint16 // comparisons
	Value Value  // comparisons
	Kids  []Pred // PAnd, POr, PNot
}

// Command is one request from remote to resident.
type Command struct {
	Kind   CommandKind
	ID     uint64 // trigger or sample request identity
	Sensor uint16
	Type   uint16
	Entity string
	All    bool
	On     uint16 // CTrigger: the sensor whose packets trigger
	Attr   uint16 // CTrigger: the attribute holding the entity to enable
	Conds  []Cond
	Period int64    // CSample: sampling period; CLease: lease duration; CTrigger with Count: the window (ns)
	While  bool     // CTrigger on an entity relation: enabled only while Conds hold
	Pred   *Pred    // CFragment: the selection (nil: every packet)
	Keep   []uint16 // CFragment: the attributes sent (empty: all)
	Count  uint32   // CTrigger: packets within Period that enable (0: the first enables)
	Text   string   // CPlan: the program
	Args   []string // CPlan: NAME=VALUE
	Limit  int64    // CPlan: the bound on its operators' state (bytes)
}

// Conn is a remote monitor's connection to one resident.
type Conn interface {
	// Hello returns the resident's handshake.
	Hello() *Hello
	// Recv blocks for the next batch; it returns an error when the
	// connection ends: one that is io.EOF (errors.Is) when the resident
	// ended the session normally, having reported everything; any other
	// when the session was lost (lease expiry, a broken stream).
	Recv() (*Batch, error)
	// Send delivers a command.
	Send(*Command) error
	// Close ends the session (sending CBye when possible).
	Close() error
}

// Releaser is a Conn (or a resident session) that can reuse a batch's
// memory once its receiver is done with the batch and everything in it.
type Releaser interface {
	Release(*Batch)
}

// Skewed is a Conn whose resident's clock is known to be within Skew of
// the monitor's (a fleet host's, measured from round trips or stated):
// the monitor holds its merged watermark back by it.
type Skewed interface {
	Skew() time.Duration // the bound, in ns
}
