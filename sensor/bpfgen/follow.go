package bpfgen

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Following descendants (Options.Follow, tqmon's --follow).
//
// The follow map relates a process (its pid, the thread group ID) to the
// followed process it descends from, its root. The resident puts every
// Process it enables for some sensor in the map as its own root; the
// fork program gives each process forked by a process in the map the
// same root, in the kernel, before the child runs (sched_process_fork
// fires in the parent, before the child is woken up); the exit program
// takes a process out of the map when its group dies. A sensor whose
// flag holder is a Process then tests its enable for the holder's root
// instead of the holder: a sensor enabled for a process is enabled for
// every process it forks from then on, transitively, from the child's
// first instruction — nothing of a child is missed and nothing of a
// process outside the tree is delivered. A holder enabled itself is
// delivered as before; only one that is not is tried again as its root
// (a second enable test), so a process's own enables never depend on
// its root's. A process has one root, its first followed ancestor.
// Tuples still name the process that made them (Process.Parent relates
// them).
//
// Bound: the map holds FollowEntries processes alive at once (or
// Options.FollowEntries); a fork that finds it full is not followed (the
// child and its descendants are then outside the tree, as if not
// descended), and is counted as a dropped entity record (wanted and
// dropped in the entity programs' counters), which the resident reports
// as a loss of the Process relation: the run is incomplete, not silent.
//
// Without Follow no program changes and the map does not exist.

// MapFollow is the follow map: pid (u32) → its root's pid (u32).
const MapFollow = "follow"

// FollowEntries is how many processes can be followed at once.
const FollowEntries = 65536

// Options change what Compile generates.
type Options struct {
	// Follow makes the enables of Process flag holders cover the
	// processes they fork (see MapFollow).
	Follow bool
	// FollowEntries bounds the follow map (0: FollowEntries).
	FollowEntries int
	// EntSelEntries bounds the entsel map, the processes selected by
	// their command at once (0: EntSelEntries; see MapEntSelOver).
	EntSelEntries int
}

// Stack slots of the fork program's follow code (clear of stFlag and
// stCounter).
const (
	stChild = -24 // u32: the forked process's pid
	stRoot  = -20 // u32: its root
)

func followMapSpec(n int) *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "tqm_follow", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: uint32(entries(n, FollowEntries))}
}

// followHolder replaces the flag holder's ID at stFlag (and in R1) by
// its root, or jumps to out when it has none (or is its own root: its
// enable was tested already).
func (g *gen) followHolder(out string) {
	g.mapPtr(asm.R1, MapFollow)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stFlag))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.R10, stFlag, asm.Word),
		asm.JEq.Reg(asm.R1, asm.R2, out),
		asm.StoreMem(asm.R10, stFlag, asm.R1, asm.Word))
}

// followFork gives the forked process (child, a value) its parent's
// (parent) root, if the parent has one; a full map's refusal is counted
// in the counters of slot (wanted and dropped).
func (g *gen) followFork(parent, child *value, slot int) {
	skip := g.newLabel("unfollowed")
	g.num(parent, asm.R1)
	g.emit(asm.StoreMem(asm.R10, stFlag, asm.R1, asm.Word))
	g.mapPtr(asm.R1, MapFollow)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stFlag))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.StoreMem(asm.R10, stRoot, asm.R1, asm.Word))
	g.num(child, asm.R1)
	g.emit(asm.StoreMem(asm.R10, stChild, asm.R1, asm.Word))
	g.mapPtr(asm.R1, MapFollow)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stChild),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, stRoot),
		asm.Mov.Imm(asm.R4, 0)) // BPF_ANY; a full map refuses, and the child is not followed
	g.call(asm.FnMapUpdateElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, skip))
	g.emit(asm.StoreImm(asm.R10, stCounter, int64(slot), asm.Word))
	g.mapPtr(asm.R1, MapCounts)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stCounter))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord), asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord), asm.Add.Imm(asm.R1, 1), asm.StoreMem(asm.R0, 8, asm.R1, asm.DWord))
	g.label(skip)
	g.emit(asm.Mov.Imm(asm.R0, 0))
}

// followExit takes an exiting process out of the follow map when its
// group dies (dead: a value that is non-zero then, or, with liveCount,
// the count of live threads, zero then).
func (g *gen) followExit(dead, tgid *value, liveCount bool) {
	skip := g.newLabel("unfollowed")
	g.num(dead, asm.R1)
	if liveCount {
		g.emit(asm.JNE.Imm(asm.R1, 0, skip))
	} else {
		g.emit(asm.JEq.Imm(asm.R1, 0, skip))
	}
	g.num(tgid, asm.R1)
	g.emit(asm.StoreMem(asm.R10, stFlag, asm.R1, asm.Word))
	g.mapPtr(asm.R1, MapFollow)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stFlag))
	g.call(asm.FnMapDeleteElem)
	g.label(skip)
	g.emit(asm.Mov.Imm(asm.R0, 0))
}
