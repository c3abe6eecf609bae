package bpfgen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/sensor"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fakeKernel has the tracepoints linux.sdl uses, with the layouts of
// this project's reference kernel (6.18), and two executables: a C one
// and a Go one.
type fakeKernel struct{}

func fakeTypes() map[string][]btf.Type {
	ulong := &btf.Int{Name: "long unsigned int", Size: 8}
	long := &btf.Int{Name: "long int", Size: 8, Encoding: btf.Signed}
	uint := &btf.Int{Name: "unsigned int", Size: 4}
	pidT := &btf.Typedef{Name: "pid_t", Type: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}
	boolT := &btf.Typedef{Name: "bool", Type: &btf.Int{Name: "_Bool", Size: 1, Encoding: btf.Bool}}
	char := &btf.Int{Name: "char", Size: 1, Encoding: btf.Char}
	regs := &btf.Struct{Name: "pt_regs", Size: 168}
	for _, name := range []string{"r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax", "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"} {
		regs.Members = append(regs.Members, btf.Member{Name: name, Type: ulong, Offset: btf.Bits(8 * 8 * uint32(ptRegs[name]/8))})
	}
	atomic := &btf.Struct{Name: "", Size: 4, Members: []btf.Member{{Name: "counter", Type: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}}}
	signal := &btf.Struct{Name: "signal_struct", Size: 64, Members: []btf.Member{{Name: "live", Type: &btf.Typedef{Name: "atomic_t", Type: atomic}, Offset: btf.Bits(32)}}}
	task := &btf.Struct{Name: "task_struct", Size: 2048}
	task.Members = []btf.Member{
		{Name: "__state", Type: uint, Offset: btf.Bits(24 * 8)},
		// An anonymous union, as the kernel has them.
		{Name: "", Type: &btf.Union{Size: 8, Members: []btf.Member{{Name: "pid", Type: pidT}}}, Offset: btf.Bits(1264 * 8)},
		{Name: "tgid", Type: pidT, Offset: btf.Bits(1268 * 8)},
		{Name: "comm", Type: &btf.Array{Type: char, Nelems: 16}, Offset: btf.Bits(1752 * 8)},
		{Name: "signal", Type: &btf.Pointer{Target: signal}, Offset: btf.Bits(1848 * 8)},
	}
	tp := &btf.Pointer{Target: task}
	return map[string][]btf.Type{
		"sys_enter":          {&btf.Pointer{Target: regs}, long},
		"sys_exit":           {&btf.Pointer{Target: regs}, long},
		"sched_switch":       {boolT, tp, tp, uint},
		"sched_wakeup":       {tp},
		"sched_process_fork": {tp, tp},
		"sched_process_exec": {tp, pidT, &btf.Pointer{Target: &btf.Struct{Name: "linux_binprm"}}},
		"sched_process_exit": {tp, boolT},
	}
}

func (fakeKernel) TracepointArgs(event string) ([]btf.Type, error) {
	if args, ok := fakeTypes()[event]; ok {
		return args, nil
	}
	return nil, errors.New("the kernel has no such tracepoint")
}

func (fakeKernel) Func(path, symbol string) (*Func, error) {
	switch {
	case path == "/bin/prog" && symbol == "work":
		return &Func{}, nil
	case path == "/bin/goprog" && symbol == "main.work":
		return &Func{Go: true, Returns: []uint64{0x2a, 0x51}}, nil
	}
	return nil, fmt.Errorf("no function %s in %s's symbol table", symbol, path)
}

// uprobeSDL extends linux.sdl with uprobe sensors on the fake
// executables, and a traced-then-disabled relation.
const uprobeSDL = `event relation Work(Process: Process performer, Thread: Thread, N: int) traced on performer
sensor Work at uprobe "/bin/prog" "work" (Process = tgid, Thread = pid, N = arg0)
interval relation WorkCall(Process: Process performer, N: int) traced on performer
sensor WorkCall at uprobe "/bin/goprog" "main.work" (Process = tgid, N = arg1)
interval relation WorkResult(Process: Process performer, Command: string, R: int) traced on performer
sensor WorkResult from uprobe "/bin/prog" "work" (Process = tgid, Command = comm) to uretprobe "/bin/prog" "work" (R = ret)
event relation FirstWakeup(Waker: Thread, Wakee: Thread target) traced then disabled on target
sensor FirstWakeup at tracepoint sched:sched_wakeup (Waker = pid, Wakee = arg0.pid) when cpu < 64
`

func compileFiles(t *testing.T, texts ...[2]string) (*Spec, error) {
	t.Helper()
	var files []*sdl.File
	merged := &sdl.File{Name: texts[0][0]}
	for _, x := range texts {
		f, err := sdl.Parse(x[0], x[1])
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		merged.Stmts = append(merged.Stmts, f.Stmts...)
	}
	cat, err := sensor.Compile(merged)
	if err != nil {
		t.Fatal(err)
	}
	return Compile(cat, files, fakeKernel{})
}

func linuxSDL(t *testing.T) string {
	text, err := os.ReadFile("../../resident/kernel/linux.sdl")
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// The programs generated for linux.sdl and the uprobe sensors, as a
// listing: generation is deterministic, and any change to it shows here.
func TestGolden(t *testing.T) {
	spec, err := compileFiles(t, [2]string{"linux.sdl", linuxSDL(t)}, [2]string{"uprobes.sdl", uprobeSDL})
	if err != nil {
		t.Fatal(err)
	}
	got := spec.Listing()
	again, _ := compileFiles(t, [2]string{"linux.sdl", linuxSDL(t)}, [2]string{"uprobes.sdl", uprobeSDL})
	if again.Listing() != got {
		t.Fatal("two compilations differ")
	}
	const path = "testdata/linux.golden"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("listing differs from %s (go test ./sensor/bpfgen -update to accept):\n%s", path, firstDiff(string(want), got))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return ""
}

// What the spec says shows in the programs: the sensors, their modes,
// layouts and attach points.
func TestSpecShape(t *testing.T) {
	spec, err := compileFiles(t, [2]string{"linux.sdl", linuxSDL(t)}, [2]string{"uprobes.sdl", uprobeSDL})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Syscall": "event", "SyscallCall": "whole", "FileOpen": "event,event,event", "RunningOn": "begin/end",
		"OffCPU": "begin/end", "Wakeup": "event", "Work": "event", "WorkCall": "begin/end", "WorkResult": "whole",
		"FirstWakeup": "event",
	}
	for _, s := range spec.Sensors {
		var modes []string
		for _, b := range s.Bindings {
			modes = append(modes, b.Mode.String())
		}
		if got := strings.Join(modes, ","); got != want[s.Rel.Name] {
			t.Errorf("%s: modes %s, want %s", s.Rel.Name, got, want[s.Rel.Name])
		}
		delete(want, s.Rel.Name)
		if spec.Catalog.Relations[s.ID] != s.Rel {
			t.Errorf("%s: ID %d is not its catalog index", s.Rel.Name, s.ID)
		}
		for _, p := range s.Programs() {
			if !strings.HasPrefix(p.Name, "tqm_") || len(p.Name) > 15 {
				t.Errorf("program name %q", p.Name)
			}
			if len(p.Source) == 0 || p.Source[0].Off != 0 {
				t.Errorf("%s: no source for its first instruction: %+v", p.Name, p.Source)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("sensors missing: %v", want)
	}
	call := spec.Sensors[len(spec.Sensors)-3] // WorkCall
	if call.Rel.Name != "WorkCall" {
		t.Fatalf("order: %s", call.Rel.Name)
	}
	ps := call.Programs()
	if ps[0].Attach.String() != "uprobe /bin/goprog main.work+0x0" || ps[1].Attach.String() != "uprobe /bin/goprog main.work+0x2a,+0x51" {
		t.Errorf("Go call attach points: %s, %s", ps[0].Attach, ps[1].Attach)
	}
	res := spec.Sensors[len(spec.Sensors)-2].Programs()
	if res[1].Attach.Kind != AttachUretprobe {
		t.Errorf("C return: %s", res[1].Attach)
	}
	if len(spec.Entities) != 3 {
		t.Errorf("entity programs: %d", len(spec.Entities))
	}
}

func TestBindingErrors(t *testing.T) {
	base := `entity type Process, Thread, Processor, Mailbox
event relation E(Process: Process performer, Thread: Thread, Name: string) traced on performer
interval relation I(Process: Process performer, R: int) traced on performer
event relation S(Process: Process performer) sampled on performer
event relation M(Mailbox: Mailbox performer) traced on performer
event relation F(Process: Process performer, X: float) traced on performer
event relation K(Process: Process performer, St: enum(Running, Sleeping)) traced on performer
`
	tests := []struct{ in, want string }{
		{"sensor Nope at tracepoint raw_syscalls:sys_enter (Process = tgid)", "t.sdl:8:8: no relation Nope to bind a sensor to"},
		{"sensor S at tracepoint raw_syscalls:sys_enter (Process = tgid)", "t.sdl:8:8: S is sampled: kernel sensors are traced (traced, or traced then disabled)"},
		{"sensor M at tracepoint raw_syscalls:sys_enter (Mailbox = tgid)", "t.sdl:8:8: M's flag holder Mailbox is a Mailbox: kernel sensors keep flags on Process, Thread or Processor"},
		{"sensor E at tracepoint raw_syscalls:nope (Process = tgid, Thread = pid, Name = comm)", "t.sdl:8:37: tracepoint raw_syscalls:nope: the kernel has no such tracepoint"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid)", "t.sdl:8:8: sensor E does not bind E.Name"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid, Name = arg1)",
			"t.sdl:8:85: Name is a string: arg1 is a number (convert it: syscall(…), or read a string: comm, user_string(…), a char array)"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid, Name = comm, Name = comm)", "t.sdl:8:91: E.Name bound twice (first at 8:78)"},
		{"sensor E at tracepoint sched:sched_switch (Process = arg2.tgid.x, Thread = arg5, Name = arg1.nope)",
			"t.sdl:8:64: arg2.tgid is pid_t, not a structure\nt.sdl:8:76: tracepoint sched:sched_switch has 4 arguments (arg0 to arg3), not arg5\nt.sdl:8:94: struct task_struct has no field nope"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = ret, Thread = pid, Name = foo(arg1))",
			"t.sdl:8:58: ret is a function's return value: only at a uretprobe (tracepoint raw_syscalls:sys_enter has none)\nt.sdl:8:84: unknown function foo (want user_string, syscall or task_state)"},
		{"sensor I at tracepoint raw_syscalls:sys_enter (Process = tgid, R = 1)",
			"t.sdl:8:13: I is an interval relation: bind it with `from PROBE … to PROBE`, or `at uprobe` for a call from entry to return"},
		{"sensor E from tracepoint raw_syscalls:sys_enter (Process = tgid) to tracepoint raw_syscalls:sys_exit", "t.sdl:8:1: E is an event relation: bind it with `at`, not `from … to …`"},
		{"sensor I from tracepoint raw_syscalls:sys_enter (R = 1) to tracepoint raw_syscalls:sys_exit (Process = tgid)",
			"t.sdl:8:60: I's flag holder Process must be bound where the interval begins (the enable test is made there)"},
		{`sensor I from uprobe "/bin/prog" "work" (Process = tgid, R = arg7) to uretprobe "/bin/prog" "nope"`,
			"t.sdl:8:93: uretprobe \"nope\": no function nope in /bin/prog's symbol table"},
		{`sensor I from uprobe "/bin/prog" "work" (Process = tgid) to uretprobe "/bin/prog" "work" (R = arg0)`,
			"t.sdl:8:95: arg0 is read at a function's entry; at its return only ret is known"},
		{"sensor F at tracepoint raw_syscalls:sys_enter (Process = tgid, X = arg1)", "t.sdl:8:68: X is a float: kernel sensors fill numbers, strings, entities and enums"},
		{"sensor K at tracepoint sched:sched_switch (Process = tgid, St = task_state(arg3))",
			"t.sdl:8:65: St takes task_state(…), whose values are [Preempted Sleeping Blocked Idle Other]: add Preempted to its enum"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid, Name = comm) key comm when comm = 3 and syscall(arg1) = 2",
			"t.sdl:8:95: a key is a number, not comm\nt.sdl:8:105: a condition compares a number, not comm\nt.sdl:8:118: a condition compares a number, not syscall(arg1)"},
		{"sensor E at tracepoint raw_syscalls:sys_enter (Process = comm & 3, Thread = syscall(arg1 & 7), Name = user_string(comm))",
			"t.sdl:8:65: cannot mask comm: it is a string\nt.sdl:8:77: Thread is a Thread, identified by a number: not syscall(arg1 & 7)\nt.sdl:8:115: user_string takes a number, not comm"},
	}
	for _, tt := range tests {
		f, err := sdl.Parse("t.sdl", base+tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		cat, err := sensor.Compile(f)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		_, err = Compile(cat, []*sdl.File{f}, fakeKernel{})
		if err == nil {
			t.Errorf("%s: no error, want %s", tt.in, tt.want)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%s:\ngot  %s\nwant %s", tt.in, err, tt.want)
		}
	}
}

// The decrement of traced-then-disabled sensors fetches the old counter:
// its immediate must say BPF_ADD | BPF_FETCH once marshalled.
func TestFetchAddEncoding(t *testing.T) {
	var b bytes.Buffer
	if _, err := fetchAdd(asm.R0, asm.R1).Marshal(&b, binary.LittleEndian); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(b.Bytes()[4:8]); got != 0x01 {
		t.Errorf("fetch-add immediate %#x, want 0x01 (% x)", got, b.Bytes())
	}
}
