package bpfgen

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// Names of the maps programs reference. The shared ones live as long as
// the resident's tracking; a sensor's own live while it is attached.
const (
	MapEvents   = "events"   // ring buffer of sensor packets
	MapEntities = "entities" // ring buffer of entity records (never shared with packets: a flood cannot drop them)
	MapCounts   = "counts"   // per-CPU array: per relation, packets wanted and dropped
	MapAll      = "allflags" // array of one value: per relation, its Flags (two u64)
	MapScratch  = "scratch"  // per-CPU array of one value: where a whole interval's begin is composed
	MapEnable   = "enable"   // a sensor's enable flags: entity ID (u32) → counter (u64)
	// Entity selections (see EntitySelections).
	MapCommSel = "commsel" // a command name (16 bytes, NUL-padded) → the sensors enabled for it (bit i: relation i)
	MapEntSel  = "entsel"  // a process ID (u32) → the sensors enabled for it by its command (commsel's value at its fork or exec)
	// MapEntSelOver: one u64 (an array of one, mappable): the sensors
	// (bit i: relation i) some process was selected for that entsel had
	// no room for — enabled for every process instead (see below).
	MapEntSelOver = "entselover"
)

// Entity selections: a sensor enabled for the processes whose command
// (the Process entity relation's Command) is one of some names, exactly
// while it is — the rewriter's entity-selection argument
// (alpha-entity-select) evaluated in the kernel, where a process's
// command changes. The fork program (for a new process) and the exec
// program look the command they record up in commsel and set the
// process's entry in entsel to what they find (deleting it when
// nothing); the exit program deletes the entry of a thread group that
// died. A sensor generated with entity selections (Sensor.Filter's
// entsel) whose enable test fails looks its flag holder up in entsel and
// fires when its bit is set. Only sensors of relations 0–63 whose flag
// holder is a Process can be so enabled (the bits of a u64).
//
// Bound: entsel holds EntSelEntries processes selected at once (or
// Options.EntSelEntries). A process entsel has no room for is never
// missed: the fork or exec program that fails to record it ORs its
// sensors' bits (commsel's value) into entselover, atomically, and a
// sensor generated with entity selections fires, when its flag holder's
// entsel bit is not set, if its own bit in entselover is — for every
// process, a superset the monitor's join with Process filters (the
// resident's fallback for a selection it cannot evaluate: exact, more
// packets). The resident ORs in the same way for a running process it
// cannot record when a selection starts, reports each sensor that falls
// back, and clears a sensor's bit only once no selection enables it (so
// no process it was set for can still need it; a fork in flight that
// sets it again after that only widens). (TestEntSelBoundFallsBack.)
const (
	CommSelEntries = 64    // command names selected at once
	EntSelEntries  = 32768 // processes enabled by their command at once (beyond: see above)
	MaxEntSelID    = 63    // the largest relation index with a bit
)

// mmapable is BPF_F_MMAPABLE: an array the resident maps into its memory
// (entselover: it ORs and clears bits atomically, as the programs do).
const mmapable = 1 << 10

// StateMap names the state map of a sensor's interval binding i.
func StateMap(i int) string { return fmt.Sprintf("state%d", i) }

// Counter is one CPU's counters of a relation (the counts map's value).
type Counter struct {
	Wanted  uint64
	Dropped uint64
}

// Flags is a relation's entry in the allflags map, read with plain loads
// before any map lookup: All is the whole-type enable count; One says
// which entities are enabled: 0 none, ID+1 that one only, Many several
// (the enable map decides).
type Flags struct {
	All uint64
	One uint64
}

// FlagsSize is the size of a relation's Flags; Many is One for several
// entities.
const (
	FlagsSize = 16
	Many      = ^uint64(0)
)

// Map sizes.
const (
	EnableEntries = 4096  // entities a sensor can be enabled for at once
	StateEntries  = 16384 // intervals in progress per binding (LRU: the oldest go first)
)

// SharedMaps returns the specs of the shared maps: ring buffers of
// ringBytes (sensor packets) and entityBytes (entity records), each a
// power of two multiple of the page size.
func (s *Spec) SharedMaps(ringBytes, entityBytes int) map[string]*ebpf.MapSpec {
	m := map[string]*ebpf.MapSpec{
		MapEvents:     {Name: "tqm_events", Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)},
		MapEntities:   {Name: "tqm_entities", Type: ebpf.RingBuf, MaxEntries: uint32(entityBytes)},
		MapCounts:     {Name: "tqm_counts", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: uint32(s.Relations + 1)},
		MapAll:        {Name: "tqm_allflags", Type: ebpf.Array, KeySize: 4, ValueSize: uint32(FlagsSize * max(s.Relations, 1)), MaxEntries: 1},
		MapScratch:    {Name: "tqm_scratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(max(s.MaxRecord, 8)), MaxEntries: 1},
		MapCommSel:    {Name: "tqm_commsel", Type: ebpf.Hash, KeySize: CommSize, ValueSize: 8, MaxEntries: CommSelEntries},
		MapEntSel:     {Name: "tqm_entsel", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: uint32(entries(s.EntSelEntries, EntSelEntries))},
		MapEntSelOver: {Name: "tqm_entselover", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1, Flags: mmapable},
	}
	if s.Follow {
		m[MapFollow] = followMapSpec(s.FollowEntries)
	}
	return m
}

// entries is n, or def when n is not positive (the Options' sizes).
func entries(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func enableMapSpec(rel string) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: shortName("tqm_e_", rel), Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: EnableEntries}
}

func stateMapSpec(rel string, valueSize int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: shortName("tqm_s_", rel), Type: ebpf.LRUHash, KeySize: 16, ValueSize: uint32(valueSize), MaxEntries: StateEntries}
}

// shortName makes a kernel object name (at most 15 characters of
// [A-Za-z0-9_.]) from a prefix and a name.
func shortName(prefix, name string) string {
	b := []byte(prefix)
	for i := 0; i < len(name) && len(b) < 15; i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' {
			b = append(b, c)
		}
	}
	return string(b)
}
