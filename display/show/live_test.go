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
	var mu sync.Mutex
	tapped := map[string]int{}
	ld := startLiveDemo(t, func(c wire.Conn) wire.Conn { return c }, remote.LiveOptions{
		Tap: func(in remote.Input) {
			mu.Lock()
			tapped[in.Rel]++
			mu.Unlock()
		},
	})
	if fed := ld.setup.Fed(); len(fed) != 3 {
		t.Fatalf("fed %v", fed)
	}
	seen := ld.await("processors with processes running in them", 10*time.Second, func(seen string) bool {
		return strings.Contains(seen, "┌─── A ┐") && strings.Contains(seen, "(P8)") && strings.Contains(seen, "│ (P")
	})
	first, _, _ := strings.Cut(seen, "\n")
	if !strings.Contains(first, "0:0") {
		t.Errorf("no subject clock in %q", first)
	}
	ld.quit()
	mu.Lock()
	defer mu.Unlock()
	if tapped["Process"] == 0 || tapped["RunningOn"] == 0 || tapped["SendMessage"] != 0 || tapped["Waiting"] != 0 {
		t.Errorf("inputs %v: want Process and RunningOn only", tapped)
	}
}

// liveDemo is a live display of the demo subject on a simulated screen:
// processors, processes and what runs on what.
type liveDemo struct {
	t     *testing.T
	setup *Setup
	cat   *algebra.Catalog
	sim   tcell.SimulationScreen
	shots chan string // the screen's text after each frame (some dropped)
	done  chan error  // Live's end
}

// startLiveDemo starts the demo subject's resident, its connection
// through wrap, and Live over it with lo (its Ready chained); the subject
// runs once the residents are ready, until the test ends.
func startLiveDemo(t *testing.T, wrap func(wire.Conn) wire.Conn, lo remote.LiveOptions) *liveDemo {
	t.Helper()
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
	t.Cleanup(func() { res.Close() })
	cfg := demo.DefaultConfig(3)
	cfg.Scale = 200
	ld := &liveDemo{t: t, setup: s, cat: cat, sim: tcell.NewSimulationScreen("UTF-8"),
		shots: make(chan string, 1000), done: make(chan error, 1)}
	ld.sim.SetSize(100, 30)
	frame := func() {
		select {
		case ld.shots <- term.Text(ld.sim):
		default:
		}
	}
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		select {
		case <-ready:
			demo.New(ossensors.New(res), cfg).Run(ctx)
		case <-ctx.Done():
		}
	}()
	lo.Ready = func() { close(ready) }
	go func() {
		ld.done <- Live(ctx, s, []wire.Conn{wrap(res.Local())}, lo,
			func() algebra.Time { return clock.Now() }, Options{Screen: ld.sim, Title: "live", Frame: frame})
	}()
	return ld
}

// await waits up to d for a frame for which ok holds, and returns it.
func (ld *liveDemo) await(what string, d time.Duration, ok func(string) bool) string {
	ld.t.Helper()
	deadline := time.After(d)
	var seen string
	for !ok(seen) {
		select {
		case seen = <-ld.shots:
		case err := <-ld.done:
			ld.t.Fatalf("display ended: %v", err)
		case <-deadline:
			ld.t.Fatalf("no %s:\n%s", what, seen)
		}
	}
	return seen
}

// key presses a key.
func (ld *liveDemo) key(r rune) { ld.sim.InjectKey(tcell.KeyRune, r, tcell.ModNone) }

// quit presses q and waits for the display to end without error.
func (ld *liveDemo) quit() {
	ld.t.Helper()
	ld.key('q')
	select {
	case err := <-ld.done:
		if err != nil {
			ld.t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		ld.t.Fatal("q did not end the live display")
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
	var mu sync.Mutex
	var reported uint64
	ld := startLiveDemo(t, func(c wire.Conn) wire.Conn { return &lossyConn{Conn: c, lost: 7} }, remote.LiveOptions{
		OnLoss: func(l remote.Loss) {
			mu.Lock()
			reported += l.Lost
			mu.Unlock()
		},
	})
	lostRE := regexp.MustCompile(`lost (\d+) · sampled RunningOn/(\S+)`)
	seen := ld.await("loss on the status line", 20*time.Second, lostRE.MatchString)
	m := lostRE.FindStringSubmatch(seen)
	t.Logf("status: %s", m[0])
	mu.Lock()
	got := reported
	mu.Unlock()
	if n, _ := strconv.ParseUint(m[1], 10, 64); n == 0 || n > got || n%7 != 0 {
		t.Errorf("status says lost %s; the run reported %d so far, in 7s", m[1], got)
	}
	if want := algebra.FormatDuration(ld.cat.ClockPeriod); m[2] != want {
		t.Errorf("sampled every %s, want %s (Clock[1])", m[2], want)
	}
	ld.key('t')
	seen = ld.await("lost row on the timeline", 10*time.Second, func(seen string) bool {
		return strings.Contains(seen, "lost RunningOn") || strings.Contains(seen, "lost Process")
	})
	if !strings.Contains(seen, "×") {
		t.Errorf("no gap marked on the timeline:\n%s", seen)
	}
	ld.quit()
}
