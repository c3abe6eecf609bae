package bpfgen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
)

// The built-in programs that feed the Process and Thread entity
// relations: every task's creation (sched_process_fork), program
// execution (sched_process_exec) and exit (sched_process_exit), written
// to the entity ring whatever is enabled. They are attached while the
// resident has a session.

// entityProbe is one built-in program: its tracepoint and what it writes
// after the header (pid, tgid, arg, comm).
type entityProbe struct {
	event string
	kind  Kind
	pid   string // a path, as in a binding
	tgid  string
	arg   string // "" for none
	comm  string // "comm" (the current task's), a path to a char array, or ""
	// argDead: arg is the thread group's live-thread count (older kernels
	// whose sched_process_exit has no group_dead argument): the group is
	// dead when it is 0.
}

func entityPrograms(spec *Spec, k Kernel) ([]*Program, error) {
	probes := []entityProbe{
		{event: "sched_process_fork", kind: KindFork, pid: "arg1.pid", tgid: "arg1.tgid", arg: "arg0.tgid", comm: "arg1.comm"},
		{event: "sched_process_exec", kind: KindExec, pid: "arg0.pid", tgid: "arg0.tgid", arg: "arg1", comm: "comm"},
		{event: "sched_process_exit", kind: KindExit, pid: "arg0.pid", tgid: "arg0.tgid", arg: "arg1"},
	}
	var out []*Program
	for _, ep := range probes {
		args, err := k.TracepointArgs(ep.event)
		if err != nil {
			return nil, fmt.Errorf("tracepoint sched:%s: %w", ep.event, err)
		}
		liveCount := false
		if ep.kind == KindExit && len(args) < 2 {
			// Before group_dead was an argument: read the live count.
			ep.arg, liveCount = "arg0.signal.live.counter", true
		}
		var errs source.ErrorList
		r := resolver{errf: func(pos source.Pos, format string, a ...any) { errs.Add("built-in", pos, format, a...) }}
		pc := &probeCtx{kind: AttachTracepoint, args: args, name: "tracepoint sched:" + ep.event}
		val := func(path string) *value {
			if path == "" {
				return nil
			}
			return r.resolve(refOf(path), pc)
		}
		pid, tgid, arg, comm := val(ep.pid), val(ep.tgid), val(ep.arg), val(ep.comm)
		if err := errs.Err(); err != nil {
			return nil, fmt.Errorf("the kernel's sched:%s does not have what the entity programs read: %w", ep.event, err)
		}
		g := &gen{}
		const drop, out_ = "drop", "out"
		g.at("built-in", source.Pos{Line: 1, Col: 1}, "entity records from tracepoint sched:"+ep.event)
		g.prologue(false)
		if spec.Follow && ep.kind == KindFork {
			g.at("built-in", source.Pos{Line: 1, Col: 1}, "follow: the forked process gets its parent's root")
			g.followFork(arg, tgid, spec.EntityCounter())
		}
		if spec.Follow && ep.kind == KindExit {
			g.at("built-in", source.Pos{Line: 1, Col: 1}, "follow: a dead process leaves the follow map")
			g.followExit(arg, tgid, liveCount)
		}
		g.counters(spec.EntityCounter(), out_)
		g.entitySelect(ep.kind, pid, tgid, arg, comm, liveCount)
		g.reserve(MapEntities, EntitySize, spec.EntityCounter(), ep.kind, 0, drop)
		for _, x := range []struct {
			v   *value
			off int16
		}{{pid, OffPid}, {tgid, OffTgid}, {arg, OffArg}} {
			if x.v == nil {
				g.emit(asm.StoreImm(rRec, x.off, 0, asm.Word), asm.StoreImm(rRec, x.off+4, 0, asm.Word))
				continue
			}
			g.num(x.v, asm.R1)
			if x.off == OffArg && liveCount {
				// group dead ⇔ no live thread left
				g.emit(asm.Mov.Imm(asm.R2, 0), asm.JNE.Imm(asm.R1, 0, "alive"), asm.Mov.Imm(asm.R2, 1))
				g.label("alive")
				g.emit(asm.Mov.Reg(asm.R1, asm.R2))
			}
			g.emit(asm.StoreMem(rRec, x.off, asm.R1, asm.DWord))
		}
		if comm != nil {
			g.str(comm, rRec, OffComm, CommSize)
		} else {
			for off := int16(OffComm); off < OffComm+CommSize; off += 4 {
				g.emit(asm.StoreImm(rRec, off, 0, asm.Word))
			}
		}
		g.submit()
		g.emit(asm.Ja.Label(out_))
		g.label(drop)
		g.dropped()
		g.epilogue(out_)
		at := Attach{Kind: AttachTracepoint, Event: ep.event, Group: "sched"}
		name := shortName("tqm_", ep.event[len("sched_process_"):])
		out = append(out, &Program{Name: name, Sensor: -1, Attach: at, Source: g.src, Spec: programSpec(name, at, g.insns)})
	}
	return out, nil
}

// refOf makes the binding expression of a dotted path.
func refOf(path string) sdl.BExpr {
	ref := &sdl.BRef{}
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			ref.Path = append(ref.Path, &sdl.Ident{At: source.Pos{Line: 1, Col: start + 1}, Name: path[start:i]})
			start = i + 1
		}
	}
	return ref
}

// Stack slots of the entity programs' selection bookkeeping.
const (
	stComm   = -64 // [16]byte: the command, NUL-padded (commsel's key)
	stTgid   = -68 // u32: the process (entsel's key)
	stPidTmp = -72 // u32: the task's ID
	stSel    = -80 // u64: the sensors selected (entsel's value)
)

// entitySelect keeps the process's entry in entsel (see
// EntitySelections): at a new process's fork and at an exec, commsel's
// value for its command (none: deleted); at the death of its thread
// group, deleted.
func (g *gen) entitySelect(kind Kind, pid, tgid, arg, comm *value, liveCount bool) {
	done := g.newLabel("selected")
	switch kind {
	case KindFork, KindExec:
		g.num(pid, asm.R1)
		g.emit(asm.StoreMem(asm.R10, stPidTmp, asm.R1, asm.Word))
		g.num(tgid, asm.R1)
		g.emit(asm.StoreMem(asm.R10, stTgid, asm.R1, asm.Word))
		if kind == KindFork {
			// A new thread of a process does not change it.
			g.emit(asm.LoadMem(asm.R2, asm.R10, stPidTmp, asm.Word), asm.Mov.Reg32(asm.R1, asm.R1), asm.JNE.Reg(asm.R1, asm.R2, done))
		}
		g.emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.R10, stComm, asm.R1, asm.DWord), asm.StoreMem(asm.R10, stComm+8, asm.R1, asm.DWord))
		g.str(comm, asm.R10, stComm, CommSize)
		g.mapPtr(asm.R1, MapCommSel)
		g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stComm))
		g.call(asm.FnMapLookupElem)
		del := g.newLabel("unselected")
		g.emit(asm.JEq.Imm(asm.R0, 0, del),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
			asm.StoreMem(asm.R10, stSel, asm.R1, asm.DWord))
		g.mapPtr(asm.R1, MapEntSel)
		g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stTgid),
			asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, stSel), asm.Mov.Imm(asm.R4, 0))
		g.call(asm.FnMapUpdateElem)
		// No room (a full map refuses a new key; an existing one is
		// always updated): the sensors selected fall back to every
		// process (MapEntSelOver), atomically — other CPUs OR too.
		g.emit(asm.JEq.Imm(asm.R0, 0, done),
			asm.LoadMapValue(asm.R2, 0, 0).WithReference(MapEntSelOver),
			asm.LoadMem(asm.R1, asm.R10, stSel, asm.DWord),
			asm.OrAtomic.Mem(asm.R2, asm.R1, asm.DWord, 0),
			asm.Ja.Label(done))
		g.label(del)
		g.deleteEntSel()
	case KindExit:
		g.num(arg, asm.R1)
		if liveCount {
			g.emit(asm.JNE.Imm(asm.R1, 0, done)) // threads left
		} else {
			g.emit(asm.JEq.Imm(asm.R1, 0, done)) // not group_dead
		}
		g.num(tgid, asm.R1)
		g.emit(asm.StoreMem(asm.R10, stTgid, asm.R1, asm.Word))
		g.deleteEntSel()
	}
	g.label(done)
}

func (g *gen) deleteEntSel() {
	g.mapPtr(asm.R1, MapEntSel)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stTgid))
	g.call(asm.FnMapDeleteElem)
}

// enable is enableTest, then (with entity selections) the sensor's bit
// in entselover, then the flag holder's bit in entsel.
func (g *gen) enable(s *Sensor, v *value, on, out string) {
	if !g.entsel {
		g.enableTest(s, v, on, out)
		return
	}
	miss := g.newLabel("entsel")
	g.enableTest(s, v, on, miss)
	g.emit(asm.Ja.Label(on))
	g.label(miss)
	// A sensor whose selected processes overflowed entsel fires for
	// every process (MapEntSelOver): a plain load, as the flags'.
	g.emit(asm.LoadMapValue(asm.R2, 0, 0).WithReference(MapEntSelOver),
		asm.LoadMem(asm.R1, asm.R2, 0, asm.DWord),
		asm.RSh.Imm(asm.R1, int32(s.ID)),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, on))
	g.mapPtr(asm.R1, MapEntSel)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stFlag))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.RSh.Imm(asm.R1, int32(s.ID)),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, on),
		asm.Ja.Label(out))
}
