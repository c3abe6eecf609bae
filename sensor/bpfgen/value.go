package bpfgen

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf/btf"

	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
)

// What a binding expression reads, resolved against its probe.

// opKind is how a value is computed.
type opKind uint8

const (
	opPid       opKind = iota + 1 // the current thread's ID
	opTgid                        // the current thread group's ID
	opCPU                         // the current CPU
	opComm                        // the current command name (string)
	opTask                        // the current task's address (stable across exec, unlike its pid)
	opConst                       // a constant
	opArg                         // a tracepoint argument (ctx[n]), then loads through BTF pointers
	opReg                         // a register of a uprobe's context (pt_regs at offset n)
	opUserStr                     // a string in user memory at inner
	opKernelStr                   // a char array in kernel memory (opArg's loads, then +strOff)
)

// load reads size bytes at off from the pointer in the register.
type load struct {
	off    int32
	size   int
	signed bool
}

// value is a resolved binding expression.
type value struct {
	pos  source.Pos
	text string
	op   opKind
	n    int32  // opArg: the argument; opReg: the register's offset
	imm  uint64 // opConst
	// loads after the argument (opArg, opKernelStr): each reads through
	// the pointer the previous one produced.
	loads []load
	// final narrowing of the argument itself (opArg without loads).
	size    int
	signed  bool
	strOff  int32 // opKernelStr: the array's offset from the last pointer
	strLen  int   // strings: the buffer size
	inner   *value
	mask    uint64
	hasMask bool
	decode  Decoder
}

func (v *value) isStr() bool { return v.op == opComm || v.op == opUserStr || v.op == opKernelStr }

// usesPid reports whether computing v reads the current pid/tgid.
func (v *value) usesPid() bool {
	return v != nil && (v.op == opPid || v.op == opTgid || v.inner.usesPid())
}

// UserStringSize is the buffer a user_string value is read into: longer
// strings are cut.
const UserStringSize = 256

// x86-64 struct pt_regs offsets (the UAPI layout uprobe contexts have).
var ptRegs = map[string]int32{
	"r15": 0, "r14": 8, "r13": 16, "r12": 24, "bp": 32, "bx": 40, "r11": 48, "r10": 56,
	"r9": 64, "r8": 72, "ax": 80, "cx": 88, "dx": 96, "si": 104, "di": 112, "orig_ax": 120,
	"ip": 128, "cs": 136, "flags": 144, "sp": 152, "ss": 160,
}

// Integer argument registers: the System V ABI and Go's internal ABI.
var (
	cArgRegs  = []string{"di", "si", "dx", "cx", "r8", "r9"}
	goArgRegs = []string{"ax", "bx", "cx", "di", "si", "r8", "r9", "r10", "r11"}
)

// probeCtx is what a probe's programs can read.
type probeCtx struct {
	kind  ProbeKind
	args  []btf.Type // tracepoints
	goABI bool       // uprobes in Go binaries
	ret   bool       // at a function's return: ret is available, arguments are not
	name  string     // for messages: "tracepoint sched:sched_switch"
}

// resolver turns binding expressions into values, reporting problems at
// their places.
type resolver struct {
	errf func(pos source.Pos, format string, args ...any)
}

func (r *resolver) fail(pos source.Pos, format string, args ...any) *value {
	r.errf(pos, format, args...)
	return nil
}

// resolve resolves x read at probe p; it returns nil after reporting.
func (r *resolver) resolve(x sdl.BExpr, p *probeCtx) *value {
	text := sdl.FormatBExpr(x)
	switch e := x.(type) {
	case *sdl.BNum:
		return &value{pos: e.At, text: text, op: opConst, imm: e.Value}
	case *sdl.BMask:
		v := r.resolve(e.X, p)
		if v == nil {
			return nil
		}
		if v.isStr() {
			return r.fail(e.Mask.At, "cannot mask %s: it is a string", sdl.FormatBExpr(e.X))
		}
		if v.hasMask || v.decode != DecodeNone {
			return r.fail(e.Mask.At, "mask a plain number, not %s", sdl.FormatBExpr(e.X))
		}
		v.mask, v.hasMask, v.text = e.Mask.Value, true, text
		return v
	case *sdl.BCall:
		in := r.resolve(e.Arg, p)
		if in == nil {
			return nil
		}
		if in.isStr() || in.decode != DecodeNone {
			return r.fail(e.Arg.Pos(), "%s takes a number, not %s", e.Func.Name, sdl.FormatBExpr(e.Arg))
		}
		switch e.Func.Name {
		case "user_string":
			return &value{pos: e.Func.At, text: text, op: opUserStr, inner: in, strLen: UserStringSize}
		case "syscall":
			in.decode, in.text, in.pos = DecodeSyscall, text, e.Func.At
			return in
		case "task_state":
			in.decode, in.text, in.pos = DecodeTaskState, text, e.Func.At
			return in
		}
		return r.fail(e.Func.At, "unknown function %s (want user_string, syscall or task_state)", e.Func.Name)
	case *sdl.BRef:
		return r.ref(e, p, text)
	}
	return nil
}

func (r *resolver) ref(e *sdl.BRef, p *probeCtx, text string) *value {
	head := e.Path[0]
	name := head.Name
	v := &value{pos: head.At, text: text}
	simple := func(op opKind) *value {
		if len(e.Path) > 1 {
			return r.fail(e.Path[1].At, "%s has no fields", name)
		}
		v.op = op
		if op == opComm {
			v.strLen = CommSize
		}
		return v
	}
	switch name {
	case "pid":
		return simple(opPid)
	case "tgid":
		return simple(opTgid)
	case "cpu":
		return simple(opCPU)
	case "comm":
		return simple(opComm)
	case "task":
		return simple(opTask)
	case "ret":
		if p.kind == AttachTracepoint || !p.ret {
			return r.fail(head.At, "ret is a function's return value: only at a uretprobe (%s has none)", p.name)
		}
		if v = simple(opReg); v != nil {
			v.n = ptRegs["ax"]
		}
		return v
	}
	n, ok := argIndex(name)
	if !ok {
		return r.fail(head.At, "unknown value %s (want pid, tgid, cpu, comm, task, ret, argN, a number or a function)", name)
	}
	if p.kind != AttachTracepoint {
		regs := cArgRegs
		if p.goABI {
			regs = goArgRegs
		}
		switch {
		case p.ret:
			return r.fail(head.At, "%s is read at a function's entry; at its return only ret is known", name)
		case n >= len(regs):
			return r.fail(head.At, "%s: a uprobe reads the first %d integer arguments (arg0 to arg%d)", name, len(regs), len(regs)-1)
		case len(e.Path) > 1:
			return r.fail(e.Path[1].At, "%s is a register: uprobe arguments have no fields", name)
		}
		v.op, v.n = opReg, ptRegs[regs[n]]
		return v
	}
	if n >= len(p.args) {
		return r.fail(head.At, "%s has %d arguments (arg0 to arg%d), not %s", p.name, len(p.args), len(p.args)-1, name)
	}
	v.op, v.n = opArg, int32(n)
	t := underlying(p.args[n])
	if len(e.Path) == 1 {
		size, signed, ok := scalar(t)
		if !ok {
			return r.fail(head.At, "%s is %s, not a number", name, typeName(p.args[n]))
		}
		v.size, v.signed = size, signed
		return v
	}
	// A path through structures: t must point to one.
	where := name
	var comp btf.Type
	if ptr, ok := t.(*btf.Pointer); ok {
		comp = underlying(ptr.Target)
	}
	var acc int32
	for i, id := range e.Path[1:] {
		members, ok := composite(comp)
		if !ok {
			return r.fail(id.At, "%s is not a structure or a pointer to one", where)
		}
		mt, off, ok := findMember(members, id.Name)
		if !ok {
			return r.fail(id.At, "%s has no field %s", typeName(comp), id.Name)
		}
		acc += off
		where += "." + id.Name
		last := i == len(e.Path)-2
		u := underlying(mt)
		if !last {
			switch x := u.(type) {
			case *btf.Pointer:
				v.loads = append(v.loads, load{off: acc, size: 8})
				comp, acc = underlying(x.Target), 0
			case *btf.Struct, *btf.Union:
				comp = u
			default:
				return r.fail(e.Path[i+2].At, "%s is %s, not a structure", where, typeName(mt))
			}
			continue
		}
		if arr, ok := u.(*btf.Array); ok {
			if s, _, ok := scalar(underlying(arr.Type)); ok && s == 1 && arr.Nelems > 0 {
				v.op, v.strOff, v.strLen = opKernelStr, acc, int(arr.Nelems)
				return v
			}
		}
		size, signed, ok := scalar(u)
		if !ok {
			return r.fail(id.At, "%s is %s, not a number or a string", where, typeName(mt))
		}
		v.loads = append(v.loads, load{off: acc, size: size, signed: signed})
	}
	return v
}

// argIndex reads argN.
func argIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "arg")
	if !ok || rest == "" || len(rest) > 2 {
		return 0, false
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// underlying strips typedefs and qualifiers.
func underlying(t btf.Type) btf.Type {
	for range 32 {
		switch x := t.(type) {
		case *btf.Typedef:
			t = x.Type
		case *btf.Volatile:
			t = x.Type
		case *btf.Const:
			t = x.Type
		case *btf.Restrict:
			t = x.Type
		case *btf.TypeTag:
			t = x.Type
		default:
			return t
		}
	}
	return t
}

// scalar reports a number's size and signedness (integers, enums,
// pointers).
func scalar(t btf.Type) (size int, signed, ok bool) {
	switch x := t.(type) {
	case *btf.Int:
		return int(x.Size), x.Encoding&btf.Signed != 0, x.Size <= 8
	case *btf.Enum:
		return int(x.Size), x.Signed, x.Size <= 8
	case *btf.Pointer:
		return 8, false, true
	}
	return 0, false, false
}

func composite(t btf.Type) ([]btf.Member, bool) {
	switch x := t.(type) {
	case *btf.Struct:
		return x.Members, true
	case *btf.Union:
		return x.Members, true
	}
	return nil, false
}

// findMember finds a field by name, looking into anonymous structures and
// unions; it returns its type and byte offset.
func findMember(ms []btf.Member, name string) (btf.Type, int32, bool) {
	for _, m := range ms {
		if m.BitfieldSize != 0 {
			continue
		}
		if m.Name == name {
			return m.Type, int32(m.Offset.Bytes()), true
		}
		if m.Name == "" {
			if inner, ok := composite(underlying(m.Type)); ok {
				if t, off, ok := findMember(inner, name); ok {
					return t, int32(m.Offset.Bytes()) + off, true
				}
			}
		}
	}
	return nil, 0, false
}

func typeName(t btf.Type) string {
	if t == nil {
		return "nothing"
	}
	switch x := underlying(t).(type) {
	case *btf.Pointer:
		return "a pointer to " + typeName(x.Target)
	case *btf.Struct:
		return "struct " + x.Name
	case *btf.Union:
		return "union " + x.Name
	case *btf.Array:
		return fmt.Sprintf("an array of %d %s", x.Nelems, typeName(x.Type))
	case *btf.Void:
		return "void"
	}
	if n := t.TypeName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", t)
}
