package term

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/ui"
)

// ErrNoTerminal is returned when there is no terminal to draw on.
var ErrNoTerminal = errors.New("no terminal for the animated display")

// Options shape a terminal display.
type Options struct {
	// Screen is where to draw; nil: the process's terminal.
	Screen tcell.Screen
	// FPS is the frame rate (default 30).
	FPS int
	// Inbox holds the deltas to apply before each frame.
	Inbox *scene.Inbox
	// Errs carries errors from the goroutines that feed the display: the
	// first ends it, and Run returns it.
	Errs <-chan error
	// Frame, if set, is called after each frame is shown (tests).
	Frame func()
}

// Run shows m until the user quits (q, Ctrl-C, Esc), ctx ends, or an error
// arrives on o.Errs. The terminal is restored however it ends; a panic
// while drawing is re-raised once it is.
func Run(ctx context.Context, m *ui.Model, o Options) (err error) {
	scr := o.Screen
	if scr == nil {
		if scr, err = tcell.NewScreen(); err != nil {
			return fmt.Errorf("%w: %v", ErrNoTerminal, err)
		}
	}
	if err := scr.Init(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoTerminal, err)
	}
	defer func() {
		r := recover()
		scr.Fini()
		if r != nil {
			panic(fmt.Sprintf("%v\n%s", r, debug.Stack()))
		}
	}()
	scr.HideCursor()
	fps := o.FPS
	if fps <= 0 {
		fps = 30
	}
	events := make(chan tcell.Event, 64)
	stop := make(chan struct{})
	go scr.ChannelEvents(events, stop)
	defer close(stop)
	tick := time.NewTicker(time.Second / time.Duration(fps))
	defer tick.Stop()
	errs := o.Errs
	canvas := Canvas{Screen: scr}
	frame := func() {
		if o.Inbox != nil {
			o.Inbox.Drain()
		}
		m.Draw(canvas)
		scr.Show()
		if o.Frame != nil {
			o.Frame()
		}
	}
	frame()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-errs:
			if !ok {
				errs = nil // closed: no more errors can come
				continue
			}
			if err != nil {
				return err
			}
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			switch ev := ev.(type) {
			case *tcell.EventResize:
				scr.Sync()
				frame()
			case *tcell.EventKey:
				if m.Handle(keyOf(ev)) {
					return nil
				}
				frame()
			}
		case <-tick.C:
			frame()
		}
	}
}
