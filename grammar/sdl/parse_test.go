package sdl

import (
	"os"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
)

// frontEnd runs the shared front-end checks on SDL.
var frontEnd = &fronttest.Front[File, Stmt]{
	Name:      "t.sdl",
	Parse:     Parse,
	Stmts:     func(f *File) []Stmt { return f.Stmts },
	Format:    FormatStmt,
	CheckTree: checkTree,
}

// The docs/sdl.md example.
const sdlExample = `entity type Processor, Process, Mailbox

entity relation Processor(Processor: Processor)
entity relation Process(Process: Process, State: enum(Ready, Running, Waiting, Done))
entity relation Mailbox(Mailbox: Mailbox)

event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target)
    traced on initiator
interval relation RunningOn(Process: Process target, Processor: Processor performer)
    sampled on performer
interval relation Waiting(Process: Process initiator, Mailbox: Mailbox target)
    traced then disabled on target counter 8
`

var exampleStmts = []string{
	"entity type Processor, Process, Mailbox",
	"entity relation Processor(Processor: Processor)",
	"entity relation Process(Process: Process, State: enum(Ready, Running, Waiting, Done))",
	"entity relation Mailbox(Mailbox: Mailbox)",
	"event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target) traced on initiator",
	"interval relation RunningOn(Process: Process target, Processor: Processor performer) sampled on performer",
	"interval relation Waiting(Process: Process initiator, Mailbox: Mailbox target) traced then disabled on target counter 8",
}

func TestParseExamples(t *testing.T) {
	osSDL, err := os.ReadFile("testdata/os.sdl")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"docs/sdl.md": sdlExample, "os.sdl": string(osSDL)} {
		t.Run(name, func(t *testing.T) {
			f := frontEnd.ParseOK(t, text)
			got := strings.TrimSuffix(FormatFile(f), "\n")
			if want := strings.Join(exampleStmts, "\n"); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
			frontEnd.RoundTrip(t, f)
		})
	}
}

// The AST in detail, for the example.
func TestExampleTree(t *testing.T) {
	f := frontEnd.ParseOK(t, sdlExample)
	et := f.Stmts[0].(*EntityTypeDecl)
	if et.At != (pos(1, 1)) || len(et.Names) != 3 || et.Names[2].Name != "Mailbox" || et.Names[2].At != (pos(1, 33)) {
		t.Errorf("entity type: %+v", et)
	}
	proc := f.Stmts[2].(*RelationDecl)
	if proc.Class != ClassEntity || proc.Name.Name != "Process" || proc.Strategy != nil || len(proc.Attrs) != 2 {
		t.Errorf("Process: %+v", proc)
	}
	state := proc.Attrs[1]
	if state.Name.Name != "State" || state.Type.Name != "enum" || state.Type.At != (pos(4, 50)) || len(state.Type.Enum) != 4 ||
		state.Type.Enum[3].Name != "Done" || state.Role != RoleNone || state.RolePos.IsValid() {
		t.Errorf("State: %+v %+v", state, state.Type)
	}
	send := f.Stmts[4].(*RelationDecl)
	if send.Class != ClassEvent || send.At != (pos(7, 1)) {
		t.Errorf("SendMessage: %+v", send)
	}
	if a := send.Attrs[0]; a.Type.Name != "Process" || a.Role != RoleInitiator || a.RolePos != (pos(7, 45)) || a.Pos() != (pos(7, 28)) {
		t.Errorf("SendMessage.Process: %+v", a)
	}
	if s := send.Strategy; s.Kind != Traced || s.At != (pos(8, 5)) || s.On != RoleInitiator || s.OnPos != (pos(8, 15)) || s.Counter != 0 {
		t.Errorf("SendMessage strategy: %+v", s)
	}
	run := f.Stmts[5].(*RelationDecl)
	if s := run.Strategy; run.Class != ClassInterval || s.Kind != Sampled || s.On != RolePerformer {
		t.Errorf("RunningOn: %+v %+v", run, s)
	}
	wait := f.Stmts[6].(*RelationDecl)
	if s := wait.Strategy; s.Kind != TracedThenDisabled || s.On != RoleTarget || s.Counter != 8 || s.OnPos != (pos(12, 29)) || s.CounterPos != (pos(12, 44)) {
		t.Errorf("Waiting strategy: %+v", s)
	}
}

func TestParseForms(t *testing.T) {
	text := `// keywords are case-insensitive, names are not; any keyword may be a name
ENTITY TYPE type, relation, Entity; -- three entity types
Clock 10ms;
clock 1h30m
event Relation event(entity: entity, on: enum(on, off, enum) Target, counter: int, time: time)
  TRACED THEN disabled ON target COUNTER 16;;
interval relation interval(performer: performer performer) sampled on performer
`
	f := frontEnd.ParseOK(t, text)
	want := []string{
		"entity type type, relation, Entity",
		"clock 10ms",
		"clock 1h30m",
		"event relation event(entity: entity, on: enum(on, off, enum) target, counter: int, time: time) traced then disabled on target counter 16",
		"interval relation interval(performer: performer performer) sampled on performer",
	}
	if got := strings.TrimSuffix(FormatFile(f), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	c := f.Stmts[1].(*ClockDecl)
	if c.Period != 10e6 || c.Text != "10ms" || c.At != (pos(3, 1)) || c.ValPos != (pos(3, 7)) {
		t.Errorf("clock: %+v", c)
	}
	if c := f.Stmts[2].(*ClockDecl); c.Period != 5400e9 {
		t.Errorf("clock: %+v", c)
	}
	frontEnd.RoundTrip(t, f)
	if f, err := Parse("e", "-- nothing\n// at all\n"); err != nil || len(f.Stmts) != 0 {
		t.Errorf("empty spec: %v %v", f, err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"entity what", "entity foo",
			[]string{"t.sdl:1:8: unexpected 'foo', expected one of: 'type', 'relation'"}},
		{"missing comma", "event relation X(a: b c)",
			[]string{"t.sdl:1:23: unexpected 'c', expected one of: ')', ','"}},
		{"missing role", "event relation X(a: b) traced on",
			[]string{"t.sdl:1:33: unexpected end of input, expected one of: 'performer', 'initiator', 'target'"}},
		{"missing type", "event relation X(a:)",
			[]string{"t.sdl:1:20: unexpected ')', expected one of: name, 'enum'"}},
		{"missing on", "event relation Y(b: c) traced target",
			[]string{"t.sdl:1:31: unexpected 'target', expected one of: 'then', 'on'"}},
		{"clock needs a duration", "clock 5",
			[]string{"t.sdl:1:7: unexpected '5', expected duration"}},
		{"after a relation", "event relation X(a: b) x",
			[]string{"t.sdl:1:24: unexpected 'x', expected a strategy or a new statement"}},
		{"after an entity type list", "entity type a b",
			[]string{"t.sdl:1:15: unexpected 'b', expected ',' or a new statement"}},
		{"bad counters", "event relation X(a: b) traced on performer counter 0\nevent relation Y(a: b) traced on performer counter 1.5\nevent relation Z(a: b) sampled on target counter 99999999999999999999",
			[]string{
				"t.sdl:1:52: counter must be a positive integer, not '0'",
				"t.sdl:2:52: counter must be a positive integer, not '1.5'",
				"t.sdl:3:50: counter '99999999999999999999' is out of range",
			}},
		{"bad durations", "clock 0s\nclock 10min\nclock 1.5ns\nclock 9999999h",
			[]string{
				"t.sdl:1:7: clock period must be positive",
				"t.sdl:2:7: malformed duration '10min' (units are ns, us, ms, s, m, h)",
				"t.sdl:3:7: duration '1.5ns' is not a whole number of nanoseconds",
				"t.sdl:4:7: duration '9999999h' is out of range",
			}},
		{"stray characters", "entity type A, B # C\nevent relation X(a: b) - traced on target",
			[]string{
				"t.sdl:1:18: unexpected character '#'",
				"t.sdl:1:20: unexpected 'C', expected ',' or a new statement",
				"t.sdl:2:24: unexpected character '-'",
			}},
		{"several", "entity type 5\nevent relation X(a b)\ninterval relation Y(a: b) traced on nobody\nclock 10ms",
			[]string{
				"t.sdl:1:13: unexpected '5', expected name",
				"t.sdl:2:20: unexpected 'b', expected ':'",
				"t.sdl:3:37: unexpected 'nobody', expected one of: 'performer', 'initiator', 'target'",
			}},
		{"invalid UTF-8", "entity type A\xff",
			[]string{"t.sdl:1:14: invalid UTF-8 encoding"}},
		{"keyword as entity type name", "entity type\nevent relation X(a: b)",
			[]string{"t.sdl:2:7: unexpected 'relation', expected ',' or a new statement"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { frontEnd.CheckErrors(t, tt.in, tt.want) })
	}
}

// checkTree reports the first nil where the AST promises a node, or "".
func checkTree(f *File) string {
	for _, s := range f.Stmts {
		switch x := s.(type) {
		case *EntityTypeDecl:
			if len(x.Names) == 0 {
				return "entity type without names"
			}
		case *RelationDecl:
			if x.Name == nil || len(x.Attrs) == 0 || x.Class == 0 {
				return "incomplete relation"
			}
			for _, a := range x.Attrs {
				if a == nil || a.Name == nil || a.Type == nil || (a.Type.Name == "enum") != (len(a.Type.Enum) > 0) {
					return "incomplete attribute"
				}
				if (a.Role == RoleNone) == a.RolePos.IsValid() {
					return "role position"
				}
			}
			if s := x.Strategy; s != nil && (s.Kind == 0 || s.On == RoleNone || (s.Counter != 0) != s.CounterPos.IsValid()) {
				return "incomplete strategy"
			}
		case *ClockDecl:
			if x.Period <= 0 {
				return "clock period"
			}
		case *SensorDecl:
			if msg := checkSensor(x); msg != "" {
				return msg
			}
		default:
			return "nil statement"
		}
	}
	return ""
}

func pos(line, col int) Pos { return Pos{Line: line, Col: col} }
