package term

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/display/ui"
	"github.com/tqmon/tqmon/internal/testkit"
)

// finiScreen counts Fini calls: the terminal is restored.
type finiScreen struct {
	tcell.SimulationScreen
	mu    sync.Mutex
	finis int
}

func (s *finiScreen) Fini() {
	s.mu.Lock()
	s.finis++
	s.mu.Unlock()
	s.SimulationScreen.Fini()
}

func (s *finiScreen) finished() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finis
}

// controls records the commands it gets.
type controls struct {
	mu    sync.Mutex
	calls []string
}

func (c *controls) rec(s string) { c.mu.Lock(); c.calls = append(c.calls, s); c.mu.Unlock() }
func (c *controls) TogglePause() { c.rec("pause") }
func (c *controls) Faster()      { c.rec("faster") }
func (c *controls) Slower()      { c.rec("slower") }
func (c *controls) Step()        { c.rec("step") }
func (c *controls) State() play.State {
	return play.State{Speed: 1}
}

func model(t *testing.T, clock func() algebra.Time) *ui.Model {
	t.Helper()
	sp, err := spec.Load("t.display", "display Process as circle\nshow clock", spec.NewSchema(testkit.PaperCatalog(t)))
	if err != nil {
		t.Fatal(err)
	}
	return ui.New(scene.New(sp), "test", clock)
}

func screen(t *testing.T) *finiScreen {
	sim := tcell.NewSimulationScreen("UTF-8")
	sim.SetSize(80, 24)
	return &finiScreen{SimulationScreen: sim}
}

// snapshots takes a copy of the screen after each frame (on the
// display's goroutine: the simulation screen is not safe to read
// concurrently).
func snapshots(scr tcell.SimulationScreen) (chan string, func()) {
	ch := make(chan string, 1000)
	return ch, func() {
		select {
		case ch <- Text(scr):
		default:
		}
	}
}

// waitFor waits for a frame that satisfies ok.
func waitFor(t *testing.T, ch chan string, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case s := <-ch:
			if ok(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no frame with %s", what)
		}
	}
}

// Keys reach the controls and the views; q ends the display with the
// screen finalised; a resize redraws at the new size.
func TestRunKeys(t *testing.T) {
	scr := screen(t)
	m := model(t, func() algebra.Time { return 7 * 1e9 })
	c := &controls{}
	m.Controls = c
	shots, hook := snapshots(scr)
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), m, Options{Screen: scr, FPS: 200, Frame: hook}) }()
	waitFor(t, shots, "the clock", func(s string) bool { return strings.Contains(s, "0:00:07") })
	for _, k := range []struct {
		key tcell.Key
		r   rune
	}{{tcell.KeyRune, ' '}, {tcell.KeyRune, '+'}, {tcell.KeyRune, '-'}, {tcell.KeyRight, 0}, {tcell.KeyRune, 't'}, {tcell.KeyRune, '?'}} {
		scr.InjectKey(k.key, k.r, tcell.ModNone)
	}
	waitFor(t, shots, "help over the timeline", func(s string) bool {
		return strings.Contains(s, "step to the next change") && strings.Contains(s, "timeline: entities")
	})
	scr.InjectKey(tcell.KeyRune, 'x', tcell.ModNone) // closes the help only
	waitFor(t, shots, "the timeline without help", func(s string) bool {
		return !strings.Contains(s, "step to the next change") && strings.Contains(s, "timeline: entities, 200ms/column")
	})
	scr.SetSize(50, 12)
	scr.PostEvent(tcell.NewEventResize(50, 12))
	waitFor(t, shots, "a 50×12 frame", func(s string) bool {
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		return len(lines) == 12 && len([]rune(lines[0])) == 50 && strings.Contains(lines[0], "0:00:07")
	})
	scr.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("q did not end the display")
	}
	c.mu.Lock()
	if got := strings.Join(c.calls, " "); got != "pause faster slower step" {
		t.Errorf("controls got %q", got)
	}
	c.mu.Unlock()
	if scr.finished() != 1 {
		t.Errorf("Fini called %d times", scr.finished())
	}
}

// An error from the goroutines feeding the display ends it, screen
// restored, and is returned; so does the end of the context.
func TestRunEnds(t *testing.T) {
	scr := screen(t)
	errs := make(chan error, 1)
	errs <- errors.New("network failed")
	err := Run(context.Background(), model(t, func() algebra.Time { return 0 }), Options{Screen: scr, Errs: errs})
	if err == nil || err.Error() != "network failed" || scr.finished() != 1 {
		t.Errorf("err %v, Fini %d", err, scr.finished())
	}
	scr = screen(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, model(t, func() algebra.Time { return 0 }), Options{Screen: scr}); err != nil || scr.finished() != 1 {
		t.Errorf("err %v, Fini %d", err, scr.finished())
	}
}

// A panic while drawing restores the screen first, then goes on.
func TestRunRestoresOnPanic(t *testing.T) {
	scr := screen(t)
	calls := 0
	m := model(t, func() algebra.Time {
		calls++
		if calls > 2 {
			panic("bad clock")
		}
		return 0
	})
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "bad clock") {
			t.Errorf("recovered %v", r)
		}
		if scr.finished() != 1 {
			t.Errorf("Fini called %d times before the panic went on", scr.finished())
		}
	}()
	Run(context.Background(), m, Options{Screen: scr, FPS: 1000})
	t.Fatal("no panic")
}
