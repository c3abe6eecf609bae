package format

import (
	"bytes"
	"math"
	"testing"

	"github.com/rivo/uniseg"

	"github.com/tqmon/tqmon/algebra"
)

func sample() (*algebra.Table, *algebra.Table) {
	enum := algebra.NewEnumType([]string{"Ready", "Running"})
	iv := &algebra.Table{Rel: &algebra.Relation{Name: "R", Class: algebra.ClassInterval, Attrs: []algebra.Attr{
		{Name: "Proc", Type: algebra.EntityType("Process")},
		{Name: "State", Type: algebra.Type{Kind: algebra.KindEnum, Enum: enum}},
		{Name: "Note", Type: algebra.TypeString},
		{Name: "Load", Type: algebra.TypeFloat},
		{Name: "Since", Type: algebra.TypeTime},
	}}}
	iv.Add([]algebra.Value{algebra.Entity("P1"), algebra.Enum("Running", 1), algebra.Str("a, \"b\""), algebra.Float(0.5), algebra.TimeVal(1.5e9)}, algebra.Beginning, 2e9)
	iv.Add([]algebra.Value{algebra.Entity("Pé"), algebra.Enum("Ready", 0), algebra.Str(""), algebra.Float(math.NaN()), algebra.TimeVal(algebra.Forever)}, 3600e9, algebra.Forever)
	ev := &algebra.Table{Rel: &algebra.Relation{Class: algebra.ClassEvent, Attrs: []algebra.Attr{
		{Name: "N", Type: algebra.TypeInt},
		{Name: "Ok", Type: algebra.TypeBool},
		{Name: "D", Type: algebra.TypeDuration},
	}}}
	ev.AddEvent([]algebra.Value{algebra.Int(-3), algebra.Bool(true), algebra.DurationVal(90e9)}, 1)
	return iv, ev
}

func write(t *testing.T, tab *algebra.Table, o Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, tab, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWrite(t *testing.T) {
	iv, ev := sample()
	tests := []struct {
		tab  *algebra.Table
		o    Options
		want string
	}{
		{iv, Options{Kind: Table}, `R
 Proc | State   | Note   | Load | Since     | from      | to
------+---------+--------+------+-----------+-----------+---------
 P1   | Running | a, "b" |  0.5 | 0:00:01.5 | beginning | 0:00:02
 Pé   | Ready   |        |  NaN | forever   | 1:00:00   | open
(2 tuples)
`},
		{ev, Options{Kind: Table, Time: algebra.TimeNS}, ` N  | Ok   | D     | at
----+------+-------+----
 -3 | true | 1m30s | 1
(1 tuple)
`},
		{iv, Options{Kind: CSV}, `Proc,State,Note,Load,Since,from,to
P1,Running,"a, ""b""",0.5,0:00:01.5,beginning,0:00:02
Pé,Ready,,NaN,forever,1:00:00,
`},
		{ev, Options{Kind: CSV, Time: algebra.TimeRFC3339}, "N,Ok,D,at\n-3,true,1m30s,1970-01-01T00:00:00.000000001Z\n"},
		{iv, Options{Kind: JSONL, Time: algebra.TimeNS}, `{"relation":"R","Proc":"P1","State":"Running","Note":"a, \"b\"","Load":0.5,"Since":1500000000,"from":"beginning","to":2000000000}
{"relation":"R","Proc":"Pé","State":"Ready","Note":"","Load":"NaN","Since":"forever","from":3600000000000,"to":null}
`},
		{ev, Options{Kind: JSONL}, `{"N":-3,"Ok":true,"D":"1m30s","at":"0:00:00.000000001"}
`},
	}
	for _, tt := range tests {
		if got := write(t, tt.tab, tt.o); got != tt.want {
			t.Errorf("%v:\ngot:\n%s\nwant:\n%s", tt.o, got, tt.want)
		}
	}
	empty := &algebra.Table{Rel: ev.Rel}
	if got := write(t, empty, Options{Kind: CSV}); got != "N,Ok,D,at\n" {
		t.Errorf("empty csv %q", got)
	}
	if got := write(t, empty, Options{Kind: JSONL}); got != "" {
		t.Errorf("empty jsonl %q", got)
	}
	if got := write(t, empty, Options{Kind: Table}); got != " N | Ok | D | at\n---+----+---+----\n(0 tuples)\n" {
		t.Errorf("empty table %q", got)
	}
}

func TestParseKind(t *testing.T) {
	for s, k := range map[string]Kind{"table": Table, "csv": CSV, "jsonl": JSONL} {
		if g, err := ParseKind(s); err != nil || g != k {
			t.Errorf("ParseKind(%s) = %v, %v", s, g, err)
		}
	}
	if _, err := ParseKind("json"); err == nil || err.Error() != `unknown format "json" (want table, csv or jsonl)` {
		t.Errorf("ParseKind(json): %v", err)
	}
}

// TestTableWidth: columns are as wide as their cells look on a terminal
// — a CJK character two cells, a combining accent none — so every row's
// separators stand in the same columns; numbers align right, other
// values left; \x writes one block per tuple.
func TestTableWidth(t *testing.T) {
	rel := &algebra.Relation{Name: "W", Class: algebra.ClassEvent, Attrs: []algebra.Attr{
		{Name: "Name", Type: algebra.TypeString}, {Name: "N", Type: algebra.TypeInt}}}
	tab := &algebra.Table{Rel: rel}
	tab.AddEvent([]algebra.Value{algebra.Str("進程"), algebra.Int(7)}, 1e9)
	tab.AddEvent([]algebra.Value{algebra.Str("e\u0301t\u00e9"), algebra.Int(1234)}, 2e9)
	tab.AddEvent([]algebra.Value{algebra.Str("ab"), algebra.Int(-5)}, 3e9)
	got := write(t, tab, Options{Kind: Table})
	lines := bytes.Split([]byte(got), []byte("\n"))
	bar := -1
	for _, l := range lines[1 : len(lines)-2] { // the header, the rule and the rows
		col := uniWidthBefore(string(l), "|", "+")
		if bar == -1 {
			bar = col
		} else if col != bar {
			t.Errorf("separator at display column %d, not %d:\n%s", col, bar, got)
		}
	}
	for _, row := range []string{" 進程 |    7 |", " ab   |   -5 |", " e\u0301t\u00e9  | 1234 |"} {
		if !bytes.Contains([]byte(got), []byte(row)) {
			t.Errorf("no %q in\n%s", row, got)
		}
	}
	x := write(t, tab, Options{Kind: Table, Expanded: true})
	if !bytes.Contains([]byte(x), []byte("-[ RECORD 2 ]----\nName | "+"e\u0301t\u00e9"+"\nN    | 1234\nat   | 0:00:02\n")) {
		t.Errorf("expanded:\n%s", x)
	}
}

// uniWidthBefore is the display column of the first of seps in l.
func uniWidthBefore(l string, seps ...string) int {
	best := -1
	for _, sep := range seps {
		if i := bytes.Index([]byte(l), []byte(sep)); i >= 0 && (best == -1 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return -1
	}
	return uniseg.StringWidth(l[:best])
}
