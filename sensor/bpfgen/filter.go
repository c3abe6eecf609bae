package bpfgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/wire"
)

// Selections in the kernel (the kernel resident's fragments, wire
// CFragment). A sensor's programs can be generated with a selection on
// the sensor's own attributes compiled in, between the enable test and
// the counting of a wanted packet (step 3 of the shape in doc.go): a
// packet the selection rejects costs no counter, no ring reservation, no
// clock read, no drain work and no bytes. The selection is the
// disjunction of what the sessions that enable the sensor asked for (the
// resident decides it; see resident/kernel), written as a wire.Pred.
//
// Exactness. What a program evaluates must hold of every packet some
// session's selection passes — it may pass more (the remote monitor runs
// every query's σ again), never less. So each comparison the program
// cannot evaluate exactly as the algebra does on the packet's value is
// replaced by true where it occurs positively and by false under a not
// (lower's polarity): the program's test is implied by the selection.
// Evaluated exactly:
//
//   - numbers (int and duration attributes) against an integer, with any
//     comparison, signed 64-bit — the value a program computes is the one
//     it would write into the record, and the drain reads it as an int64;
//   - entities (Process, Thread, Processor numbers) with = and != against
//     an ID (a decimal number; another ID equals none);
//   - system call names (syscall(n)) with = and != against a name,
//     compared as the number that has that name (the drain's table, given
//     to Filter; "syscall_N" names a number the table lacks), and prefix
//     as the in-list of the numbers whose names have it;
//   - strings read by the program (comm, user_string, kernel strings)
//     with = and prefix (and != as not =) against a non-empty constant:
//     the program reads the string as the record would hold it (cut to
//     its buffer) onto its stack and compares it word by word with the
//     constant, which it loads from an array map of the filter's
//     constants (Filter.Consts; a constant longer than the buffer holds
//     equals nothing).
//
// Anything else — ordering of strings, enums (task states), booleans, an
// attribute the probe does not compute (an interval's attributes filled
// at its end) — stays at the monitor. Interval programs evaluate the
// selection at the begin: the end reports only intervals whose begin was.

// MaxFilterCmps bounds the comparisons compiled into one program (after
// in-lists of prefixes are expanded): what a selection can add to every
// firing of a probe, and the verifier's work. A larger selection is not
// compiled (the program passes everything; the monitor still selects).
const MaxFilterCmps = 64

// MapConsts names the array map (one value) holding a filter's string
// constants.
const MapConsts = "fconsts"

// stStr is the stack buffer a string compared is read into (up to
// UserStringSize bytes, below the other slots).
const stStr = -48 - UserStringSize

// Filter is a sensor's programs with a selection compiled in.
type Filter struct {
	// Programs are the sensor's programs (as Sensor.Programs, in the same
	// order), each evaluating the selection its binding could place.
	Programs []*Program
	// Consts holds the string constants the programs compare with (nil:
	// none); its name in the programs is MapConsts.
	Consts *ebpf.MapSpec
	// Placed says, per binding, what its programs evaluate ("": nothing,
	// every packet passes), in the relation's terms.
	Placed []string
}

// Filter generates the sensor's programs with selection p (nil: none) on
// its attributes compiled in (see above). syscalls maps system call names
// to their numbers, as the drain names them. With entsel, the programs
// are enabled by entity selections too (see EntitySelections; only for
// a sensor that EntitySelectable).
func (s *Sensor) Filter(p *wire.Pred, syscalls map[string]uint64, entsel bool) *Filter {
	f := &Filter{}
	l := &lowering{s: s, syscalls: syscalls}
	for _, b := range s.Bindings {
		var sel *kexpr
		if p != nil {
			l.b, l.cl = b, b.clauses[0]
			sel = l.lower(p, true)
			if sel.op == kTrue || sel.cmps() > MaxFilterCmps {
				sel = nil
			}
		}
		text := ""
		if sel != nil {
			text = sel.String()
		}
		f.Placed = append(f.Placed, text)
		f.Programs = append(f.Programs, generateBinding(s, b, sel, entsel && s.EntitySelectable())...)
	}
	if len(l.consts) > 0 {
		f.Consts = &ebpf.MapSpec{Name: shortName("tqm_c_", s.Rel.Name), Type: ebpf.Array, KeySize: 4,
			ValueSize: uint32(len(l.consts)), MaxEntries: 1, Contents: []ebpf.MapKV{{Key: uint32(0), Value: l.consts}}}
	}
	return f
}

// EntitySelectable reports whether entity selections can enable the
// sensor: its flag holder is a Process, its relation has a bit in
// entsel's values, and it is not traced then disabled.
func (s *Sensor) EntitySelectable() bool {
	return s.FlagType == "Process" && s.ID <= MaxEntSelID && !s.Decrement
}

type kop uint8

const (
	kTrue kop = iota
	kFalse
	kAnd
	kOr
	kNot
	kNum // a number compared with imm: jump taken when it holds
	kStr // a string equal to (or beginning with) s
)

// kexpr is a selection as a program evaluates it.
type kexpr struct {
	op     kop
	kids   []*kexpr
	v      *value
	jmp    asm.JumpOp // kNum
	imm    uint64     // kNum
	low32  bool       // kNum: compare the low 32 bits (entity numbers)
	s      string     // kStr
	prefix bool       // kStr
	size   int        // kStr: the string's buffer
	off    int        // kStr: the constant's offset in MapConsts
	text   string     // comparisons: as the relation reads
}

func (k *kexpr) cmps() int {
	switch k.op {
	case kNum, kStr:
		return 1
	}
	n := 0
	for _, x := range k.kids {
		n += x.cmps()
	}
	return n
}

func (k *kexpr) String() string {
	switch k.op {
	case kTrue:
		return "true"
	case kFalse:
		return "false"
	case kNot:
		return "not (" + k.kids[0].String() + ")"
	case kAnd, kOr:
		if k.text != "" {
			return k.text // an in-list of its own (a prefix of names)
		}
		sep := " and "
		if k.op == kOr {
			sep = " or "
		}
		var parts []string
		for _, x := range k.kids {
			t := x.String()
			if x.op == kAnd || x.op == kOr {
				t = "(" + t + ")"
			}
			parts = append(parts, t)
		}
		return strings.Join(parts, sep)
	}
	return k.text
}

var (
	kTrueX  = &kexpr{op: kTrue}
	kFalseX = &kexpr{op: kFalse}
)

func konst(b bool) *kexpr {
	if b {
		return kTrueX
	}
	return kFalseX
}

// lowering turns a wire predicate into what one binding's begin (or
// event) program evaluates.
type lowering struct {
	s        *Sensor
	b        *Binding
	cl       *clause
	syscalls map[string]uint64
	consts   []byte // MapConsts' value
	numbers  map[uint64]bool
}

// lower returns a test implied by p (pos) or implying it (!pos: under an
// odd number of nots), folding constants.
func (l *lowering) lower(p *wire.Pred, pos bool) *kexpr {
	switch p.Op {
	case wire.PAnd, wire.POr:
		and := p.Op == wire.PAnd
		var kids []*kexpr
		for i := range p.Kids {
			k := l.lower(&p.Kids[i], pos)
			switch {
			case k.op == kTrue && and, k.op == kFalse && !and:
				continue // neutral
			case k.op == kFalse && and, k.op == kTrue && !and:
				return k // absorbing
			}
			if (k.op == kAnd && and || k.op == kOr && !and) && k.text == "" {
				kids = append(kids, k.kids...) // flattened: (a or b) or c is a or b or c
				continue
			}
			kids = append(kids, k)
		}
		switch len(kids) {
		case 0:
			return konst(and)
		case 1:
			return kids[0]
		}
		if and {
			return &kexpr{op: kAnd, kids: kids}
		}
		return &kexpr{op: kOr, kids: kids}
	case wire.PNot:
		if len(p.Kids) != 1 {
			return konst(pos)
		}
		return not(l.lower(&p.Kids[0], !pos))
	}
	if k := l.cmp(p); k != nil {
		return k
	}
	return konst(pos) // not evaluated here: the monitor decides
}

func not(k *kexpr) *kexpr {
	switch k.op {
	case kTrue:
		return kFalseX
	case kFalse:
		return kTrueX
	case kNot:
		return k.kids[0]
	}
	return &kexpr{op: kNot, kids: []*kexpr{k}}
}

var cmpText = map[wire.PredOp]string{wire.PEq: "=", wire.PNe: "!=", wire.PLt: "<", wire.PLe: "<=", wire.PGt: ">", wire.PGe: ">=", wire.PPrefix: "prefix"}

// cmp lowers a comparison the program evaluates exactly, or returns nil.
func (l *lowering) cmp(p *wire.Pred) *kexpr {
	a := int(p.Attr)
	if a >= len(l.s.Rel.Attrs) || a >= len(l.b.Layout.Slots) {
		return nil
	}
	v := l.cl.vals[a]
	if v == nil {
		return nil // filled by the end probe
	}
	sl := l.b.Layout.Slots[a]
	attr := l.s.Rel.Attrs[a]
	text := func(c string) string {
		return fmt.Sprintf("%s %s %s", attr.Name, cmpText[p.Op], c)
	}
	if p.Op == wire.PNe {
		q := *p
		q.Op = wire.PEq
		if k := l.cmp(&q); k != nil {
			return not(k)
		}
		return nil
	}
	switch {
	case sl.Str:
		return l.str(p, v, sl, text(strconv.Quote(p.Value.S)))
	case sl.Decode == DecodeSyscall:
		return l.syscall(p, v, text(strconv.Quote(p.Value.S)))
	case sl.Decode != DecodeNone:
		return nil
	case sl.Entity != "":
		if p.Value.Kind != wire.VEntity || p.Op != wire.PEq {
			return nil
		}
		n, err := strconv.ParseUint(p.Value.S, 10, 32)
		if err != nil || strconv.FormatUint(n, 10) != p.Value.S {
			return kFalseX // no entity number is written so
		}
		return &kexpr{op: kNum, v: v, jmp: asm.JEq, imm: n, low32: true, text: text(p.Value.S)}
	}
	if !(attr.Type.Kind == algebra.KindInt && p.Value.Kind == wire.VInt || attr.Type.Kind == algebra.KindDuration && p.Value.Kind == wire.VDuration) {
		return nil
	}
	var j asm.JumpOp
	switch p.Op {
	case wire.PEq:
		j = asm.JEq
	case wire.PLt:
		j = asm.JSLT
	case wire.PLe:
		j = asm.JSLE
	case wire.PGt:
		j = asm.JSGT
	case wire.PGe:
		j = asm.JSGE
	default:
		return nil
	}
	return &kexpr{op: kNum, v: v, jmp: j, imm: p.Value.N, text: text(strconv.FormatInt(int64(p.Value.N), 10))}
}

// str lowers a string comparison of a string the program reads.
func (l *lowering) str(p *wire.Pred, v *value, sl Slot, text string) *kexpr {
	c := p.Value.S
	if p.Value.Kind != wire.VString || p.Op != wire.PEq && p.Op != wire.PPrefix {
		return nil
	}
	size := min(sl.Size, v.strLen)
	if v.op == opComm {
		size = min(sl.Size, CommSize)
	}
	switch {
	case p.Op == wire.PPrefix && c == "":
		return kTrueX
	case c == "":
		return nil // a failed read also reads as "": the monitor decides
	case strings.IndexByte(c, 0) >= 0 || len(c) > size-1:
		return kFalseX // the record's string (NUL-terminated, cut to its buffer) is never so
	}
	off := len(l.consts)
	w := (len(c) + 7) &^ 7
	if v.op == opComm && p.Op == wire.PEq {
		w = (size + 7) &^ 7 // compared whole: the helper pads with NULs
	}
	l.consts = append(l.consts, c...)
	l.consts = append(l.consts, make([]byte, off+w-len(l.consts))...)
	return &kexpr{op: kStr, v: v, s: c, prefix: p.Op == wire.PPrefix, size: size, off: off, text: text}
}

// syscall lowers a comparison of a system call's name.
func (l *lowering) syscall(p *wire.Pred, v *value, text string) *kexpr {
	if p.Value.Kind != wire.VString {
		return nil
	}
	c := p.Value.S
	if l.numbers == nil {
		l.numbers = map[uint64]bool{}
		for _, n := range l.syscalls {
			l.numbers[n] = true
		}
	}
	switch p.Op {
	case wire.PEq:
		n, ok := l.syscalls[c]
		if !ok {
			// The drain names a number its table lacks syscall_N.
			m, err := strconv.ParseUint(strings.TrimPrefix(c, "syscall_"), 10, 64)
			if !strings.HasPrefix(c, "syscall_") || err != nil || strconv.FormatUint(m, 10) != c[len("syscall_"):] || l.numbers[m] {
				return kFalseX
			}
			n = m
		}
		return &kexpr{op: kNum, v: v, jmp: asm.JEq, imm: n, text: fmt.Sprintf("%s (system call %d)", text, n)}
	case wire.PPrefix:
		if strings.HasPrefix(c, "syscall_") || strings.HasPrefix("syscall_", c) {
			return nil // also names numbers the table lacks
		}
		var ns []uint64
		for name, n := range l.syscalls {
			if strings.HasPrefix(name, c) {
				ns = append(ns, n)
			}
		}
		slices.Sort(ns)
		var kids []*kexpr
		var nums []string
		for _, n := range ns {
			kids = append(kids, &kexpr{op: kNum, v: v, jmp: asm.JEq, imm: n, text: fmt.Sprintf("system call %d", n)})
			nums = append(nums, strconv.FormatUint(n, 10))
		}
		switch len(kids) {
		case 0:
			return kFalseX
		case 1:
			kids[0].text = fmt.Sprintf("%s (%s)", text, kids[0].text)
			return kids[0]
		}
		return &kexpr{op: kOr, kids: kids, text: fmt.Sprintf("%s (system calls %s)", text, strings.Join(nums, ", "))}
	}
	return nil
}

// selection jumps to out unless the program's selection (if any) holds.
func (g *gen) selection(file string, b *Binding, out string) {
	if g.sel == nil {
		return
	}
	g.at(file, b.Pos, "selection: "+g.sel.String())
	pass := g.newLabel("selected")
	g.test(g.sel, pass, out)
	g.label(pass)
}

// test jumps to yes when k holds, to no when not.
func (g *gen) test(k *kexpr, yes, no string) {
	switch k.op {
	case kTrue:
		g.emit(asm.Ja.Label(yes))
	case kFalse:
		g.emit(asm.Ja.Label(no))
	case kNot:
		g.test(k.kids[0], no, yes)
	case kAnd, kOr:
		for i, x := range k.kids {
			if i == len(k.kids)-1 {
				g.test(x, yes, no)
				break
			}
			next := g.newLabel("next")
			if k.op == kAnd {
				g.test(x, next, no)
			} else {
				g.test(x, yes, next)
			}
			g.label(next)
		}
	case kNum:
		g.num(k.v, asm.R1)
		if k.low32 {
			g.emit(asm.Mov.Reg32(asm.R1, asm.R1))
		}
		g.jumpImm(k.jmp, asm.R1, k.imm, yes)
		g.emit(asm.Ja.Label(no))
	case kStr:
		g.strTest(k, yes, no)
	}
}

// strTest reads k's string onto the stack (stStr) and compares it with
// its constant in MapConsts.
func (g *gen) strTest(k *kexpr, yes, no string) {
	n := len(k.s)
	words := (n + 7) / 8
	if k.v.op == opComm && !k.prefix {
		words = (k.size + 7) / 8
	}
	g.emit(asm.Mov.Imm(asm.R1, 0))
	for i := range words { // what the read does not write is compared as 0 (and masked)
		g.emit(asm.StoreMem(asm.R10, int16(stStr+8*i), asm.R1, asm.DWord))
	}
	switch k.v.op {
	case opComm:
		// The whole name, NUL-padded: equal when every word is.
		g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, stStr), asm.Mov.Imm(asm.R2, int32(k.size)))
		g.call(asm.FnGetCurrentComm)
	default:
		// Read one byte more than an equal string has with its NUL: a
		// longer one returns more, a shorter one less. A prefix needs
		// its bytes and one more (its NUL or the next character).
		read := min(n+2, k.size)
		if k.prefix {
			read = n + 1
		}
		if k.v.op == opUserStr {
			g.num(k.v.inner, asm.R3)
		} else {
			g.emit(asm.LoadMem(asm.R3, rCtx, int16(8*k.v.n), asm.DWord))
			for _, ld := range k.v.loads {
				g.emit(asm.LoadMem(asm.R3, asm.R3, int16(ld.off), asm.DWord))
			}
			g.emit(asm.Add.Imm(asm.R3, k.v.strOff))
		}
		g.emit(asm.Mov.Reg(asm.R1, asm.R10), asm.Add.Imm(asm.R1, stStr), asm.Mov.Imm(asm.R2, int32(read)))
		if k.v.op == opUserStr {
			g.call(asm.FnProbeReadUserStr)
		} else {
			g.call(asm.FnProbeReadKernelStr)
		}
		if k.prefix {
			g.emit(asm.JSLT.Imm(asm.R0, int32(n+1), no)) // shorter (or unreadable)
		} else {
			g.emit(asm.JNE.Imm(asm.R0, int32(n+1), no))
		}
	}
	for i := range words {
		g.emit(asm.LoadMem(asm.R1, asm.R10, int16(stStr+8*i), asm.DWord),
			asm.LoadMapValue(asm.R2, 0, uint32(k.off+8*i)).WithReference(MapConsts),
			asm.LoadMem(asm.R2, asm.R2, 0, asm.DWord))
		if rest := n - 8*i; rest < 8 && !(k.v.op == opComm && !k.prefix) {
			mask := uint64(1)<<(8*rest) - 1
			g.emit(asm.LoadImm(asm.R3, int64(mask), asm.DWord), asm.And.Reg(asm.R1, asm.R3))
		}
		g.emit(asm.JNE.Reg(asm.R1, asm.R2, no))
	}
	g.emit(asm.Ja.Label(yes))
}

// Stubs. A sensor's programs are not attached themselves: at each probe a
// stub tail-calls the program in slot 0 of its own program array
// (TailMap), so that the resident replaces a program (a new selection)
// with one map update — a firing runs the old program or the new one,
// never both and never neither. A tail call with a constant key is a
// direct jump once the JIT patched it.

// TailMap names the program array of the sensor's i-th program (in
// Sensor.Programs order).
func TailMap(i int) string { return fmt.Sprintf("tail%d", i) }

// TailMapSpec is the spec of a program array of the sensor's.
func (s *Sensor) TailMapSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: shortName("tqm_t_", s.Rel.Name), Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1}
}

// Stubs returns the stubs of the sensor's programs, in Sensor.Programs
// order: each attaches where its program does and tail-calls it. A
// stub's name is its program's with "tqm_t" for "tqm_" (cut to 15
// characters before the suffix): tqm_tSyscall_0 calls tqm_Syscall_0.
func (s *Sensor) Stubs() []*Program {
	var out []*Program
	for i, p := range s.Programs() {
		insns := asm.Instructions{
			asm.LoadMapPtr(asm.R2, 0).WithReference(TailMap(i)), // r1: the context, as the stub got it
			asm.Mov.Imm(asm.R3, 0),
			asm.FnTailCall.Call(),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		}
		// "tqm_t" and the program's name, cut to fit before its suffix.
		cut := strings.LastIndexByte(p.Name, '_')
		name := "tqm_t" + p.Name[len("tqm_"):cut]
		name = name[:min(len(name), 15-(len(p.Name)-cut))] + p.Name[cut:]
		st := *p
		st.Name = name
		st.Spec = programSpec(name, p.Attach, insns)
		st.Source = p.Source[:min(len(p.Source), 1)]
		out = append(out, &st)
	}
	return out
}
