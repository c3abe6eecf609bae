package tquel

import (
	"os"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/internal/fronttest"
	"github.com/tqmon/tqmon/grammar/source"
)

// frontEnd runs the shared front-end checks on TQuel.
var frontEnd = &fronttest.Front[File, Stmt]{
	Name:      "t.tq",
	Parse:     Parse,
	Stmts:     func(f *File) []Stmt { return f.Stmts },
	Format:    FormatStmt,
	CheckTree: checkTree,
	Dump:      dumpStmt,
}

// The worked examples of docs/tquel.md and the paper's query: tree shapes and
// canonical text.
func TestParseWorkedExamples(t *testing.T) {
	tests := []struct {
		name, in string
		dump     []string
		format   []string // canonical text; nil: same as in
	}{
		{
			name: "ranges",
			in:   "range of p is Process\nrange of r is RunningOn\nrange of c is Clock[5]",
			dump: []string{"range p Process", "range r RunningOn", "range c Clock[5]"},
		},
		{
			name: "1 join",
			in:   `retrieve (p.Process, r.Processor) where p.Process = r.Process and p.State = "Running"`,
			dump: []string{`retrieve (p.Process, r.Processor) where:(and (= p.Process r.Process) (= p.State "Running"))`},
		},
		{
			name: "2 named targets",
			in:   `retrieve (Sender = s.Process, Waiter = w.Process, s.Mailbox) where s.Mailbox = w.Mailbox`,
			dump: []string{`retrieve (Sender=s.Process, Waiter=w.Process, s.Mailbox) where:(= s.Mailbox w.Mailbox)`},
		},
		{
			name: "3 valid at end of",
			in:   `retrieve (w.Process, w.Mailbox) valid at end of w`,
			dump: []string{`retrieve (w.Process, w.Mailbox) valid-at:(end of w)`},
		},
		{
			name: "4 valid where when",
			in:   `retrieve (Sender = s.Process, s.Mailbox, Waiter = w.Process) valid at begin of s where s.Mailbox = w.Mailbox when w precede s`,
			dump: []string{`retrieve (Sender=s.Process, s.Mailbox, Waiter=w.Process) valid-at:(begin of s) where:(= s.Mailbox w.Mailbox) when:(precede w s)`},
		},
		{
			name: "5 and chain",
			in:   `retrieve (A = a.Process, B = b.Process) where a.State = "Waiting" and b.State = "Running" and a.Process != b.Process`,
			dump: []string{`retrieve (A=a.Process, B=b.Process) where:(and (and (= a.State "Waiting") (= b.State "Running")) (!= a.Process b.Process))`},
		},
		{
			name: "6 valid from to",
			in:   `retrieve (p1.Process) valid from begin of p1 to end of p2 where p1.Process = p2.Process and p1.State = "Running" and p2.State = "Running" when p1 precede p2`,
			dump: []string{`retrieve (p1.Process) valid-from:(begin of p1) to:(end of p2) where:(and (and (= p1.Process p2.Process) (= p1.State "Running")) (= p2.State "Running")) when:(precede p1 p2)`},
		},
		{
			name: "7 coalesced",
			in:   `retrieve (p.State) where p.State = "Running"`,
			dump: []string{`retrieve (p.State) where:(= p.State "Running")`},
		},
		{
			name: "8 overlap a time constant",
			in:   `retrieve (p.Process, p.State) when p overlap "7"`,
			dump: []string{`retrieve (p.Process, p.State) when:(overlap p "7")`},
		},
		{
			name: "9 count",
			in:   `retrieve (N = count(w.Process))`,
			dump: []string{`retrieve (N=(count w.Process))`},
		},
		{
			name: "10 count for ever",
			in:   `retrieve (N = count(s.Process for ever))`,
			dump: []string{`retrieve (N=(count s.Process ever))`},
		},
		{
			name: "11 count by",
			in:   `retrieve (p.State, N = count(p.Process by p.State))`,
			dump: []string{`retrieve (p.State, N=(count p.Process by:p.State))`},
		},
		{
			name: "paper ResumedbyP1",
			in:   readTestdata(t, "resumed_by_p1.tq"),
			dump: []string{
				"range S SendMessage",
				"range W Waiting",
				`retrieve ResumedbyP1 (Process=W.Process) valid-at:(end of W) where:(and (= S.Mailbox W.Mailbox) (= S.Process "P1")) when:(precede S (end of W))`,
			},
			format: []string{
				"range of S is SendMessage",
				"range of W is Waiting",
				`retrieve ResumedbyP1 (Process = W.Process) valid at end of W where S.Mailbox = W.Mailbox and S.Process = "P1" when S precede end of W`,
			},
		},
		{
			name: "into unique as of",
			in:   `retrieve into R unique (p.all) valid at "now" as of "now"; range of x is R`,
			dump: []string{`retrieve into R unique (p.all) valid-at:"now" as-of:"now"`, "range x R"},
			format: []string{
				`retrieve into R unique (p.all) valid at "now" as of "now"`,
				"range of x is R",
			},
		},
		{
			name:   "is target and case-insensitive keywords",
			in:     `RETRIEVE Busy (N IS CountU(p.Process) / 2) Valid From Begin Of p To "forever" WHERE p.State <> "Done" When p Overlap "2:00:05"`,
			dump:   []string{`retrieve Busy (N=(/ (countU p.Process) 2)) valid-from:(begin of p) to:"forever" where:(!= p.State "Done") when:(overlap p "2:00:05")`},
			format: []string{`retrieve Busy (N = countU(p.Process) / 2) valid from begin of p to "forever" where p.State != "Done" when p overlap "2:00:05"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := frontEnd.ParseOK(t, tt.in)
			if len(f.Stmts) != len(tt.dump) {
				t.Fatalf("got %d statements, want %d:\n%s", len(f.Stmts), len(tt.dump), FormatFile(f))
			}
			for i, s := range f.Stmts {
				if got := dumpStmt(s); got != tt.dump[i] {
					t.Errorf("statement %d:\n got %s\nwant %s", i+1, got, tt.dump[i])
				}
				want := ""
				if tt.format != nil {
					want = tt.format[i]
				} else if len(tt.dump) == 1 {
					want = tt.in
				}
				if got := FormatStmt(s); want != "" && got != want {
					t.Errorf("FormatStmt %d:\n got %s\nwant %s", i+1, got, want)
				}
			}
			frontEnd.RoundTrip(t, f)
		})
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Precedence and associativity, and the value/temporal mapping of the one
// expression grammar.
func TestExprShapes(t *testing.T) {
	tests := []struct {
		in   string // a retrieve statement
		want string // dumpStmt
	}{
		// arithmetic
		{`retrieve (x = a + b * c)`, `retrieve (x=(+ a (* b c)))`},
		{`retrieve (x = a - b - c)`, `retrieve (x=(- (- a b) c))`},
		{`retrieve (x = a / b % c * d)`, `retrieve (x=(* (% (/ a b) c) d))`},
		{`retrieve (x = -a * b)`, `retrieve (x=(* (neg a) b))`},
		{`retrieve (x = a * -b)`, `retrieve (x=(* a (neg b)))`},
		{`retrieve (x = - -a)`, `retrieve (x=(neg (neg a)))`},
		{`retrieve (x = (a + b) % 3)`, `retrieve (x=(% (paren (+ a b)) 3))`},
		{`retrieve (x = 1.5e3 + 2 + 7.25 + 1E-3)`, `retrieve (x=(+ (+ (+ 1.5e3f 2) 7.25f) 1E-3f))`},
		{`retrieve (x = 1h30m + 10s + 5ms + 250us + 3µs + 1.5s + 7ns + 2m)`,
			`retrieve (x=(+ (+ (+ (+ (+ (+ (+ 1h30m=5400000000000ns 10s=10000000000ns) 5ms=5000000ns) 250us=250000ns) 3µs=3000ns) 1.5s=1500000000ns) 7ns=7ns) 2m=120000000000ns))`},
		{`retrieve (x = $limit * 2, y = "a\"b\\c\nd\te")`, `retrieve (x=(* $limit 2), y="a\"b\\c\nd\te")`},
		// comparisons and logic
		{`retrieve (p.x) where not a = b and c < d or e`, `retrieve (p.x) where:(or (and (not (= a b)) (< c d)) e)`},
		{`retrieve (p.x) where a <> b or a != b and (a <= b) and a >= b and a > b`,
			`retrieve (p.x) where:(or (!= a b) (and (and (and (!= a b) (paren (<= a b))) (>= a b)) (> a b)))`},
		{`retrieve (p.x) where a + 1 < b * 2`, `retrieve (p.x) where:(< (+ a 1) (* b 2))`},
		{`retrieve (p.x) where not not a`, `retrieve (p.x) where:(not (not a))`},
		{`retrieve (x = a * not b = c)`, `retrieve (x=(* a (not (= b c))))`},
		// begin of / end of as values
		{`retrieve (d = end of w - begin of w)`, `retrieve (d=(- (timeof end of w) (timeof begin of w)))`},
		{`retrieve (p.x) where begin of p < end of (q overlap r)`,
			`retrieve (p.x) where:(< (timeof begin of p) (timeof end of (paren (overlap q r))))`},
		// temporal predicates and expressions
		{`retrieve (p.x) when a precede b overlap c`, `retrieve (p.x) when:(precede a (overlap b c))`},
		{`retrieve (p.x) when a overlap b overlap c`, `retrieve (p.x) when:(overlap (overlap a b) c)`},
		{`retrieve (p.x) when begin of a overlap b`, `retrieve (p.x) when:(overlap (begin of a) b)`},
		{`retrieve (p.x) when a extend b precede c`, `retrieve (p.x) when:(precede (extend a b) c)`},
		{`retrieve (p.x) when not a precede b and c equal d or e overlap "now"`,
			`retrieve (p.x) when:(or (and (not (precede a b)) (equal c d)) (overlap e "now"))`},
		{`retrieve (p.x) when (a overlap b) or "now" precede c`, `retrieve (p.x) when:(or (paren (overlap a b)) (precede "now" c))`},
		{`retrieve (p.x) when end of begin of a precede $t`, `retrieve (p.x) when:(precede (end of (begin of a)) $t)`},
		{`retrieve (p.x) valid at a overlap b as of "now"`, `retrieve (p.x) valid-at:(overlap a b) as-of:"now"`},
		{`retrieve (p.x) when begin of p`, `retrieve (p.x) when:(begin of p)`},
		// aggregates
		{`retrieve (n = count(p.x by p.y, p.z for each 10s where p.y > 0 when p overlap q))`,
			`retrieve (n=(count p.x by:p.y by:p.z each:10s=10000000000ns where:(> p.y 0) when:(overlap p q)))`},
		{`retrieve (n = sumU(p.x) + avgU(p.x) - SUM(p.x) * min(p.x) / max(p.x) % any(p.x) + countu(p.x) + Avg(p.x for each instant))`,
			`retrieve (n=(+ (+ (- (+ (sumU p.x) (avgU p.x)) (% (/ (* (sum p.x) (min p.x)) (max p.x)) (any p.x))) (countU p.x)) (avg p.x instant)))`},
		{`retrieve (n = count(p.x when begin of p precede "now" where p.y = 1 for ever))`,
			`retrieve (n=(count p.x ever where:(= p.y 1) when:(precede (begin of p) "now")))`},
		// keywords and aggregate names as names
		{`retrieve (count = count + max, where = p.range, valid is p.Valid, p.count, p.all)`,
			`retrieve (count=(+ count max), where=p.range, valid=p.Valid, p.count, p.all)`},
		{`retrieve (p.x) where S.Process = P1 and at = from`, `retrieve (p.x) where:(and (= S.Process P1) (= at from))`},
		{`retrieve range (is.of)`, `retrieve range (is.of)`},
	}
	for _, tt := range tests {
		f := frontEnd.ParseOK(t, tt.in)
		if len(f.Stmts) != 1 {
			t.Errorf("%s: %d statements", tt.in, len(f.Stmts))
			continue
		}
		if got := dumpStmt(f.Stmts[0]); got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
		frontEnd.RoundTrip(t, f)
	}
}

// Statements need no separator; ';' may end them; comments run to the end
// of the line.
func TestStatementsAndComments(t *testing.T) {
	f := frontEnd.ParseOK(t, ";; range of p is Process;\n-- a comment; retrieve (junk)\nretrieve (p.x) -- trailing\n  where p.y = 1;;range of q is P retrieve (q.y)")
	var got []string
	for _, s := range f.Stmts {
		got = append(got, FormatStmt(s))
	}
	want := []string{"range of p is Process", "retrieve (p.x) where p.y = 1", "range of q is P", "retrieve (q.y)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f.Name != "t.tq" {
		t.Errorf("file name %q", f.Name)
	}
	if f, err := Parse("e", "  -- nothing\n"); err != nil || len(f.Stmts) != 0 {
		t.Errorf("empty text: %v, %v", f, err)
	}
}

// Positions are 1-based lines and rune columns; tabs count as one column.
func TestPositions(t *testing.T) {
	f := frontEnd.ParseOK(t, "range of p is Clock[3]\n\tretrieve R (N = p.x + \"é\" * count(p.y for each 1s)) valid from p to \"x\" as of \"now\"")
	r := f.Stmts[0].(*RangeStmt)
	if r.At != (pos(1, 1)) || r.Var.At != (pos(1, 10)) || r.Rel.At != (pos(1, 15)) || r.Index.At != (pos(1, 21)) {
		t.Errorf("range positions: %v %v %v %v", r.At, r.Var.At, r.Rel.At, r.Index.At)
	}
	// é is not a name character.
	_, err := Parse("t", "\tretrieve é (p.x)")
	if err == nil || err.Error() != "t:1:11: unexpected character 'é'" {
		t.Errorf("got %v", err)
	}
	s := f.Stmts[1].(*RetrieveStmt)
	tg := s.Targets[0]
	add := tg.Expr.(*Binary)
	mul := add.Y.(*Binary)
	str := mul.X.(*StringLit)
	agg := mul.Y.(*Aggregate)
	checks := []struct {
		what      string
		got, want Pos
	}{
		{"retrieve", s.At, pos(2, 2)},
		{"name", s.Name.At, pos(2, 11)},
		{"target", tg.At, pos(2, 14)},
		{"+", add.OpPos, pos(2, 22)},
		{"binary pos", add.Pos(), pos(2, 18)},
		{"string", str.At, pos(2, 24)},
		{"*", mul.OpPos, pos(2, 28)},
		{"aggregate", agg.At, pos(2, 30)},
		{"for", agg.Window.At, pos(2, 40)},
		{"size", agg.Window.Size.At, pos(2, 49)},
		{"valid", s.Valid.Kw, pos(2, 54)},
		{"from", s.Valid.From.Pos(), pos(2, 65)},
		{"as of", s.AsOf.Kw, pos(2, 74)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s at %v, want %v", c.what, c.got, c.want)
		}
	}
}

// Syntax and conversion errors: exact positions and messages.
func TestErrors(t *testing.T) {
	deep := "retrieve (x = " + strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600) + ")"
	tests := []struct {
		name, in string
		want     []string
	}{
		{"extra token in targets", "retrieve (p.x + 1)",
			[]string{"t.tq:1:15: unexpected '+', expected one of: ')', ','"}},
		{"missing paren", "retrieve (p.x where p.y = 1",
			[]string{"t.tq:1:15: unexpected 'where', expected one of: ')', ','"}},
		{"missing operand", "retrieve (x = ) where",
			[]string{
				"t.tq:1:15: unexpected ')', expected an expression",
				"t.tq:1:22: unexpected end of input, expected an expression",
			}},
		{"missing operator", "retrieve (p.x) where p.x = 1 p.y = 2",
			[]string{"t.tq:1:30: unexpected 'p', expected an operator, a clause or a new statement"}},
		{"not a statement", "range of p is P\nfoo",
			[]string{"t.tq:2:1: unexpected 'foo', expected '[' or a new statement"}},
		{"start", "foo", []string{"t.tq:1:1: unexpected 'foo', expected 'range' or 'retrieve'"}},
		{"end of input", "range of x is",
			[]string{"t.tq:1:14: unexpected end of input, expected name"}},
		{"end of input after newline", "retrieve (x = 1) valid from a\n",
			[]string{"t.tq:1:30: unexpected end of input, expected 'to'"}},
		{"window", "retrieve (x = count(p.x for each 5))",
			[]string{"t.tq:1:34: unexpected '5', expected one of: 'instant', duration"}},
		{"attribute", "retrieve (x.)",
			[]string{"t.tq:1:13: unexpected ')', expected one of: name, 'all'"}},
		{"keyword variable", "range of where is X",
			[]string{"t.tq:1:10: unexpected 'where', expected name"}},
		{"stray character", "retrieve (p.x) where p.y # 1",
			[]string{
				"t.tq:1:26: unexpected character '#'",
				"t.tq:1:28: unexpected '1', expected an operator, a clause or a new statement",
			}},
		{"unterminated string", "retrieve (p.x) where p.y = \"abc\nrange of q is Q",
			[]string{"t.tq:1:28: unterminated string"}},
		{"lexical", `retrieve (p.x) where p.y = 10min and x = 1.5ns and q = "a\qb" and r = 3abc and s = 1e`,
			[]string{
				"t.tq:1:28: malformed duration '10min' (units are ns, us, ms, s, m, h)",
				"t.tq:1:42: duration '1.5ns' is not a whole number of nanoseconds",
				`t.tq:1:58: unknown escape sequence '\q' in string`,
				"t.tq:1:71: malformed number '3abc'",
				"t.tq:1:84: malformed number '1e'",
			}},
		{"duration overflow", "retrieve (x = 3000000h)",
			[]string{"t.tq:1:15: duration '3000000h' is out of range"}},
		{"chained comparison", "retrieve (p.x) where a = b = c",
			[]string{"t.tq:1:28: cannot chain '=' after '='; use 'and' or parentheses"}},
		{"chained precede", "retrieve (p.x) when a precede b PRECEDE c",
			[]string{"t.tq:1:33: cannot chain 'precede' after 'precede'; use 'and' or parentheses"}},
		{"temporal operator in value", "retrieve (x = a overlap b) where p precede q",
			[]string{
				"t.tq:1:17: temporal operator 'overlap' is not allowed in a value expression",
				"t.tq:1:36: temporal operator 'precede' is not allowed in a value expression",
			}},
		{"value in temporal", "retrieve (p.x) when p.State valid at 3 as of count(p.x)",
			[]string{
				"t.tq:1:21: 'p.State' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of",
				"t.tq:1:38: '3' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of",
				"t.tq:1:46: 'count(p.x)' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of",
			}},
		{"operators in temporal", "retrieve (p.x) valid from -p to q + 10s when count(p.x) > 1 and end of p.x precede q",
			[]string{
				"t.tq:1:27: operator '-' is not allowed in a temporal expression",
				"t.tq:1:35: operator '+' is not allowed in a temporal expression",
				"t.tq:1:57: operator '>' is not allowed in a temporal expression",
				"t.tq:1:72: 'p.x' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of",
			}},
		{"Var.all", "retrieve (x = p.all) where p.all = 1",
			[]string{
				"t.tq:1:15: 'p.all' is only allowed as a whole target",
				"t.tq:1:28: 'p.all' is only allowed as a whole target",
			}},
		{"duplicate clauses", "range of p is P\nretrieve (p.x)\nwhere p.y = 1\nvalid at p when p overlap \"1\"\nwhere p.y = 2 valid from p to p AS of \"now\" as of \"now\"\nwhen p",
			[]string{
				"t.tq:5:1: duplicate where clause (first at 3:1)",
				"t.tq:5:15: duplicate valid clause (first at 4:1)",
				"t.tq:5:45: duplicate as of clause (first at 5:33)",
				"t.tq:6:1: duplicate when clause (first at 4:12)",
			}},
		{"duplicate aggregate clauses", "retrieve (x = count(p.x for ever for each instant where a = 1 when p where b = 2 when q))",
			[]string{
				"t.tq:1:34: duplicate for clause (first at 1:25)",
				"t.tq:1:70: duplicate where clause (first at 1:51)",
				"t.tq:1:82: duplicate when clause (first at 1:63)",
			}},
		{"into without name", "retrieve into (p.x)\nretrieve into unique (p.x)",
			[]string{
				"t.tq:1:10: missing result name after 'into'",
				"t.tq:2:10: missing result name after 'into'",
			}},
		{"index", "range of c is Clock[2.5]\nrange of d is Clock[99999999999999999999]\nrange of e is Clock[]",
			[]string{
				"t.tq:1:21: index must be an integer, not '2.5'",
				"t.tq:2:21: index '99999999999999999999' is out of range",
				"t.tq:3:21: unexpected ']', expected number",
			}},
		{"several statements", "retrieve (x.)\nretrieve (y = 1 +)\nretrieve (z = 3) where z.a = 1 where z.b = 2\nrange of\nretrieve (q.x) when q.y",
			[]string{
				"t.tq:1:13: unexpected ')', expected one of: name, 'all'",
				"t.tq:2:18: unexpected ')', expected an expression",
				"t.tq:3:32: duplicate where clause (first at 3:18)",
				"t.tq:5:1: unexpected 'retrieve', expected name",
				"t.tq:5:21: 'q.y' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of",
			}},
		{"invalid UTF-8", "retrieve (x = \"a\xffb\")",
			[]string{"t.tq:1:17: invalid UTF-8 encoding"}},
		{"too deep", deep,
			[]string{"t.tq:1:514: expression nested too deeply (more than 500 levels)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { frontEnd.CheckErrors(t, tt.in, tt.want) })
	}
}

// At most front.MaxErrors diagnostics, then "too many errors".
func TestErrorCap(t *testing.T) {
	_, err := Parse("t", strings.Repeat("retrieve (x = )\n", 30))
	list := source.Diagnostics(err)
	if len(list) != front.MaxErrors+1 {
		t.Fatalf("%d diagnostics:\n%v", len(list), err)
	}
	if last := list[front.MaxErrors]; last.Msg != "too many errors" || last.Pos != (pos(21, 15)) {
		t.Errorf("last diagnostic: %v", last)
	}
}

// Nothing is printed, whatever the input.
func TestParsePrintsNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	for _, in := range []string{"retrieve (", "retrieve (x = ) ) ) where #", "range of of of", "\"", "retrieve (x = count 5)"} {
		_, _ = Parse("t", in)
	}
	os.Stdout, os.Stderr = stdout, stderr
	w.Close()
	out, _ := readAll(r)
	if len(out) != 0 {
		t.Errorf("Parse printed %q", out)
	}
}

func readAll(f *os.File) ([]byte, error) {
	var buf []byte
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		buf = append(buf, b[:n]...)
		if err != nil {
			return buf, nil
		}
	}
}

func pos(line, col int) Pos { return Pos{Line: line, Col: col} }
