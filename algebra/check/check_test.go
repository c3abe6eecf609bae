package check_test

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/internal/testkit"
)

// typesCatalog has an attribute of every builtin type.
const typesSpec = `entity type Task, Node
entity relation Task(Task: Task, Prio: int, Load: float, Name: string, Started: time, Slice: duration, Urgent: bool, Phase: enum(Init, Run, Stop))
entity relation Node(Node: Node)
event relation Tick(Task: Task, Node: Node)
`

// checkText parses and checks one query text in a session.
func checkText(t *testing.T, s *check.Session, name, text string) ([]*check.Retrieve, error) {
	t.Helper()
	f, err := tquel.Parse(name, text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return s.Check(f)
}

// paperRanges declares p, r, s and w on line 1; the statements under test
// start on line 2.
const paperRanges = "range of p is Process range of r is RunningOn range of s is SendMessage range of w is Waiting\n"

func TestSemanticErrors(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	tests := []struct {
		name  string
		query string // line 2, after paperRanges
		want  string // diagnostics, one a line, without the "q.tq:" prefix
	}{
		{"unknown relation with did-you-mean",
			`range of x is Proces retrieve (x.Process) where x.State = Running when x overlap "1:00:00"`,
			"2:15: unknown relation Proces (did you mean Process?)"},
		{"unknown relation with the known list",
			`range of x is Zebra retrieve (y = 1)`,
			"2:15: unknown relation Zebra (known: Clock, Mailbox, Process, Processor, RunningOn, SendMessage, Waiting)"},
		{"unknown range variable",
			`retrieve (q.Process)`,
			"2:11: unknown range variable q (known: p, r, s, w)"},
		{"unknown range variable, nothing close",
			`retrieve (zzzz.Process)`,
			"2:11: unknown range variable zzzz (known: p, r, s, w)"},
		{"unknown attribute",
			`retrieve (p.Foo)`,
			"2:13: p (a Process) has no attribute Foo (known: Process, State)"},
		{"unknown attribute with did-you-mean",
			`retrieve (p.Stat)`,
			"2:13: p (a Process) has no attribute Stat (did you mean State?)"},
		{"entity compared with another entity type",
			`retrieve (p.Process) where p.Process = r.Processor`,
			"2:38: cannot compare Process with Processor"},
		{"enum member that does not exist",
			`retrieve (p.Process) where p.State = Sleeping`,
			"2:38: Sleeping is not a member of enum(Ready, Running, Waiting, Done)"},
		{"enum member quoted that does not exist",
			`retrieve (p.Process) where p.State = "Sleeping"`,
			"2:38: Sleeping is not a member of enum(Ready, Running, Waiting, Done)"},
		{"string where an int is needed",
			`retrieve (x = "a" + 1)`,
			`2:15: string "a" cannot be an int`},
		{"entity compared with an int",
			`retrieve (p.Process) where p.Process = 1`,
			"2:38: cannot compare Process with int"},
		{"bool literal compared with an int",
			`retrieve (x = 1 < true)`,
			"2:17: cannot compare int with bool"},
		{"entities are not ordered",
			`retrieve (p.Process) where p.Process < P2`,
			"2:38: Process values are not ordered: only = and != compare them"},
		{"where clause not boolean",
			`retrieve (p.Process) where p.State`,
			"2:28: where clause must be a condition, but this is an enum(Ready, Running, Waiting, Done)"},
		{"arithmetic on an entity",
			`retrieve (x = p.Process + 1)`,
			"2:25: cannot apply + to Process and int"},
		{"arithmetic on a duration and an int",
			`retrieve (x = 1s + 1)`,
			"2:18: cannot apply + to duration and int"},
		{"string subtraction",
			`retrieve (x = "a" - "b")`,
			"2:19: cannot apply - to string and string"},
		{"negating an enum",
			`retrieve (x = -p.State)`,
			"2:15: cannot negate an enum(Ready, Running, Waiting, Done)"},
		{"and on an int",
			`retrieve (x = 1 and true)`,
			"2:15: and needs conditions on both sides, but this is an int"},
		{"not on an int",
			`retrieve (x = not 1)`,
			"2:15: not needs a condition, but this is an int"},
		{"integer out of range",
			`retrieve (x = 99999999999999999999)`,
			"2:15: integer 99999999999999999999 is out of range"},
		{"bare name compared with a string",
			`retrieve (x = 1) where "a" + "b" = Foo`,
			`2:36: bare name Foo compared with a string: quote it ("Foo")`},
		{"bare names with nothing to type them",
			`retrieve (x = 1) where Foo = Bar`,
			`2:24: unknown name Foo: quote a string ("Foo"); a bare name is an entity or enum literal only when compared with an attribute of that type` + "\n" +
				`2:30: unknown name Bar: quote a string ("Bar"); a bare name is an entity or enum literal only when compared with an attribute of that type`},
		{"range variable used as a value",
			`retrieve (x = p)`,
			"2:15: range variable p used as a value; write p.ATTRIBUTE"},
		{"range variable compared with an entity attribute",
			`retrieve (s.Mailbox) where s.Process = p`,
			"2:40: range variable p used as a value; write p.ATTRIBUTE"},
		{"temporal expression where a predicate is expected",
			`retrieve (p.Process) when begin of p`,
			"2:27: begin of makes a temporal expression, but a predicate (precede, overlap or equal) is expected here"},
		{"extend where a predicate is expected",
			`retrieve (p.Process) when p extend s`,
			"2:29: extend makes a temporal expression, but a predicate (precede, overlap or equal) is expected here"},
		{"bare variable where a predicate is expected",
			`retrieve (p.Process) when p`,
			"2:27: a temporal predicate is expected here: X precede Y, X overlap Y or X equal Y, combined with and, or, not"},
		{"predicate where a temporal expression is expected",
			`retrieve (p.Process) valid at p precede s`,
			"2:33: precede is a predicate, but a temporal expression is expected here"},
		{"and where a temporal expression is expected",
			`retrieve (p.Process) valid from p and s to p`,
			"2:35: and combines predicates, but a temporal expression is expected here"},
		{"unknown name in a temporal expression",
			`retrieve (p.Process) valid at q`,
			"2:31: q is not a range variable; a temporal expression needs a range variable, a quoted time, begin of or end of"},
		{"bad time constant",
			`retrieve (p.Process) when p overlap "yesterday"`,
			`2:37: bad time: "yesterday" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339`},
		{"bad clock constant",
			`retrieve (p.Process) when p overlap "25:61:00"`,
			`2:37: bad time: "25:61:00": minutes must be below 60 (clock notation is H:MM:SS[.fraction])`},
		{"Clock[0]",
			`range of c is Clock[0] retrieve (x = 1)`,
			"2:21: Clock[0]: the tick divisor must be at least 1"},
		{"index on a relation other than Clock",
			`range of c is Process[2] retrieve (x = 1)`,
			"2:23: Process[...]: only Clock takes a tick divisor"},
		{"Clock.all",
			`range of c is Clock retrieve (c.all)`,
			"2:31: c.all: Clock has no explicit attributes"},
		{"duplicate target names",
			`retrieve (p.Process, s.Process)`,
			"2:24: duplicate target name Process (first at 2:13); name it with NAME = ..."},
		{"duplicate named target",
			`retrieve (p.Process, Process = p.State)`,
			"2:22: duplicate target name Process (first at 2:13); name it with NAME = ..."},
		{"reserved target name from",
			`retrieve (from = p.Process)`,
			"2:11: target name from is reserved for valid time (from, to, at)"},
		{"reserved target name At",
			`retrieve (At = p.Process)`,
			"2:11: target name At is reserved for valid time (from, to, at)"},
		{"missing param in a value",
			`retrieve (p.Process) where p.Process = $who`,
			"2:40: no value for $who (pass --param who=VALUE)"},
		{"missing param in a temporal expression",
			`retrieve (p.Process) when p overlap $t`,
			"2:37: no value for $t (pass --param t=VALUE)"},
		{"param that is not an enum member",
			`retrieve (p.Process) where p.State = $n`,
			"2:38: 3 is not a member of enum(Ready, Running, Waiting, Done)"},
		{"as of other than now",
			`retrieve (p.Process) as of "2:00:00"`,
			`2:28: only as of "now" is accepted: tqmon relations have valid time only`},
		{"derived relation named like a primitive one",
			`retrieve Process (x = 1)`,
			"2:10: relation Process is already defined (at os.sdl:6:17)"},
		{"derived relation defined twice",
			`retrieve D (x = 1) retrieve into D (y = 2)`,
			"2:34: relation D is already defined (at 2:10)"},
		{"derived relation named Clock",
			`retrieve Clock (x = 1)`,
			"2:10: Clock is built in and cannot name a result"},
		{"derived relations named like the observation's",
			`retrieve Lost (x = 1) retrieve into Observed (y = 2)`,
			"2:10: Lost is built in (the observation) and cannot name a result\n" +
				"2:37: Observed is built in (the observation) and cannot name a result"},
		{"sum of entities",
			`retrieve (n = sum(p.Process))`,
			"2:19: sum adds numbers or durations, not Process values"},
		{"max of bools",
			`retrieve (n = max(p.Process = "P1"))`,
			"2:19: max needs ordered values, but bool values are not ordered"},
		{"percentile without p",
			`retrieve (n = percentile(end of w))`,
			"2:15: percentile needs the percentile as its second argument, e.g. percentile(x, 95)"},
		{"percentile out of range",
			`retrieve (n = percentile(end of w, 100.5))`,
			"2:36: a percentile is a number from 0 to 100, not 100.5"},
		{"percentile below 0",
			`retrieve (n = percentile(end of w, -1))`,
			"2:36: a percentile is a number from 0 to 100, not -1"},
		{"percentile not constant",
			`retrieve (n = percentile(end of w, end of w))`,
			"2:36: percentile's second argument must be a constant number or duration"},
		{"second argument to count",
			`retrieve (n = count(w.Process, 3))`,
			"2:32: count takes one argument (only percentile and histogram take a second)"},
		{"histogram width of the wrong type",
			`retrieve (n = histogram(end of w - begin of w, 3))`,
			"2:48: a histogram of durations needs a duration as its bucket width (e.g. 1ms), not 3"},
		{"histogram width not positive",
			`retrieve (n = histogram(end of w - begin of w, 0ns))`,
			"2:48: a histogram's bucket width must be greater than 0, not 0ns"},
		{"stddev of strings",
			`retrieve (n = stddev(p.State))`,
			"2:22: stddev averages numbers or durations, not enum(Ready, Running, Waiting, Done) values"},
		{"aggregate in a by list",
			`retrieve (n = count(p.Process by count(r.Process)))`,
			"2:34: a by list cannot contain an aggregate"},
		{"empty moving window",
			`retrieve (n = count(p.Process for each 0s))`,
			"2:40: a moving window must be longer than 0, not 0s"},
		{"errors inside an aggregate",
			`retrieve (n = count(p.Foo where p.State = Sleepy))`,
			"2:23: p (a Process) has no attribute Foo (known: Process, State)\n" +
				"2:43: Sleepy is not a member of enum(Ready, Running, Waiting, Done)"},
		{"end of an unknown variable as a value",
			`retrieve (x = end of q)`,
			"2:22: q is not a range variable; a temporal expression needs a range variable, a quoted time, begin of or end of"},
		{"time value added to a number",
			`retrieve (x = end of p + 1)`,
			"2:24: cannot apply + to time and int"},
		{"several errors in one statement",
			`retrieve (x = 1 + p.State, y = p.Foo) where p.State = Sleepy when begin of p`,
			"2:17: cannot apply + to int and enum(Ready, Running, Waiting, Done)\n" +
				"2:34: p (a Process) has no attribute Foo (known: Process, State)\n" +
				"2:55: Sleepy is not a member of enum(Ready, Running, Waiting, Done)\n" +
				"2:67: begin of makes a temporal expression, but a predicate (precede, overlap or equal) is expected here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := check.NewSession(cat, check.Options{Params: map[string]string{"n": "3"}})
			_, err := checkText(t, s, "q.tq", paperRanges+tt.query)
			if err == nil {
				t.Fatalf("no error for %q", tt.query)
			}
			var want []string
			for _, l := range strings.Split(tt.want, "\n") {
				want = append(want, "q.tq:"+l)
			}
			if got := testkit.DiagLines(err); got != strings.Join(want, "\n") {
				t.Errorf("%s\ngot:\n%s\nwant:\n%s", tt.query, got, strings.Join(want, "\n"))
			}
			for _, d := range source.Diagnostics(err) {
				if d.File != "q.tq" || !d.Pos.IsValid() {
					t.Errorf("unpositioned diagnostic %#v", d)
				}
			}
		})
	}
}

// TestSeveralStatementsAllReported: errors in different statements of one
// file are all reported, in source order; a failed range declaration is
// reported once, not again at each use of its variable.
func TestSeveralStatementsAllReported(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	s := check.NewSession(cat, check.Options{})
	text := "range of p is Process\n" +
		"range of x is Proces\n" +
		"retrieve (x.Process) where x.State = Running when x overlap p\n" +
		"retrieve (p.Foo)\n" +
		"retrieve (y = p.State + 1)\n"
	_, err := checkText(t, s, "multi.tq", text)
	want := "multi.tq:2:15: unknown relation Proces (did you mean Process?)\n" +
		"multi.tq:4:13: p (a Process) has no attribute Foo (known: Process, State)\n" +
		"multi.tq:5:23: cannot apply + to enum(Ready, Running, Waiting, Done) and int"
	if got := testkit.DiagLines(err); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRangeVariableHints(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	tests := []struct{ query, want string }{
		{"retrieve (q.Process)", "h.tq:1:11: unknown range variable q (declare it: range of q is RELATION)"},
		{"range of proc is Process retrieve (prc.State)", "h.tq:1:36: unknown range variable prc (did you mean proc?)"},
		{"range of proc is Process retrieve (x = 1) when prc overlap proc",
			"h.tq:1:48: prc is not a range variable; a temporal expression needs a range variable, a quoted time, begin of or end of"},
	}
	for _, tt := range tests {
		_, err := checkText(t, check.NewSession(cat, check.Options{}), "h.tq", tt.query)
		if got := testkit.DiagLines(err); got != tt.want {
			t.Errorf("%s\n got  %s\n want %s", tt.query, got, tt.want)
		}
	}
}

func TestRetrieveIntoIsRangeable(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	s := check.NewSession(cat, check.Options{})
	text := `range of w is Waiting
retrieve into Blocked (w.Process, Box = w.Mailbox)
range of b is Blocked
retrieve (b.Process, b.Box) where b.Box = M7`
	rs, err := checkText(t, s, "into.tq", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d retrieves, want 2", len(rs))
	}
	blocked := rs[0].Result
	if blocked.Name != "Blocked" || !blocked.Derived || blocked.Class != algebra.ClassInterval {
		t.Errorf("Blocked: %s", blocked.Signature())
	}
	if got, want := blocked.Signature(), "derived interval relation Blocked(Process: Process, Box: Mailbox)"; got != want {
		t.Errorf("signature %q, want %q", got, want)
	}
	if rs[1].Vars[0].Rel != blocked || rs[1].Vars[0].From != rs[0] {
		t.Errorf("b ranges over %v (from %v), want the derived Blocked", rs[1].Vars[0].Rel.Name, rs[1].Vars[0].From)
	}
	if got := rs[1].Where.String(); got != `b.Box = "M7"` {
		t.Errorf("where %s", got)
	}
	if rs[0].Text != "retrieve into Blocked (w.Process, Box = w.Mailbox)" {
		t.Errorf("statement text %q", rs[0].Text)
	}

	// A later file of the same session sees Blocked and b.
	rs, err = checkText(t, s, "later.tq", `retrieve (b.Box) valid at begin of b`)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Result.Class != algebra.ClassEvent {
		t.Errorf("valid at gives a %s relation", rs[0].Result.Class)
	}
	if s.Catalog().Lookup("Blocked") == nil {
		t.Error("Blocked not in the session's catalog")
	}
	if cat.Lookup("Blocked") != nil {
		t.Error("the session changed the catalog it was given")
	}
	// Defining it again in a later file is a clash with the earlier file.
	_, err = checkText(t, s, "again.tq", `retrieve Blocked (x = 1)`)
	if got, want := testkit.DiagLines(err), "again.tq:1:10: relation Blocked is already defined (at into.tq:2:15)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestFileWithErrorsLeavesSessionUnchanged(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	s := check.NewSession(cat, check.Options{})
	if _, err := checkText(t, s, "a.tq", "range of p is Process"); err != nil {
		t.Fatal(err)
	}
	before := s.RangeVars()
	bad := "range of p is RunningOn\nrange of z is Process\nretrieve into E (z.State)\nretrieve (z.Foo)"
	if _, err := checkText(t, s, "bad.tq", bad); err == nil {
		t.Fatal("no error")
	}
	if got := s.RangeVars(); !reflect.DeepEqual(got, before) {
		t.Errorf("range variables %v, want %v", got, before)
	}
	if s.Catalog().Lookup("E") != nil {
		t.Error("derived relation E of a failed file is in the catalog")
	}
	// p still ranges over Process, z is unknown, E is unknown.
	rs, err := checkText(t, s, "b.tq", "retrieve (p.State)")
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Vars[0].Rel.Name != "Process" {
		t.Errorf("p ranges over %s", rs[0].Vars[0].Rel.Name)
	}
	_, err = checkText(t, s, "c.tq", "range of e is E\nretrieve (z.State)")
	want := "c.tq:1:15: unknown relation E (known: Clock, Mailbox, Process, Processor, RunningOn, SendMessage, Waiting)\n" +
		"c.tq:2:11: unknown range variable z (known: p)"
	if got := testkit.DiagLines(err); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestDefaultClauses compares the default when and valid clauses with
// docs/tquel.md: when t1 overlap … overlap tk; valid from begin of X to end of X
// when every variable is an interval relation, else valid at begin of X.
func TestDefaultClauses(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	tests := []struct {
		query, vars, when, valid string
		event                    bool
	}{
		{`retrieve (x = 1)`, "", "true",
			`valid from begin of ("beginning" extend "forever") to end of ("beginning" extend "forever")`, false},
		{`range of p is Process retrieve (p.State)`, "p", "true",
			"valid from begin of p to end of p", false},
		{`range of s is SendMessage retrieve (s.Process)`, "s", "true",
			"valid at begin of s", true},
		{`range of p is Process range of r is RunningOn retrieve (p.State, r.Processor)`, "p r", "p overlap r",
			"valid from begin of (p overlap r) to end of (p overlap r)", false},
		// Variables are ordered by declaration, not by use.
		{`range of r is RunningOn range of p is Process retrieve (p.State, r.Processor)`, "r p", "r overlap p",
			"valid from begin of (r overlap p) to end of (r overlap p)", false},
		{`range of p is Process range of s is SendMessage retrieve (p.State, s.Mailbox)`, "p s", "p overlap s",
			"valid at begin of (p overlap s)", true},
		{`range of p is Process range of r is RunningOn range of w is Waiting retrieve (p.State, r.Processor, w.Mailbox)`,
			"p r w", "p overlap r overlap w",
			"valid from begin of (p overlap r overlap w) to end of (p overlap r overlap w)", false},
		{`range of s is SendMessage range of p is Process range of r is RunningOn retrieve (p.State, r.Processor, s.Mailbox)`,
			"s p r", "s overlap p overlap r", "valid at begin of (s overlap p overlap r)", true},
		// Variables used only in when or valid count.
		{`range of p is Process range of c is Clock retrieve (p.State) when c overlap p`, "p c", "c overlap p",
			"valid at begin of (p overlap c)", true},
		// A supplied clause replaces its default; constants do not join.
		{`range of p is Process retrieve (p.State) when p overlap "2:00:00"`, "p", `p overlap "2:00:00"`,
			"valid from begin of p to end of p", false},
		{`range of w is Waiting retrieve (w.Process) valid at end of w`, "w", "true", "valid at end of w", true},
		{`range of p1 is Process range of p2 is Process retrieve (p1.Process) valid from begin of p1 to end of p2 when p1 precede p2`,
			"p1 p2", "p1 precede p2", "valid from begin of p1 to end of p2", false},
	}
	for _, tt := range tests {
		s := check.NewSession(cat, check.Options{})
		rs, err := checkText(t, s, "d.tq", tt.query)
		if err != nil {
			t.Errorf("%s: %v", tt.query, err)
			continue
		}
		r := rs[len(rs)-1]
		if got := strings.Join(r.VarNames(), " "); got != tt.vars {
			t.Errorf("%s: vars %q, want %q", tt.query, got, tt.vars)
		}
		if got := r.When.String(); got != tt.when {
			t.Errorf("%s:\n when  %s\n want  %s", tt.query, got, tt.when)
		}
		if got := r.Valid.String(); got != tt.valid {
			t.Errorf("%s:\n valid %s\n want  %s", tt.query, got, tt.valid)
		}
		if r.Valid.IsEvent() != tt.event || r.Result.IsEvent() != tt.event {
			t.Errorf("%s: event %v, want %v", tt.query, r.Result.IsEvent(), tt.event)
		}
		st, _ := tquel.Parse("d.tq", tt.query)
		rst := st.Stmts[len(st.Stmts)-1].(*tquel.RetrieveStmt)
		if r.WhenDefault != (rst.When == nil) || r.ValidDefault != (rst.Valid == nil) {
			t.Errorf("%s: WhenDefault %v ValidDefault %v", tt.query, r.WhenDefault, r.ValidDefault)
		}
	}
}

func TestTyping(t *testing.T) {
	paper := testkit.PaperCatalog(t)
	types := testkit.CompileSpec(t, "types.sdl", typesSpec)
	params := map[string]string{
		"who": "T1", "n": "3", "f": "2.5", "nm": "init", "t": "0:00:02", "d": "5ms",
		"ph": "Run", "yes": "true", "word": "hello", "at": "1:00:00",
	}
	tests := []struct {
		cat   *algebra.Catalog
		query string
		// want lists each target as name:type=expr, then where:expr.
		want []string
	}{
		// Entity and enum literals from bare names and from strings.
		{paper, `range of p is Process retrieve (p.Process) where p.Process = P1 and p.State = Running`,
			[]string{"Process:Process=p.Process", `where:p.Process = "P1" and p.State = "Running"`}},
		{paper, `range of s is SendMessage retrieve (s.Mailbox) where "P1" = s.Process`,
			[]string{"Mailbox:Mailbox=s.Mailbox", `where:"P1" = s.Process`}},
		// Enums are ordered by declaration.
		{paper, `range of p is Process retrieve (p.Process) where p.State >= Running`,
			[]string{"Process:Process=p.Process", `where:p.State >= "Running"`}},
		// Times compare with quoted times in every notation.
		{types, `range of k is Task retrieve (k.Task) where k.Started < "0:00:02.5" and k.Started >= "1970-01-01T00:00:01Z" and k.Started != "7"`,
			[]string{"Task:Task=k.Task", `where:k.Started < "0:00:02.5" and k.Started >= "0:00:01" and k.Started != "0:00:00.000000007"`}},
		{types, `range of k is Task retrieve (k.Task) where k.Started < "now"`,
			[]string{"Task:Task=k.Task", `where:k.Started < "1:00:00"`}},
		// Duration and time arithmetic.
		{types, `range of k is Task retrieve (a = k.Slice * 2 + 1s, b = k.Started + 1s, c = k.Started - k.Started, d = 10s / 5s, e = k.Slice / 2, f = 3 * k.Slice, g = k.Slice % 1ms, h = 1s + k.Started)`,
			[]string{"a:duration=k.Slice * 2 + 1s", "b:time=k.Started + 1s", "c:duration=k.Started - k.Started",
				"d:float=10s / 5s", "e:duration=k.Slice / 2", "f:duration=3 * k.Slice", "g:duration=k.Slice % 1ms",
				"h:time=1s + k.Started"}},
		// Numbers mix.
		{types, `range of k is Task retrieve (a = k.Prio + 1, b = k.Prio * k.Load, c = -k.Load, d = "x" + k.Name) where k.Load > 1`,
			[]string{"a:int=k.Prio + 1", "b:float=k.Prio * k.Load", "c:float=-k.Load", "d:string=\"x\" + k.Name", "where:k.Load > 1"}},
		// Params take their type from what they meet.
		{types, `range of k is Task retrieve (k.Task) where k.Task = $who and k.Prio = $n and k.Load < $f and k.Name = $nm and k.Started = $t and k.Slice = $d and k.Phase = $ph and k.Urgent = $yes`,
			[]string{"Task:Task=k.Task", `where:k.Task = "T1" and k.Prio = 3 and k.Load < 2.5 and k.Name = "init" and k.Started = "0:00:02" and k.Slice = 5ms and k.Phase = "Run" and k.Urgent = true`}},
		// Alone, a param is an int, a float or a string.
		{types, `retrieve (a = $n, b = $f, c = $word, d = $n + 1)`,
			[]string{"a:int=3", "b:float=2.5", "c:string=\"hello\"", "d:int=3 + 1"}},
		// A param in a temporal expression is a time constant.
		{types, `range of k is Task retrieve (k.Task) when k overlap $at`,
			[]string{"Task:Task=k.Task"}},
		// Bools.
		{types, `range of k is Task retrieve (k.Task, u = not k.Urgent) where k.Urgent = true or false`,
			[]string{"Task:Task=k.Task", "u:bool=not k.Urgent", "where:k.Urgent = true or false"}},
		// Var.all expands to every attribute.
		{types, `range of x is Tick retrieve (x.all)`,
			[]string{"Task:Task=x.Task", "Node:Node=x.Node"}},
	}
	for _, tt := range tests {
		s := check.NewSession(tt.cat, check.Options{Params: params, Now: 3600e9})
		rs, err := checkText(t, s, "t.tq", tt.query)
		if err != nil {
			t.Errorf("%s: %v", tt.query, err)
			continue
		}
		r := rs[0]
		var got []string
		for _, tg := range r.Targets {
			got = append(got, tg.Name+":"+tg.Expr.Type().String()+"="+tg.Expr.String())
		}
		if r.Where != nil {
			got = append(got, "where:"+r.Where.String())
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s\n got  %q\n want %q", tt.query, got, tt.want)
		}
	}
}

// TestLiteralValues checks the values literals are given, not only their
// printed form.
func TestLiteralValues(t *testing.T) {
	types := testkit.CompileSpec(t, "types.sdl", typesSpec)
	s := check.NewSession(types, check.Options{Params: map[string]string{"who": "T1", "d": "1m30s", "t": "0:00:02"}})
	rs, err := checkText(t, s, "v.tq", `range of k is Task retrieve (k.Task) where k.Task = $who and k.Phase = Stop and k.Slice = $d and k.Started = $t and k.Started < "0:00:01.5"`)
	if err != nil {
		t.Fatal(err)
	}
	var consts []algebra.Value
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		switch e := e.(type) {
		case *expr.Const:
			consts = append(consts, e.V)
		case *expr.Binary:
			walk(e.X)
			walk(e.Y)
		}
	}
	walk(rs[0].Where)
	want := []algebra.Value{
		algebra.Entity("T1"), algebra.Enum("Stop", 2), algebra.DurationVal(90e9),
		algebra.TimeVal(2e9), algebra.TimeVal(1.5e9),
	}
	if !reflect.DeepEqual(consts, want) {
		t.Errorf("constants %v, want %v", consts, want)
	}
}

func TestRangeVarsSorted(t *testing.T) {
	s := check.NewSession(testkit.PaperCatalog(t), check.Options{})
	if _, err := checkText(t, s, "r.tq", "range of b is Waiting range of a is Process range of c is Clock[60]"); err != nil {
		t.Fatal(err)
	}
	rv := s.RangeVars()
	var names []string
	for n, rel := range rv {
		names = append(names, n+"="+rel)
	}
	sort.Strings(names)
	if got := strings.Join(names, " "); got != "a=Process b=Waiting c=Clock[60]" {
		t.Errorf("range vars %s", got)
	}
}

// TestExistentialVariables: the checker marks the variables nothing the
// result is made of reads — no target, valid clause, by list, or where
// conjunct with begin of, end of or an aggregate.
func TestExistentialVariables(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	tests := []struct{ query, want string }{
		// The paper's ResumedbyP1: S only decides whether W has a result.
		{`retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process = "P1" when s precede end of w`, "s"},
		{`retrieve (w.Process, S = s.Process) valid at end of w where s.Mailbox = w.Mailbox when s precede end of w`, ""},
		// The default valid clause reads every variable.
		{`retrieve (w.Process) where s.Mailbox = w.Mailbox`, ""},
		{`retrieve (w.Process) valid at begin of s where s.Mailbox = w.Mailbox`, ""},
		{`retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and begin of s < end of w`, ""},
		// A where conjunct without begin of or end of does not count.
		{`retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process != w.Process`, "s"},
		// Several, and a variable read only by the when clause.
		{`retrieve (w.Process) valid at end of w where s.Mailbox = w.Mailbox when s precede end of w and p overlap w`, "p s"},
		{`retrieve (x = 1) valid at "2:00:00" where s.Process = "P1"`, "s"},
		// A by list and a where conjunct with an aggregate read the outer
		// block's variables.
		{`retrieve (w.Process, N = count(s.Process by w.Mailbox where s.Mailbox = w.Mailbox for ever)) valid at end of w where p.Process = w.Process`, "p"},
		{`retrieve (w.Process) valid at end of w where count(s.Process by p.Process where s.Process = p.Process for ever) > 1 and p.State = Ready`, ""},
		{`retrieve (p.State) valid at begin of p where count(s.Process by s.Mailbox for ever) > 1 and w.Mailbox = "M1"`, "w"},
	}
	for _, tt := range tests {
		rs, err := checkText(t, check.NewSession(cat, check.Options{}), "e.tq", paperRanges+tt.query)
		if err != nil {
			t.Errorf("%s: %v", tt.query, err)
			continue
		}
		r := rs[len(rs)-1]
		if r.Exists != nil && len(r.Exists) != len(r.Vars) {
			t.Fatalf("%s: %d marks for %d variables", tt.query, len(r.Exists), len(r.Vars))
		}
		var got []string
		for i, v := range r.Vars {
			if r.Exists != nil && r.Exists[i] {
				got = append(got, v.Name)
			}
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("%s:\n existential %q, want %q", tt.query, g, tt.want)
		}
		// An aggregate's inner query is a bag: every binding counts.
		for _, a := range r.Aggs {
			if a.Inner.Exists != nil {
				t.Errorf("%s: the aggregate %s has existential variables %v", tt.query, a.Text, a.Inner.Exists)
			}
		}
	}
}
