package display

import (
	"os"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
)

// frontEnd runs the shared front-end checks on display specs.
var frontEnd = &fronttest.Front[File, Stmt]{
	Name:      "t.display",
	Parse:     Parse,
	Stmts:     func(f *File) []Stmt { return f.Stmts },
	Format:    FormatStmt,
	CheckTree: checkTree,
}

// The paper's display (testdata/paper/os.display), canonically.
var paperStmts = []string{
	"display Processor as box label Processor order by Processor at left",
	"display Process as circle label Process shade State (Running = 100%, Ready = 60%, Waiting = 30%, Done = 10%) order by Process at left",
	"display Mailbox as oval label Mailbox order by Mailbox at right",
	"display RunningOn as inside (Process, Processor)",
	"display Waiting as arrow from Mailbox to Process",
	"display SendMessage as arrow from Process to Mailbox",
	"display ResumedbyP1 as flash Process",
	"time animationtrace decay 5s",
	"show clock",
}

func TestParsePaperSpec(t *testing.T) {
	text, err := os.ReadFile("../../testdata/paper/os.display")
	if err != nil {
		t.Fatal(err)
	}
	f := frontEnd.ParseOK(t, string(text))
	got := strings.TrimSuffix(FormatFile(f), "\n")
	if want := strings.Join(paperStmts, "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	frontEnd.RoundTrip(t, f)
}

func pos(l, c int) Pos { return Pos{Line: l, Col: c} }

// The tree in detail: positions, shapes, mappings.
func TestParseTree(t *testing.T) {
	f := frontEnd.ParseOK(t, strings.Join(paperStmts, "\n"))
	proc := f.Stmts[1].(*DisplayStmt)
	if proc.At != pos(2, 1) || proc.Rel.Name != "Process" || proc.Rel.At != pos(2, 9) {
		t.Errorf("Process: %+v", proc)
	}
	if r := proc.Rep.(*IconRep); r.Shape != Circle || r.At != pos(2, 20) {
		t.Errorf("rep %+v", r)
	}
	shade := proc.Aspects[1].(*ShadeAspect)
	if shade.Attr.Name != "State" || len(shade.Map) != 4 || shade.Map[1].Key.Text != "Ready" ||
		shade.Map[1].Key.Kind != KeyName || shade.Map[1].Percent != 60 || shade.Map[3].Percent != 10 {
		t.Errorf("shade %+v", shade)
	}
	if o := proc.Aspects[2].(*OrderAspect); o.Attr.Name != "Process" || o.Desc {
		t.Errorf("order %+v", o)
	}
	if a := proc.Aspects[3].(*AtAspect); a.Side != Left {
		t.Errorf("at %+v", a)
	}
	in := f.Stmts[3].(*DisplayStmt).Rep.(*LinkRep)
	if in.Kind != Inside || in.From.Name != "Process" || in.To.Name != "Processor" || in.To.At != pos(4, 39) {
		t.Errorf("inside %+v", in)
	}
	if ar := f.Stmts[4].(*DisplayStmt).Rep.(*LinkRep); ar.Kind != Arrow || ar.From.Name != "Mailbox" || ar.To.Name != "Process" {
		t.Errorf("arrow %+v", ar)
	}
	if fl := f.Stmts[6].(*DisplayStmt).Rep.(*FlashRep); fl.Blink || fl.Attr.Name != "Process" {
		t.Errorf("flash %+v", fl)
	}
	ts := f.Stmts[7].(*TimeStmt)
	if !ts.Trace || ts.Decay == nil || ts.Decay.NS != 5e9 || ts.Decay.At != pos(8, 27) {
		t.Errorf("time %+v %+v", ts, ts.Decay)
	}
	if s := f.Stmts[8].(*ShowStmt); s.What != ShowClock {
		t.Errorf("show %+v", s)
	}
}

// Every form the language has, in canonical and other spellings.
func TestParseForms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"DISPLAY p AS Circle", "display p as circle"},
		{"display p as oval; display q as text; display r as point", ""},
		{"display p as line label x", ""},
		{"display r as line from A to B colour C", ""},
		{"display r as arrow from A to B shade N (1 = 50%, 2.5 = 0%, \"x y\" = 100%)", ""},
		{`display p as box colour State (Running = green, Done = grey) order by P desc at center`, ""},
		{"display p as box color S", "display p as box colour S"},
		{"display p as box order by P asc at centre", "display p as box order by P at center"},
		{"display r as blink Process for 1.5s", ""},
		{"display r as flash Process for 1h30m", ""},
		{"time animation", ""},
		{"time animation decay 250ms", ""},
		{"show timeline", ""},
		// Keywords as names.
		{"display display as box label label shade shade order by order at right", ""},
		{"display time as inside (from, to)", ""},
		{"display x as arrow from from to to", ""},
		{"display x as flash flash for 1s", ""},
		{"display QueueLength as plot Length label Mailbox colour Mailbox for 1m", ""},
		{"DISPLAY q AS PLOT n", "display q as plot n"},
		{"display plot as plot plot label plot", ""},
		{`display x as box shade s (display = 1%, "display" = 2%)`, ""},
	}
	for _, tt := range tests {
		f := frontEnd.ParseOK(t, tt.in)
		want := tt.want
		if want == "" {
			want = strings.ReplaceAll(tt.in, "; ", "\n")
		}
		if got := strings.TrimSuffix(FormatFile(f), "\n"); got != want {
			t.Errorf("%q:\n got %s\nwant %s", tt.in, got, want)
		}
		frontEnd.RoundTrip(t, f)
	}
}

// Syntax and literal errors: positioned, several per run, recovery
// resumes at the next statement.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"unknown icon", "display P as hexagon",
			[]string{"t.display:1:14: unexpected 'hexagon', expected one of: 'box', 'circle', 'oval', 'text', 'point', 'line', 'inside', ..."}},
		{"missing as", "display P circle",
			[]string{"t.display:1:11: unexpected 'circle', expected 'as'"}},
		{"bad aspect then next statement", "display P as circle colourful X\ndisplay Q as hexagon\nshow clock",
			[]string{
				"t.display:1:21: unexpected 'colourful', expected an aspect ('label', 'shade', 'colour', 'order', 'at', 'for') or a new statement",
				"t.display:2:14: unexpected 'hexagon', expected one of: 'box', 'circle', 'oval', 'text', 'point', 'line', 'inside', ...",
			}},
		{"percentages", "display P as circle shade S (A = 120%, B = 1.5%, C = x)",
			[]string{
				"t.display:1:34: a shade must be a whole percentage from 0% to 100%, not '120%'",
				"t.display:1:44: a shade must be a whole percentage from 0% to 100%, not '1.5%'",
				"t.display:1:54: a shade is a percentage such as 60%, not 'x'",
			}},
		{"colour percentage", "display P as circle colour S (A = 5%)",
			[]string{"t.display:1:35: a colour is a name such as green, not a percentage"}},
		{"durations", "time animationtrace decay 0s\ndisplay R as flash P for 10mins",
			[]string{
				"t.display:1:27: decay must be positive",
				"t.display:2:26: malformed duration '10mins' (units are ns, us, ms, s, m, h)",
			}},
		{"missing paren", "display R as inside (A, B\nshow clock",
			[]string{"t.display:2:1: unexpected 'show', expected ')'"}},
		{"stray character", "display R as box @ label X",
			[]string{"t.display:1:18: unexpected character '@'"}},
		{"plot without attribute", "display Q as plot",
			[]string{"t.display:1:18: unexpected end of input, expected name"}},
		{"time mode", "time lapse",
			[]string{"t.display:1:6: unexpected 'lapse', expected one of: 'animation', 'animationtrace'"}},
		{"unterminated string", "display R as box shade S (\"abc = 5%)",
			[]string{
				"t.display:1:27: unterminated string",
				"t.display:1:37: unexpected end of input, expected '='",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { frontEnd.CheckErrors(t, tt.in, tt.want) })
	}
}

// checkTree reports the first nil where the tree promises a node.
func checkTree(f *File) string {
	ident := func(x *Ident) bool { return x != nil && x.Name != "" && x.At.IsValid() }
	for _, s := range f.Stmts {
		switch x := s.(type) {
		case *DisplayStmt:
			if !ident(x.Rel) || x.Rep == nil {
				return "display statement without relation or representation"
			}
			switch r := x.Rep.(type) {
			case *LinkRep:
				if !ident(r.From) || !ident(r.To) || r.Kind == 0 {
					return "incomplete link"
				}
			case *FlashRep:
				if !ident(r.Attr) {
					return "flash without attribute"
				}
			case *PlotRep:
				if !ident(r.Attr) {
					return "plot without attribute"
				}
			case *IconRep:
				if r.Shape == 0 {
					return "icon without shape"
				}
			}
			for _, a := range x.Aspects {
				switch a := a.(type) {
				case *LabelAspect:
					if !ident(a.Attr) {
						return "label without attribute"
					}
				case *ShadeAspect:
					if !ident(a.Attr) {
						return "shade without attribute"
					}
					for _, e := range a.Map {
						if e == nil || e.Key == nil || e.Percent < 0 || e.Percent > 100 {
							return "bad shade entry"
						}
					}
				case *ColourAspect:
					if !ident(a.Attr) {
						return "colour without attribute"
					}
					for _, e := range a.Map {
						if e == nil || e.Key == nil || !ident(e.Colour) {
							return "bad colour entry"
						}
					}
				case *OrderAspect:
					if !ident(a.Attr) {
						return "order without attribute"
					}
				case *AtAspect:
					if a.Side == 0 {
						return "at without side"
					}
				case *ForAspect:
					if a.Dur == nil || a.Dur.NS <= 0 {
						return "for without positive duration"
					}
				default:
					return "nil aspect"
				}
			}
		case *TimeStmt:
			if x.Decay != nil && x.Decay.NS <= 0 {
				return "non-positive decay"
			}
		case *ShowStmt:
			if x.What == 0 {
				return "show without what"
			}
		default:
			return "nil statement"
		}
	}
	return ""
}
