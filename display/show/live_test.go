package show

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/history"
)

// The live display of the demo subject: icons appear as the subject runs,
// the clock is the subject's, q ends the run, and only the sensors the
// display needs deliver anything (a spec without sends or waits enables
// neither).
func TestLiveDisplay(t *testing.T) {
	cat := testkit.CompileSpec(t, "os.sdl", ossensors.SDL)
	s, err := Compile(Config{Catalog: cat, Check: check.Options{}, Display: query.Source{Name: "t.display", Text: `
display Processor as box label Processor at left
display Process as circle label Process shade State at left
display RunningOn as inside (Process, Processor)
show clock`}})
	if err != nil {
		t.Fatal(err)
	}
	if fed := s.Fed(); len(fed) != 3 {
		t.Fatalf("fed %v", fed)
	}
	clock := demo.NewClock(200)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	defer res.Close()
	sens := ossensors.New(res)
	cfg := demo.DefaultConfig(3)
	cfg.Scale = 200

	sim := tcell.NewSimulationScreen("UTF-8")
	sim.SetSize(100, 30)
	shots := make(chan string, 1000)
	frame := func() {
		select {
		case shots <- term.Text(sim):
		default:
		}
	}
	var mu sync.Mutex
	tapped := map[string]int{}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ready:
			demo.New(sens, cfg).Run(ctx)
		case <-ctx.Done():
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- Live(ctx, s, []wire.Conn{res.Local()}, remote.LiveOptions{
			Ready: func() { close(ready) },
			Tap: func(in remote.Input) {
				mu.Lock()
				tapped[in.Rel]++
				mu.Unlock()
			},
		}, func() algebra.Time { return clock.Now() }, Options{Screen: sim, Title: "live", Frame: frame})
	}()
	deadline := time.After(10 * time.Second)
	var seen string
	for !(strings.Contains(seen, "┌─── A ┐") && strings.Contains(seen, "(P8)") && strings.Contains(seen, "│ (P")) {
		select {
		case seen = <-shots:
		case err := <-done:
			t.Fatalf("display ended: %v", err)
		case <-deadline:
			t.Fatalf("no processors with processes running in them:\n%s", seen)
		}
	}
	first, _, _ := strings.Cut(seen, "\n")
	if !strings.Contains(first, "0:0") {
		t.Errorf("no subject clock in %q", first)
	}
	sim.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the live display")
	}
	mu.Lock()
	defer mu.Unlock()
	if tapped["Process"] == 0 || tapped["RunningOn"] == 0 || tapped["SendMessage"] != 0 || tapped["Waiting"] != 0 {
		t.Errorf("inputs %v: want Process and RunningOn only", tapped)
	}
}

// A spec read again while running replaces the display; a spec drawing a
// relation the run does not collect is refused, the display unchanged.
func TestReloadSpec(t *testing.T) {
	h, err := history.Load(paperDir)
	if err != nil {
		t.Fatal(err)
	}
	text := "display Process as circle\ndisplay Mailbox as oval at right\n"
	s, err := Compile(Config{Catalog: h.Catalog, Display: query.Source{Name: "t.display", Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	start := clockTime(t, "2:50:00")
	pb, err := NewPlayback(context.Background(), s, play.HistorySource(h, nil), h.Window,
		play.Options{Speed: 1, Start: &start, Paused: true, Clock: play.NewFakeClock(time.Unix(0, 0))}, Options{
			ReadSpec: func() (string, error) { return text, nil },
		})
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	settle(t, pb)
	sim := simScreen(t, 100, 30)
	frame(pb, sim)
	text = "display Process as box label State\ndisplay Mailbox as oval at right\ndisplay Waiting as arrow from Mailbox to Process\n"
	pb.Model.Handle(ui.KeyReload)
	frame(pb, sim)
	g := term.Text(sim)
	if !strings.Contains(g, "(P2)") || !strings.Contains(g, "spec not changed: t.display:3:9: Waiting is not collected in this run") {
		t.Errorf("a spec drawing an uncollected relation was not refused:\n%s", g)
	}
	text = "display Process as box label State\ndisplay Mailbox as oval at right\n"
	pb.Model.Handle(ui.KeyReload)
	frame(pb, sim)
	g = term.Text(sim)
	if !strings.Contains(g, " Waiting ┐") || !strings.Contains(g, "spec read again") {
		t.Errorf("the new spec is not drawn:\n%s", g)
	}
}

// lossyConn is a resident connection whose sensors report drops: from
// its tenth batch with counts on, every count's drops rise by lost — what
// a resident whose buffers overflowed would report.
type lossyConn struct {
	wire.Conn
	lost    uint64
	batches int
}

func (c *lossyConn) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if err != nil || len(b.Counts) == 0 {
		return b, err
	}
	if c.batches++; c.batches >= 10 {
		for i := range b.Counts {
			b.Counts[i].Drops += c.lost
		}
	}
	return b, nil
}

// The live display shows what its run observed: the losses the residents
// report ("lost N" on the status line, as the run's own OnLoss sees them,
// and '×' on the timeline) and the relation it samples, with its period.
func TestLiveDisplayShowsLosses(t *testing.T) {
	cat := testkit.CompileSpec(t, "os.sdl", ossensors.SDL)
	s, err := Compile(Config{Catalog: cat, Check: check.Options{}, Display: query.Source{Name: "t.display", Text: `
display Processor as box label Processor at left
display Process as circle label Process shade State at left
display RunningOn as inside (Process, Processor)
show clock`}})
	if err != nil {
		t.Fatal(err)
	}
	clock := demo.NewClock(200)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	defer res.Close()
	cfg := demo.DefaultConfig(3)
	cfg.Scale = 200
	sim := tcell.NewSimulationScreen("UTF-8")
	sim.SetSize(100, 30)
	shots := make(chan string, 1000)
	frame := func() {
		select {
		case shots <- term.Text(sim):
		default:
		}
	}
	var mu sync.Mutex
	var reported uint64
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-ready:
			demo.New(ossensors.New(res), cfg).Run(ctx)
		case <-ctx.Done():
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- Live(ctx, s, []wire.Conn{&lossyConn{Conn: res.Local(), lost: 7}}, remote.LiveOptions{
			Ready: func() { close(ready) },
			OnLoss: func(l remote.Loss) {
				mu.Lock()
				reported += l.Lost
				mu.Unlock()
			},
		}, func() algebra.Time { return clock.Now() }, Options{Screen: sim, Title: "live", Frame: frame})
	}()
	lostRE := regexp.MustCompile(`lost (\d+) · sampled RunningOn/(\S+)`)
	deadline := time.After(20 * time.Second)
	var seen string
	for !lostRE.MatchString(seen) {
		select {
		case seen = <-shots:
		case err := <-done:
			t.Fatalf("display ended: %v", err)
		case <-deadline:
			t.Fatalf("no loss on the status line:\n%s", seen)
		}
	}
	m := lostRE.FindStringSubmatch(seen)
	t.Logf("status: %s", m[0])
	mu.Lock()
	got := reported
	mu.Unlock()
	if n, _ := strconv.ParseUint(m[1], 10, 64); n == 0 || n > got || n%7 != 0 {
		t.Errorf("status says lost %s; the run reported %d so far, in 7s", m[1], got)
	}
	if want := algebra.FormatDuration(cat.ClockPeriod); m[2] != want {
		t.Errorf("sampled every %s, want %s (Clock[1])", m[2], want)
	}
	sim.InjectKey(tcell.KeyRune, 't', tcell.ModNone)
	deadline = time.After(10 * time.Second)
	for !strings.Contains(seen, "lost RunningOn") && !strings.Contains(seen, "lost Process") {
		select {
		case seen = <-shots:
		case err := <-done:
			t.Fatalf("display ended: %v", err)
		case <-deadline:
			t.Fatalf("no lost row on the timeline:\n%s", seen)
		}
	}
	if !strings.Contains(seen, "×") {
		t.Errorf("no gap marked on the timeline:\n%s", seen)
	}
	sim.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("q did not end the live display")
	}
}
