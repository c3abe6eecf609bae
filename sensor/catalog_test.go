package sensor_test

import (
	"os"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/sensor"
)

func compileText(t *testing.T, name, text string) (*algebra.Catalog, error) {
	t.Helper()
	f, err := sdl.Parse(name, text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return sensor.Compile(f)
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name, spec string
		want       string // diagnostics without the "s.sdl:" prefix, one a line
	}{
		{"duplicate entity type",
			"entity type Process, Mailbox\nentity type Process",
			"2:13: entity type Process declared twice (first at 1:13)"},
		{"entity type named like a builtin type",
			"entity type int, enum",
			"1:13: entity type int has the name of a builtin type\n1:18: entity type enum has the name of a builtin type"},
		{"duplicate relation",
			"entity type P\nevent relation Send(p: P)\ninterval relation Send(q: int)",
			"3:19: relation Send declared twice (first at 2:16)"},
		{"duplicate relation, the first with errors of its own",
			"event relation Send(p: Nope)\nevent relation Send(q: int)",
			"1:24: unknown type Nope (want an entity type, int, float, string, bool, time, duration or enum(...))\n" +
				"2:16: relation Send declared twice (first at 1:16)"},
		{"duplicate attribute",
			"event relation E(a: int, b: string, a: float)",
			"1:37: attribute a declared twice in E (first at 1:18)"},
		{"unknown type",
			"entity type P\nevent relation E(p: P, q: Q)",
			"2:27: unknown type Q (want an entity type, int, float, string, bool, time, duration or enum(...))"},
		{"enum member listed twice",
			"event relation E(s: enum(A, B, A))",
			"1:32: enum member A listed twice (first at 1:26)"},
		{"entity relation without an entity type",
			"entity relation Widget(Widget: string)",
			"1:17: entity relation Widget needs an entity type of the same name (declare: entity type Widget)"},
		{"entity relation with the wrong first attribute",
			"entity type Process, Mailbox\nentity relation Mailbox(Id: Process)",
			"2:25: the first attribute of entity relation Mailbox must be its identifier, of type Mailbox"},
		{"entity relation with a non-entity first attribute",
			"entity type Process\nentity relation Process(State: enum(Ready, Done), Process: Process)",
			"2:25: the first attribute of entity relation Process must be its identifier, of type Process"},
		{"strategy on an entity relation",
			"entity type Process\nentity relation Process(Process: Process performer) traced on performer",
			"2:53: entity relation Process is always enabled (an entity source) and takes no strategy"},
		{"role on a non-entity attribute",
			"event relation E(a: int performer, b: enum(X, Y) target)",
			"1:25: a is an int, but only an entity-typed attribute can be the performer\n" +
				"1:50: b is an enum(X, Y), but only an entity-typed attribute can be the target"},
		{"role given twice",
			"entity type P\nevent relation E(a: P initiator, b: P initiator)",
			"2:34: b is the initiator of E, but so is a"},
		{"strategy role with no attribute",
			"entity type P\nevent relation E(a: P performer, b: P) traced on target",
			"2:50: E is traced on its target, but no attribute of E is marked target"},
		{"strategy on a relation without roles",
			"interval relation R(a: int) sampled on performer",
			"1:40: R is sampled on its performer, but no attribute of R is marked performer"},
		{"sampled on the initiator",
			"entity type P\nevent relation E(a: P initiator) sampled on initiator",
			"2:45: a sampled relation is sampled on its performer or its target, not its initiator"},
		{"counter out of range",
			"entity type P\nevent relation E(a: P target) traced then disabled on target counter 65",
			"2:70: counter must be 1 to 64 bits, not 65"},
		{"reserved attribute names",
			"event relation E(from: int, To: int, AT: time)",
			"1:18: attribute name from is reserved for valid time (from, to, at)\n" +
				"1:29: attribute name To is reserved for valid time (from, to, at)\n" +
				"1:38: attribute name AT is reserved for valid time (from, to, at)"},
		{"Clock declared",
			"event relation Clock(n: int)",
			"1:16: Clock is built in and cannot be declared"},
		{"the observation's relations declared",
			"event relation Lost(n: int)\ninterval relation Observed(n: int)",
			"1:16: Lost is built in (the observation) and cannot be declared\n" +
				"2:19: Observed is built in (the observation) and cannot be declared"},
		{"clock twice",
			"clock 10ms\nclock 1s",
			"2:1: clock declared twice (first at 1:1)"},
		{"several errors, sorted by position",
			"entity type P\nevent relation E(a: Q, a: int)\nclock 1s\nclock 2s\nentity type P",
			"2:21: unknown type Q (want an entity type, int, float, string, bool, time, duration or enum(...))\n" +
				"2:24: attribute a declared twice in E (first at 2:18)\n" +
				"4:1: clock declared twice (first at 3:1)\n" +
				"5:13: entity type P declared twice (first at 1:13)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := compileText(t, "s.sdl", tt.spec)
			if err == nil {
				t.Fatalf("no error; catalog %v", cat.Relations)
			}
			if cat != nil {
				t.Error("a catalog returned with errors")
			}
			var want []string
			for _, l := range strings.Split(tt.want, "\n") {
				want = append(want, "s.sdl:"+l)
			}
			if got := testkit.DiagLines(err); got != strings.Join(want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

// TestCompileZeroClock: the parser rejects a zero period, so the compiler's
// own check is exercised on a hand-built tree.
func TestCompileZeroClock(t *testing.T) {
	f := &sdl.File{Name: "z.sdl", Stmts: []sdl.Stmt{
		&sdl.ClockDecl{At: source.Pos{Line: 1, Col: 1}, Text: "0s", Period: 0, ValPos: source.Pos{Line: 1, Col: 7}},
	}}
	_, err := sensor.Compile(f)
	if got, want := testkit.DiagLines(err), "z.sdl:1:7: clock period must be positive, not 0s"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	f.Stmts[0].(*sdl.ClockDecl).Period = -5
	f.Stmts[0].(*sdl.ClockDecl).Text = "-5ns"
	_, err = sensor.Compile(f)
	if got, want := testkit.DiagLines(err), "z.sdl:1:7: clock period must be positive, not -5ns"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPaperSpec(t *testing.T) {
	text, err := os.ReadFile("../testdata/paper/os.sdl")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := compileText(t, "os.sdl", string(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cat.EntityTypes, ","); got != "Processor,Process,Mailbox" {
		t.Errorf("entity types %s", got)
	}
	if cat.ClockPeriod != 1e9 {
		t.Errorf("clock period %d, want 1s", cat.ClockPeriod)
	}
	tests := []struct {
		name, class, variant string
		counter              int
		flag                 string // the flag holder's name
		sig                  string
	}{
		{"Processor", "entity", "", 0, "", "entity relation Processor(Processor: Processor)"},
		{"Process", "entity", "", 0, "", "entity relation Process(Process: Process, State: enum(Ready, Running, Waiting, Done))"},
		{"Mailbox", "entity", "", 0, "", "entity relation Mailbox(Mailbox: Mailbox)"},
		{"SendMessage", "event", "T:I", 1, "Process",
			"event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target) traced on initiator"},
		{"RunningOn", "interval", "S:P", 1, "Processor",
			"interval relation RunningOn(Process: Process target, Processor: Processor performer) sampled on performer"},
		{"Waiting", "interval", "D:T", 8, "Mailbox",
			"interval relation Waiting(Process: Process initiator, Mailbox: Mailbox target) traced then disabled on target"},
	}
	if len(cat.Relations) != len(tests) {
		t.Fatalf("%d relations, want %d", len(cat.Relations), len(tests))
	}
	for i, tt := range tests {
		r := cat.Relations[i]
		if r.Name != tt.name || r.Class.String() != tt.class || r.Strategy.Variant() != tt.variant || r.Strategy.Counter != tt.counter {
			t.Errorf("relation %d: %s %s %q counter %d, want %s %s %q counter %d",
				i, r.Name, r.Class, r.Strategy.Variant(), r.Strategy.Counter, tt.name, tt.class, tt.variant, tt.counter)
		}
		flag := ""
		if r.FlagHolder >= 0 {
			flag = r.Attrs[r.FlagHolder].Name
		}
		if flag != tt.flag {
			t.Errorf("%s: flag holder %q, want %q", r.Name, flag, tt.flag)
		}
		if got := r.Signature(); got != tt.sig {
			t.Errorf("signature\n got  %s\n want %s", got, tt.sig)
		}
		if r.File != "os.sdl" || !r.Pos.IsValid() || r.Derived {
			t.Errorf("%s: file %q pos %v derived %v", r.Name, r.File, r.Pos, r.Derived)
		}
		if cat.Lookup(tt.name) != r {
			t.Errorf("Lookup(%s)", tt.name)
		}
	}
	for _, et := range []string{"Processor", "Process", "Mailbox"} {
		if r := cat.EntityRelation(et); r == nil || r.Name != et {
			t.Errorf("EntityRelation(%s) = %v", et, r)
		}
	}
}

func TestVariants(t *testing.T) {
	spec := `entity type P, Q
clock 10ms
event relation TP(a: P performer) traced on performer
event relation TI(a: P initiator) traced on initiator
event relation TT(a: P target) traced on target
interval relation SP(a: P performer) sampled on performer
interval relation ST(a: P, b: Q target) sampled on target
event relation DP(a: P performer) traced then disabled on performer
event relation DI(a: P initiator) traced then disabled on initiator
interval relation DT(x: int, a: P target) traced then disabled on target
event relation TC(a: P performer) traced on performer counter 4
event relation DC(a: P target) traced then disabled on target counter 64
event relation None(a: P performer)
entity relation P(P: P)
`
	cat, err := compileText(t, "v.sdl", spec)
	if err != nil {
		t.Fatal(err)
	}
	if cat.ClockPeriod != 10e6 {
		t.Errorf("clock period %d, want 10ms", cat.ClockPeriod)
	}
	want := map[string]struct {
		variant string
		counter int
		flag    int
	}{
		"TP": {"T:P", 1, 0}, "TI": {"T:I", 1, 0}, "TT": {"T:T", 1, 0},
		"SP": {"S:P", 1, 0}, "ST": {"S:T", 1, 1},
		"DP": {"D:P", 8, 0}, "DI": {"D:I", 8, 0}, "DT": {"D:T", 8, 1},
		"TC": {"T:P", 4, 0}, "DC": {"D:T", 64, 0},
		"None": {"", 0, -1}, "P": {"", 0, -1},
	}
	for _, r := range cat.Relations {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected relation %s", r.Name)
			continue
		}
		if r.Strategy.Variant() != w.variant || r.Strategy.Counter != w.counter || r.FlagHolder != w.flag {
			t.Errorf("%s: %q counter %d flag %d, want %q counter %d flag %d",
				r.Name, r.Strategy.Variant(), r.Strategy.Counter, r.FlagHolder, w.variant, w.counter, w.flag)
		}
		delete(want, r.Name)
	}
	if len(want) != 0 {
		t.Errorf("missing relations %v", want)
	}
	// An entity type declared after its use is fine; P's entity relation is
	// found by type.
	if r := cat.EntityRelation("P"); r == nil || r.Class != algebra.ClassEntity {
		t.Errorf("EntityRelation(P) = %v", r)
	}
	if cat.EntityRelation("Q") != nil {
		t.Error("Q has no entity relation")
	}
}

// TestWholeSensors: a traced interval relation whose sensor's `to` clause
// binds values is reported whole at its end (Strategy.Whole); one bound
// from … to … without values at the end, or sampled, is not.
func TestWholeSensors(t *testing.T) {
	cat, err := compileText(t, "whole.sdl", `entity type Process
entity relation Process(Process: Process)
interval relation Call(Process: Process performer, Result: int)
    traced on performer
sensor Call
    from tracepoint raw_syscalls:sys_enter (Process = tgid)
    to tracepoint raw_syscalls:sys_exit (Result = arg1)
interval relation Run(Process: Process performer)
    traced on performer
sensor Run
    from tracepoint sched:sched_switch (Process = tgid) key arg1
    to tracepoint sched:sched_switch key arg2
interval relation Held(Process: Process performer, N: int)
    sampled on performer
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"Call": true, "Run": false, "Held": false} {
		if got := cat.Lookup(name).Strategy.Whole; got != want {
			t.Errorf("%s: Whole = %v, want %v", name, got, want)
		}
	}
	if s := cat.Lookup("Call").Strategy.String(); !strings.Contains(s, "reported whole") {
		t.Errorf("Call's strategy reads %q, which does not say it is reported whole", s)
	}
}
