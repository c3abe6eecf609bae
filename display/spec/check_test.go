package spec

import (
	"os"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/display/draw"
	dgram "github.com/tqmon/tqmon/grammar/display"
	"github.com/tqmon/tqmon/internal/testkit"
)

// paperSchema is the paper's catalog with ResumedbyP1 derived by its query.
func paperSchema(t *testing.T) Schema {
	t.Helper()
	cat := testkit.PaperCatalog(t)
	q := testkit.ReadFile(t, "../../testdata/paper/resumed_by_p1.tq")
	stmts := testkit.Compile(t, cat, "resumed_by_p1.tq", q, 0)
	return NewSchema(cat, stmts[0].Result)
}

func TestCheckPaperSpec(t *testing.T) {
	text, err := os.ReadFile("../../testdata/paper/os.display")
	if err != nil {
		t.Fatal(err)
	}
	sp, err := Load("os.display", string(text), paperSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Icons) != 3 || len(sp.Links) != 3 || len(sp.Flashes) != 1 {
		t.Fatalf("icons %d links %d flashes %d", len(sp.Icons), len(sp.Links), len(sp.Flashes))
	}
	proc := sp.Icons[1]
	if proc.Rel.Name != "Process" || proc.Shape != dgram.Circle || proc.Key != 0 || proc.Label != 0 ||
		proc.Order != 0 || proc.Side != dgram.Left || proc.Shade == nil || proc.Shade.Attr != 1 {
		t.Errorf("Process icon %+v", proc)
	}
	state := proc.Rel.Attrs[1].Type.Enum
	for member, want := range map[string]int{"Running": 100, "Ready": 60, "Waiting": 30, "Done": 10} {
		v, _ := state.Value(member)
		if got := proc.Shade.Percent(v); got != want {
			t.Errorf("shade %s = %d, want %d", member, got, want)
		}
	}
	if mb := sp.Icons[2]; mb.Side != dgram.Right || mb.Shape != dgram.Oval {
		t.Errorf("Mailbox icon %+v", mb)
	}
	in := sp.Links[0]
	if in.Kind != dgram.Inside || in.Rel.Name != "RunningOn" || in.FromIcon != 1 || in.ToIcon != 0 || in.From != 0 || in.To != 1 {
		t.Errorf("inside %+v", in)
	}
	if w := sp.Links[1]; w.Kind != dgram.Arrow || w.FromIcon != 2 || w.ToIcon != 1 {
		t.Errorf("Waiting %+v", w)
	}
	fl := sp.Flashes[0]
	if fl.Rel.Name != "ResumedbyP1" || !fl.Rel.Derived || fl.Icon != 1 || fl.For != 5e9 {
		t.Errorf("flash %+v", fl)
	}
	if !sp.Trace || sp.Decay != 5e9 || !sp.Clock || sp.Timeline {
		t.Errorf("time %+v", sp)
	}
	var names []string
	for _, r := range sp.Relations() {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, " "); got != "Processor Process Mailbox RunningOn Waiting SendMessage ResumedbyP1" {
		t.Errorf("relations %s", got)
	}
}

// Defaults: shade spread over an enum, colour cycle and map, flash
// duration from the decay, animation without a time statement.
func TestCheckDefaults(t *testing.T) {
	sp, err := Load("t.display", `display Process as text shade State colour State (Done = red)
display ResumedbyP1 as blink Process`, paperSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	ic := sp.Icons[0]
	st := ic.Rel.Attrs[1].Type.Enum
	ready, _ := st.Value("Ready")
	done, _ := st.Value("Done")
	running, _ := st.Value("Running")
	if ic.Shade.Percent(ready) != 100 || ic.Shade.Percent(done) != 10 || ic.Shade.Percent(running) != 70 {
		t.Errorf("spread: %d %d %d", ic.Shade.Percent(ready), ic.Shade.Percent(running), ic.Shade.Percent(done))
	}
	if red, _ := draw.ColorNamed("red"); ic.Colour.Of(done) != red || ic.Colour.Of(ready) != draw.Default {
		t.Errorf("colour map")
	}
	if sp.Trace || sp.Decay != DefaultDecay || sp.Flashes[0].For != DefaultDecay || !sp.Flashes[0].Blink {
		t.Errorf("defaults %+v %+v", sp, sp.Flashes[0])
	}
	if sp.Clock {
		t.Error("clock without show clock")
	}
}

// Several errors per run, each at its place.
func TestCheckErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"unknown relation and attribute", `display Processer as box
display Process as circle label Proces shade Sate
display Mailbox as oval order by Mailbx`, []string{
			"t.display:1:9: unknown relation Processer (did you mean Processor?)",
			"t.display:2:33: Process has no attribute Proces (did you mean Process?)",
			"t.display:2:46: Process has no attribute Sate (did you mean State?)",
			"t.display:3:34: Mailbox has no attribute Mailbx (did you mean Mailbox?)",
		}},
		{"mappings", `display Process as circle shade State (Runing = 100%, Ready = 5%, Ready = 6%) colour State (Done = chartreuse)
display Mailbox as oval shade Mailbox`, []string{
			"t.display:1:40: Runing is not a member of State's type enum(Ready, Running, Waiting, Done) (did you mean Running?)",
			"t.display:1:67: Ready is mapped twice (first at 1:55)",
			"t.display:1:100: unknown colour chartreuse",
			"t.display:2:31: shade Mailbox needs a mapping such as (VALUE = 100%, …): Mailbox is a Mailbox, not an enum, number or bool",
		}},
		{"aspects that do not fit", `display Process as circle for 1s label Process label State
display RunningOn as inside (Process, Processor) colour Process
display Waiting as arrow from Mailbox to Process at left
display Process as box`, []string{
			"t.display:1:27: for does not apply to an icon (it takes label, shade, colour, order by, at)",
			"t.display:1:48: label is given twice (first at 1:34)",
			"t.display:2:39: no icon shows Processor entities: display a relation of them as box, circle, oval, text, point or line",
			"t.display:2:50: colour does not apply to inside, which takes no aspects",
			"t.display:3:31: no icon shows Mailbox entities: display a relation of them as box, circle, oval, text, point or line",
			"t.display:3:50: at does not apply to an arrow (it takes shade, colour)",
			"t.display:4:9: Process is already displayed as an icon (at 1:9)",
		}},
		{"relationships", `display Processor as circle
display Process as box
display Mailbox as box
display RunningOn as inside (Process, Processor)
display Waiting as inside (Mailbox, Mailbox)
display Waiting as arrow from Mailbox to Mailbox
display Waiting as arrow from Mailbox to Nobody
display ResumedbyP1 as flash Processor
time animation
time animationtrace
show clock
show clock`, []string{
			"t.display:4:39: inside: Processor is drawn as a circle; only a box can contain icons",
			"t.display:5:37: inside: Mailbox and Mailbox are both drawn by the icons of Mailbox; an icon cannot contain its own kind",
			"t.display:7:42: Waiting has no attribute Nobody (known: Mailbox, Process)",
			"t.display:8:30: ResumedbyP1 has no attribute Processor (did you mean Process?)",
			"t.display:10:1: the time representation is already given (at 9:1)",
			"t.display:12:1: show clock is already given (at 11:1)",
		}},
		{"nesting", `display Processor as box
display Process as box
display Mailbox as oval
display RunningOn as inside (Process, Processor)
display Waiting as inside (Mailbox, Process)`, []string{
			"t.display:5:1: inside: Process icons are themselves drawn inside others; inclusion nests one level",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("t.display", tt.in, paperSchema(t))
			if err == nil {
				t.Fatal("no error")
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

// TestCheckPlot: a plot of the paper's queue lengths per mailbox over 20
// minutes; a plot of what is not a number, an aspect a plot does not
// take, and an unknown series attribute are errors at their places.
func TestCheckPlot(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	q := testkit.ReadFile(t, "../../testdata/paper/queue_length.tq")
	sc := NewSchema(cat, testkit.Compile(t, cat, "queue_length.tq", q, 0)[0].Result)
	sp, err := Load("t.display", "display QueueLength as plot Length label Mailbox colour Mailbox for 20m\ndisplay Waiting as plot Process", sc)
	if err == nil {
		t.Fatal("a plot of an entity attribute was accepted")
	}
	want := "t.display:2:25: plot Process: a plot draws a number, and Process is a Process"
	if got := err.Error(); !strings.Contains(got, want) {
		t.Errorf("got %s\nwant %s", got, want)
	}
	sp, err = Load("t.display", "display QueueLength as plot Length label Mailbox colour Mailbox for 20m", sc)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Plots) != 1 {
		t.Fatalf("plots %d", len(sp.Plots))
	}
	p := sp.Plots[0]
	if p.Rel.Name != "QueueLength" || p.Attr != 1 || p.Series != 0 || p.Span != 20*60e9 || p.Colour == nil {
		t.Errorf("plot %+v", p)
	}
	if rels := sp.Relations(); len(rels) != 1 || rels[0].Name != "QueueLength" {
		t.Errorf("relations %v", rels)
	}
	sp, err = Load("t.display", "display QueueLength as plot Length", sc)
	if err != nil || sp.Plots[0].Series != -1 || sp.Plots[0].Span != DefaultPlotSpan {
		t.Errorf("defaults: %v %+v", err, sp)
	}
	_, err = Load("t.display", "display QueueLength as plot Length at left label Mailbx", sc)
	for _, want := range []string{
		"t.display:1:36: at does not apply to a plot (it takes label, colour, for)",
		"t.display:1:50: QueueLength has no attribute Mailbx (did you mean Mailbox?)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v\nwant %s", err, want)
		}
	}
}
