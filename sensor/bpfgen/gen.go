package bpfgen

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
)

// License is the license string the programs are loaded with (the
// helpers they call are GPL-only).
const License = "Dual MIT/GPL"

// Stack slots (offsets from r10).
const (
	stFlag    = -8  // u32: the flag holder's ID (the enable map's key)
	stCounter = -4  // u32: the counters' key
	stKey     = -24 // 2×u64: an interval's key
	stBegin   = -32 // u64: a split interval's begin time (its state)
	stPidTgid = -40 // u64: bpf_get_current_pid_tgid(), read once
	stZero    = -44 // u32: 0, the scratch map's key
)

// Registers that live across helper calls.
const (
	rCtx   = asm.R6 // the program's context
	rRec   = asm.R7 // the record being written (ring buffer or scratch)
	rCount = asm.R8 // the sensor's per-CPU counters
	rState = asm.R9 // an interval's state (end probes)
)

// gen accumulates one program's instructions with their sources.
type gen struct {
	insns   asm.Instructions
	raw     int
	src     []SourceAt
	pending string // label for the next instruction
	srcNext *SourceAt
	labels  int
	follow  bool   // a Process flag holder's enable is its root's (follow.go)
	sel     *kexpr // the selection begin and event programs evaluate (nil: none)
	entsel  bool   // begin and event programs: enabled by entity selections too
}

// at says that what follows comes from the spec at pos.
func (g *gen) at(file string, pos source.Pos, what string) {
	g.srcNext = &SourceAt{File: file, Pos: pos, What: what}
}

func (g *gen) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if g.srcNext != nil {
			s := *g.srcNext
			g.srcNext = nil
			s.Off = g.raw
			g.src = append(g.src, s)
			in = in.WithSource(asm.Comment(fmt.Sprintf("%s:%s: %s", s.File, s.Pos, s.What)))
		}
		if g.pending != "" {
			in = in.WithSymbol(g.pending)
			g.pending = ""
		}
		g.insns = append(g.insns, in)
		g.raw += int(in.Width())
	}
}

// label names the next instruction.
func (g *gen) label(name string) {
	if g.pending != "" {
		panic("bpfgen: two labels on one instruction: " + g.pending + ", " + name)
	}
	g.pending = name
}

func (g *gen) newLabel(prefix string) string {
	g.labels++
	return fmt.Sprintf("%s_%d", prefix, g.labels)
}

func (g *gen) call(fn asm.BuiltinFunc) { g.emit(fn.Call()) }

// mapPtr loads a map's address into dst.
func (g *gen) mapPtr(dst asm.Register, name string) {
	g.emit(asm.LoadMapPtr(dst, 0).WithReference(name))
}

// imm loads a 64-bit constant.
func (g *gen) imm(dst asm.Register, v uint64) {
	if v <= math.MaxInt32 {
		g.emit(asm.Mov.Imm(dst, int32(v)))
		return
	}
	g.emit(asm.LoadImm(dst, int64(v), asm.DWord))
}

func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// narrow makes dst the low size bytes of itself, sign-extended when
// signed.
func (g *gen) narrow(dst asm.Register, size int, signed bool) {
	if size >= 8 {
		return
	}
	shift := int32(64 - 8*size)
	if signed {
		g.emit(asm.LSh.Imm(dst, shift), asm.ArSh.Imm(dst, shift))
		return
	}
	if size == 4 {
		g.emit(asm.Mov.Reg32(dst, dst))
		return
	}
	g.emit(asm.And.Imm(dst, int32(1)<<(8*size)-1))
}

// num computes a numeric value into dst (r1–r5 and r0 are clobbered).
func (g *gen) num(v *value, dst asm.Register) {
	switch v.op {
	case opPid:
		g.emit(asm.LoadMem(dst, asm.R10, stPidTgid, asm.DWord), asm.Mov.Reg32(dst, dst))
	case opTgid:
		g.emit(asm.LoadMem(dst, asm.R10, stPidTgid, asm.DWord), asm.RSh.Imm(dst, 32))
	case opTask:
		g.call(asm.FnGetCurrentTask)
		if dst != asm.R0 {
			g.emit(asm.Mov.Reg(dst, asm.R0))
		}
	case opCPU:
		g.call(asm.FnGetSmpProcessorId)
		if dst != asm.R0 {
			g.emit(asm.Mov.Reg(dst, asm.R0))
		}
	case opConst:
		g.imm(dst, v.imm)
	case opReg:
		g.emit(asm.LoadMem(dst, rCtx, int16(v.n), asm.DWord))
	case opArg:
		g.emit(asm.LoadMem(dst, rCtx, int16(8*v.n), asm.DWord))
		if len(v.loads) == 0 {
			g.narrow(dst, v.size, v.signed)
		}
		for _, l := range v.loads {
			g.emit(asm.LoadMem(dst, dst, int16(l.off), sizeOf(l.size)))
			if l.signed {
				g.narrow(dst, l.size, true)
			}
		}
	default:
		panic("bpfgen: num of a string value")
	}
	if v.hasMask {
		if v.mask <= math.MaxInt32 {
			g.emit(asm.And.Imm(dst, int32(v.mask)))
		} else {
			tmp := asm.R5
			if dst == asm.R5 {
				tmp = asm.R4
			}
			g.emit(asm.LoadImm(tmp, int64(v.mask), asm.DWord), asm.And.Reg(dst, tmp))
		}
	}
}

// str writes a string value into the buffer at base+off.
func (g *gen) str(v *value, base asm.Register, off, size int) {
	switch v.op {
	case opComm:
		g.emit(asm.Mov.Reg(asm.R1, base), asm.Add.Imm(asm.R1, int32(off)), asm.Mov.Imm(asm.R2, int32(min(size, CommSize))))
		g.call(asm.FnGetCurrentComm)
	case opUserStr:
		g.num(v.inner, asm.R3)
		g.emit(asm.Mov.Reg(asm.R1, base), asm.Add.Imm(asm.R1, int32(off)), asm.Mov.Imm(asm.R2, int32(min(size, v.strLen))))
		g.call(asm.FnProbeReadUserStr)
	case opKernelStr:
		g.emit(asm.LoadMem(asm.R3, rCtx, int16(8*v.n), asm.DWord))
		for _, l := range v.loads {
			g.emit(asm.LoadMem(asm.R3, asm.R3, int16(l.off), asm.DWord))
		}
		g.emit(asm.Add.Imm(asm.R3, v.strOff), asm.Mov.Reg(asm.R1, base), asm.Add.Imm(asm.R1, int32(off)),
			asm.Mov.Imm(asm.R2, int32(min(size, v.strLen))))
		g.call(asm.FnProbeReadKernelStr)
	default:
		panic("bpfgen: str of a number")
	}
}

// store writes value v into its slot of the record at rRec.
func (g *gen) store(v *value, sl Slot) {
	if sl.Str {
		g.str(v, rRec, sl.Off, sl.Size)
		return
	}
	g.num(v, asm.R1)
	g.emit(asm.StoreMem(rRec, int16(sl.Off), asm.R1, asm.DWord))
}

// prologue saves the context and, when anything reads them, the current
// pid and tgid.
func (g *gen) prologue(usesPid bool) {
	g.emit(asm.Mov.Reg(rCtx, asm.R1))
	if usesPid {
		g.call(asm.FnGetCurrentPidTgid)
		g.emit(asm.StoreMem(asm.R10, stPidTgid, asm.R0, asm.DWord))
	}
}

// conds jumps to out unless every condition holds.
func (g *gen) conds(file string, cs []resolvedCond, out string) {
	for _, c := range cs {
		g.at(file, c.pos, "when "+c.text)
		g.num(c.x, asm.R1)
		var fail asm.JumpOp
		switch c.op {
		case sdl.CondEq:
			fail = asm.JNE
		case sdl.CondNe:
			fail = asm.JEq
		case sdl.CondLt:
			fail = asm.JGE
		case sdl.CondLe:
			fail = asm.JGT
		case sdl.CondGt:
			fail = asm.JLE
		case sdl.CondGe:
			fail = asm.JLT
		case sdl.CondIn:
			ok := g.newLabel("in")
			for _, v := range c.vals {
				g.jumpImm(asm.JEq, asm.R1, v, ok)
			}
			g.emit(asm.Ja.Label(out))
			g.label(ok)
			continue
		}
		g.jumpImm(fail, asm.R1, c.vals[0], out)
	}
}

// jumpImm jumps to label when reg op v (unsigned 64-bit compare).
func (g *gen) jumpImm(op asm.JumpOp, reg asm.Register, v uint64, label string) {
	if v <= math.MaxInt32 {
		g.emit(op.Imm(reg, int32(v), label))
		return
	}
	g.emit(asm.LoadImm(asm.R2, int64(v), asm.DWord), op.Reg(reg, asm.R2, label))
}

// enableTest jumps to on when the sensor is enabled for the flag holder
// (v), to out when not: the whole-type flag first, then — with plain
// loads — the one entity enabled when there is only one, and only then
// the enable map (whose counters traced-then-disabled sensors decrement:
// they fire only while it is positive, and always look it up).
// With follow, a holder not enabled is tried again as its root.
func (g *gen) enableTest(s *Sensor, v *value, on, out string) {
	g.num(v, asm.R1)
	g.emit(asm.StoreMem(asm.R10, stFlag, asm.R1, asm.Word))
	if g.follow {
		root := g.newLabel("root")
		g.enableTestID(s, on, root)
		g.label(root)
		g.followHolder(out)
		g.enableTestID(s, on, out)
		return
	}
	g.enableTestID(s, on, out)
}

// enableTestID is enableTest for the ID in R1 and at stFlag.
func (g *gen) enableTestID(s *Sensor, on, out string) {
	g.emit(asm.LoadMapValue(asm.R2, 0, uint32(FlagsSize*s.ID)).WithReference(MapAll),
		asm.LoadMem(asm.R3, asm.R2, 0, asm.DWord),
		asm.JNE.Imm(asm.R3, 0, on))
	if !s.Decrement {
		g.emit(asm.LoadMem(asm.R3, asm.R2, 8, asm.DWord),
			asm.Mov.Reg32(asm.R1, asm.R1),
			asm.Add.Imm(asm.R1, 1),
			asm.JEq.Reg(asm.R3, asm.R1, on),
			asm.JNE.Imm(asm.R3, -1, out)) // -1: Many
	}
	g.mapPtr(asm.R1, MapEnable)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stFlag))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out))
	if s.Decrement {
		g.emit(asm.Mov.Imm(asm.R1, -1),
			fetchAdd(asm.R0, asm.R1),
			asm.JSGT.Imm(asm.R1, 0, on),
			asm.Mov.Imm(asm.R1, 1),
			asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, 0),
			asm.Ja.Label(out))
	}
}

// counters points rCount at the per-CPU counters of slot and counts a
// packet wanted.
func (g *gen) counters(slot int, out string) {
	g.emit(asm.StoreImm(asm.R10, stCounter, int64(slot), asm.Word))
	g.mapPtr(asm.R1, MapCounts)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stCounter))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out),
		asm.Mov.Reg(rCount, asm.R0),
		asm.LoadMem(asm.R1, rCount, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(rCount, 0, asm.R1, asm.DWord))
}

// reserve points rRec at a new record of size bytes in ring, stamps it
// (time, sensor, kind, binding) and jumps to drop when the ring is full.
func (g *gen) reserve(ring string, size int, sensor int, kind Kind, binding int, drop string) {
	g.mapPtr(asm.R1, ring)
	g.emit(asm.Mov.Imm(asm.R2, int32(size)), asm.Mov.Imm(asm.R3, 0))
	g.call(asm.FnRingbufReserve)
	g.emit(asm.JEq.Imm(asm.R0, 0, drop), asm.Mov.Reg(rRec, asm.R0))
	g.call(asm.FnKtimeGetNs)
	g.emit(asm.StoreMem(rRec, OffTS, asm.R0, asm.DWord),
		asm.StoreImm(rRec, OffSensor, int64(uint32(sensor)|uint32(kind)<<16|uint32(binding)<<24), asm.Word),
		asm.StoreImm(rRec, OffSensor+4, 0, asm.Word))
}

// submit publishes the record without waking the reader (it polls).
func (g *gen) submit() {
	g.emit(asm.Mov.Reg(asm.R1, rRec), asm.Mov.Imm(asm.R2, 1 /* BPF_RB_NO_WAKEUP */))
	g.call(asm.FnRingbufSubmit)
}

// dropped counts a packet the ring had no room for.
func (g *gen) dropped() {
	g.emit(asm.LoadMem(asm.R1, rCount, 8, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(rCount, 8, asm.R1, asm.DWord))
}

// epilogue: the exit every path ends at.
func (g *gen) epilogue(out string) {
	g.label(out)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// key writes the interval key of a clause to the stack.
func (g *gen) key(cl *clause) {
	if cl.keySP {
		g.emit(asm.LoadMem(asm.R1, asm.R10, stPidTgid, asm.DWord), asm.RSh.Imm(asm.R1, 32),
			asm.StoreMem(asm.R10, stKey, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, rCtx, int16(ptRegs["sp"]), asm.DWord))
		if cl.spAdjust != 0 {
			g.emit(asm.Add.Imm(asm.R1, cl.spAdjust))
		}
		g.emit(asm.StoreMem(asm.R10, stKey+8, asm.R1, asm.DWord))
		return
	}
	g.num(cl.key, asm.R1)
	g.emit(asm.StoreMem(asm.R10, stKey, asm.R1, asm.DWord), asm.StoreImm(asm.R10, stKey+8, 0, asm.Word), asm.StoreImm(asm.R10, stKey+12, 0, asm.Word))
}

// copyKey copies the stack's key into the record.
func (g *gen) copyKey() {
	for i := int16(0); i < 16; i += 8 {
		g.emit(asm.LoadMem(asm.R1, asm.R10, stKey+i, asm.DWord), asm.StoreMem(rRec, OffKey+i, asm.R1, asm.DWord))
	}
}

func (cl *clause) usesPid(withKey bool) bool {
	for _, v := range cl.vals {
		if v.usesPid() {
			return true
		}
	}
	for _, c := range cl.conds {
		if c.x.usesPid() {
			return true
		}
	}
	return withKey && (cl.keySP || cl.key.usesPid())
}

// generateBinding makes a binding's programs: one for an event, two
// (begin and end) for an interval.
func generateBinding(s *Sensor, b *Binding, sel *kexpr, entsel bool) []*Program {
	from, to := b.clauses[0], b.clauses[1]
	var out []*Program
	switch b.Mode {
	case ModeEvent:
		out = append(out, program(s, b, from, false, func(g *gen) { g.sel, g.entsel = sel, entsel; genEvent(g, s, b, from) }))
	case ModeSplit:
		out = append(out, program(s, b, from, false, func(g *gen) { g.sel, g.entsel = sel, entsel; genSplitBegin(g, s, b, from) }))
		out = append(out, program(s, b, to, true, func(g *gen) { genSplitEnd(g, s, b, to) }))
	case ModeWhole:
		out = append(out, program(s, b, from, false, func(g *gen) { g.sel, g.entsel = sel, entsel; genWholeBegin(g, s, b, from) }))
		out = append(out, program(s, b, to, true, func(g *gen) { genWholeEnd(g, s, b, to) }))
	}
	return out
}

func program(s *Sensor, b *Binding, cl *clause, end bool, body func(*gen)) *Program {
	g := &gen{follow: s.follow}
	body(g)
	suffix := fmt.Sprintf("%d", b.Index)
	if end {
		suffix += "e"
	}
	name := shortName("tqm_", s.Rel.Name)
	if len(name)+1+len(suffix) > 15 {
		name = name[:15-1-len(suffix)]
	}
	name += "_" + suffix
	p := &Program{Name: name, Sensor: s.ID, Binding: b.Index, End: end, Attach: cl.attach, Source: g.src}
	p.Spec = programSpec(name, cl.attach, g.insns)
	return p
}

func programSpec(name string, at Attach, insns asm.Instructions) *ebpf.ProgramSpec {
	ps := &ebpf.ProgramSpec{Name: name, Instructions: insns, License: License}
	if at.Kind == AttachTracepoint {
		ps.Type, ps.AttachType, ps.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, at.Event
	} else {
		ps.Type = ebpf.Kprobe
	}
	return ps
}

// valuesAt writes the clause's values into the record.
func (g *gen) valuesAt(file string, b *Binding, cl *clause, rel []string) {
	for i, sl := range b.Layout.Slots {
		v := cl.vals[i]
		if v == nil {
			continue
		}
		g.at(file, v.pos, rel[i]+" = "+v.text)
		g.store(v, sl)
	}
}

func attrNames(s *Sensor) []string {
	out := make([]string, len(s.Rel.Attrs))
	for i, a := range s.Rel.Attrs {
		out[i] = a.Name
	}
	return out
}

func genEvent(g *gen, s *Sensor, b *Binding, cl *clause) {
	const on, drop, out = "enabled", "drop", "out"
	g.at(b.File, b.Pos, cl.what)
	g.prologue(cl.usesPid(false))
	g.conds(b.File, cl.conds, out)
	g.at(b.File, cl.vals[s.Flag].pos, "enable test: "+s.Rel.Attrs[s.Flag].Name+" = "+cl.vals[s.Flag].text)
	g.enable(s, cl.vals[s.Flag], on, out)
	g.label(on)
	g.selection(b.File, b, out)
	g.counters(s.ID, out)
	g.reserve(MapEvents, b.Layout.Size, s.ID, KindEvent, b.Index, drop)
	g.valuesAt(b.File, b, cl, attrNames(s))
	g.submit()
	g.emit(asm.Ja.Label(out))
	g.label(drop)
	g.dropped()
	g.epilogue(out)
}

func genSplitBegin(g *gen, s *Sensor, b *Binding, cl *clause) {
	const on, drop, out = "enabled", "drop", "out"
	g.at(b.File, b.Pos, cl.what)
	g.prologue(cl.usesPid(true))
	g.conds(b.File, cl.conds, out)
	g.at(b.File, cl.vals[s.Flag].pos, "enable test: "+s.Rel.Attrs[s.Flag].Name+" = "+cl.vals[s.Flag].text)
	g.enable(s, cl.vals[s.Flag], on, out)
	g.label(on)
	g.selection(b.File, b, out)
	g.at(b.File, cl.pos, "key: "+keyText(cl))
	g.key(cl)
	g.counters(s.ID, out)
	g.reserve(MapEvents, b.Layout.Size, s.ID, KindBegin, b.Index, drop)
	g.emit(asm.StoreMem(rRec, OffBegin, asm.R0, asm.DWord), asm.StoreMem(asm.R10, stBegin, asm.R0, asm.DWord))
	g.copyKey()
	g.valuesAt(b.File, b, cl, attrNames(s))
	g.submit()
	// The end reports only intervals whose begin was delivered.
	g.mapPtr(asm.R1, StateMap(b.Index))
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stKey),
		asm.Mov.Reg(asm.R3, asm.R10), asm.Add.Imm(asm.R3, stBegin), asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnMapUpdateElem)
	g.emit(asm.Ja.Label(out))
	g.label(drop)
	g.dropped()
	g.epilogue(out)
}

func genSplitEnd(g *gen, s *Sensor, b *Binding, cl *clause) {
	const drop, out = "drop", "out"
	g.endStart(b, cl, out)
	g.emit(asm.LoadMem(rState, asm.R0, 0, asm.DWord))
	g.deleteState(b)
	g.counters(s.ID, out)
	g.reserve(MapEvents, IntervalHeader, s.ID, KindEnd, b.Index, drop)
	g.emit(asm.StoreMem(rRec, OffBegin, rState, asm.DWord))
	g.copyKey()
	g.submit()
	g.emit(asm.Ja.Label(out))
	g.label(drop)
	g.dropped()
	g.epilogue(out)
}

func genWholeBegin(g *gen, s *Sensor, b *Binding, cl *clause) {
	const on, out = "enabled", "out"
	g.at(b.File, b.Pos, cl.what)
	g.prologue(cl.usesPid(true))
	g.conds(b.File, cl.conds, out)
	g.at(b.File, cl.vals[s.Flag].pos, "enable test: "+s.Rel.Attrs[s.Flag].Name+" = "+cl.vals[s.Flag].text)
	g.enable(s, cl.vals[s.Flag], on, out)
	g.label(on)
	g.selection(b.File, b, out)
	g.at(b.File, cl.pos, "key: "+keyText(cl))
	g.key(cl)
	// Compose the begin in the per-CPU scratch buffer, at the record's
	// offsets, and keep it as the interval's state.
	g.emit(asm.StoreImm(asm.R10, stZero, 0, asm.Word))
	g.mapPtr(asm.R1, MapScratch)
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stZero))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out), asm.Mov.Reg(rRec, asm.R0))
	g.call(asm.FnKtimeGetNs)
	g.emit(asm.StoreMem(rRec, OffBegin, asm.R0, asm.DWord))
	g.valuesAt(b.File, b, cl, attrNames(s))
	g.mapPtr(asm.R1, StateMap(b.Index))
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stKey), asm.Mov.Reg(asm.R3, rRec), asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnMapUpdateElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out))
	// No room for its state: the tuple is lost, and counted so.
	g.counters(s.ID, out)
	g.dropped()
	g.epilogue(out)
}

func genWholeEnd(g *gen, s *Sensor, b *Binding, cl *clause) {
	const drop, out = "drop", "out"
	g.endStart(b, cl, out)
	g.emit(asm.Mov.Reg(rState, asm.R0))
	g.counters(s.ID, out)
	g.reserve(MapEvents, b.Layout.Size, s.ID, KindWhole, b.Index, drop)
	// The begin's time and values, from the state.
	g.emit(asm.LoadMem(asm.R1, rState, OffBegin, asm.DWord), asm.StoreMem(rRec, OffBegin, asm.R1, asm.DWord))
	begin := b.clauses[0]
	for i, sl := range b.Layout.Slots {
		if begin.vals[i] == nil {
			continue
		}
		for off := sl.Off; off < sl.Off+sl.Size; off += 8 {
			g.emit(asm.LoadMem(asm.R1, rState, int16(off), asm.DWord), asm.StoreMem(rRec, int16(off), asm.R1, asm.DWord))
		}
	}
	g.copyKey()
	g.valuesAt(b.File, b, cl, attrNames(s))
	g.deleteState(b)
	g.submit()
	g.emit(asm.Ja.Label(out))
	g.label(drop)
	g.dropped()
	g.deleteState(b)
	g.epilogue(out)
}

// endStart begins an end probe: its conditions, its key, and the lookup
// of the interval's state (r0; out when there is none: its begin was not
// reported).
func (g *gen) endStart(b *Binding, cl *clause, out string) {
	g.at(b.File, cl.pos, cl.what)
	g.prologue(cl.usesPid(true))
	g.conds(b.File, cl.conds, out)
	g.at(b.File, cl.pos, "key: "+keyText(cl))
	g.key(cl)
	g.lookupState(b, out)
}

func (g *gen) lookupState(b *Binding, out string) {
	g.mapPtr(asm.R1, StateMap(b.Index))
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stKey))
	g.call(asm.FnMapLookupElem)
	g.emit(asm.JEq.Imm(asm.R0, 0, out))
}

func (g *gen) deleteState(b *Binding) {
	g.mapPtr(asm.R1, StateMap(b.Index))
	g.emit(asm.Mov.Reg(asm.R2, asm.R10), asm.Add.Imm(asm.R2, stKey))
	g.call(asm.FnMapDeleteElem)
}

func keyText(cl *clause) string {
	if cl.keySP {
		if cl.spAdjust != 0 {
			return fmt.Sprintf("tgid, sp%+d (a call)", cl.spAdjust)
		}
		return "tgid, sp (a call)"
	}
	return cl.key.text
}

// fetchAdd is `r = atomic_fetch_add((u64 *)(dst + 0), r)`. cilium/ebpf
// v0.22 marshals the immediate of its fetch atomics as 0 (computing the
// immediate after having read it), which the kernel runs as an atomic add
// that leaves src unchanged; the immediate (BPF_ADD | BPF_FETCH) is set
// here, which stays right once that is fixed.
func fetchAdd(dst, src asm.Register) asm.Instruction {
	ins := asm.FetchAdd.Mem(dst, src, asm.DWord, 0)
	ins.Constant = 0x01 // BPF_ADD | BPF_FETCH
	return ins
}
