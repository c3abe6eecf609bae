package show

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/gdamore/tcell/v2"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/spec"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/display/ui"
)

// Options shape the terminal side of a display run.
type Options struct {
	// Title is shown top left.
	Title string
	// Screen is where to draw; nil: the process's terminal.
	Screen tcell.Screen
	// FPS is the frame rate (default 30).
	FPS int
	// ReadSpec reads the display spec's text again for the r key; nil: r
	// does nothing.
	ReadSpec func() (string, error)
	// Frame, if set, is called after each frame (tests).
	Frame func()
	// Losses and Sampled say how recorded data was observed: per relation
	// the gaps where packets were lost, with counts, and the relations
	// seen only at sampling instants (a recording of a live run: its Lost
	// relation's rows, its sampled relations). The status line counts
	// the losses as play reaches them ("lost N") and names the sampled
	// relations; the timeline marks the gaps '×'. A live display learns
	// both from its run and adds them to these.
	Losses  []scene.Loss
	Sampled []scene.Sampling
	// Gaps, for a playback, are where its answers are cut (exec.Cut):
	// a recording's, its Lost relation's (exec.TableGaps, as query --db
	// cuts them), the spans of Losses. Nil: nothing is cut. A live display
	// does not use it: its run cuts at the gaps it learns (remote.RunLive).
	Gaps exec.Gaps
	// TZ is the time zone of wall-clock times on the clock and the
	// timeline's axis: "" or "utc", or "local" (--tz; algebra.WithTZ).
	TZ string
	// OnElem, when set, sees each result element of a playback's
	// statements as the network produces it, in play order (exports).
	OnElem func(stmt int, e stream.Elem)
}

// observe puts what o says of the observation into the feed's scene.
func (o Options) observe(f *Feed) {
	for _, l := range o.Losses {
		f.Scene.Observed.Lose(l)
	}
	for _, s := range o.Sampled {
		f.Scene.Observed.Sample(s.Rel, s.Period)
	}
}

// model makes the screen's model over a feed.
func (s *Setup) model(f *Feed, o Options, clock func() algebra.Time) *ui.Model {
	m := ui.New(f.Scene, o.Title, clock)
	m.SetLocal(o.TZ == "local") // the commands check --tz before they draw
	if o.ReadSpec != nil {
		m.Reload = func() (*spec.Spec, error) {
			text, err := o.ReadSpec()
			if err != nil {
				return nil, err
			}
			return s.Reload(text)
		}
	}
	return m
}

// guard runs f, turning a panic into an error on errs: a failing network
// must not take the process down with the terminal in raw mode.
func guard(errs chan<- error, f func() error) {
	defer func() {
		if r := recover(); r != nil {
			errs <- fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	if err := f(); err != nil {
		errs <- err
	}
}

// Playback is a display of recorded data being played: the update
// network runs in a goroutine of its own, pulling elements from Player;
// its results wait in Feed's inbox for the goroutine that draws Model.
type Playback struct {
	Player *play.Player
	Feed   *Feed
	Model  *ui.Model
	errs   chan error
	done   chan struct{} // closed once the network has stopped
	cancel context.CancelFunc
	wg     sync.WaitGroup
	o      Options
}

// NewPlayback starts playing src — primitive elements in time order, such
// as play.HistorySource or a store's replay — through the setup's program,
// paced by a player (po: speed, start, clock); window, when not nil, is the
// span the data observes (Clock ticks). Its answers are cut at o.Gaps.
// Close stops it.
func NewPlayback(ctx context.Context, s *Setup, src stream.Source, window *algebra.Window, po play.Options, o Options) (*Playback, error) {
	plans, err := s.Prog.StoredPlans()
	if err != nil {
		return nil, err
	}
	eo := s.Prog.ExecOptions()
	eo.Gaps = o.Gaps
	net, err := exec.Build(s.Prog.Catalog, s.Prog.Stmts, plans, eo)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pb := &Playback{Feed: s.NewFeed(), errs: make(chan error, 1), done: make(chan struct{}), cancel: cancel, o: o}
	o.observe(pb.Feed)
	pb.Feed.Hook(net)
	if o.OnElem != nil {
		for i, st := range net.Stmts {
			fed, on := st.Result.OnElem, o.OnElem
			st.Result.OnElem = func(e stream.Elem) {
				if fed != nil {
					fed(e)
				}
				on(i, e)
			}
		}
	}
	pb.Player = play.NewPlayer(ctx, src, po)
	pb.Model = s.model(pb.Feed, o, pb.Player.Now)
	pb.Model.Controls = pb.Player
	pb.wg.Add(1)
	go func() {
		defer pb.wg.Done()
		defer close(pb.done)
		guard(pb.errs, func() error {
			_, err := net.RunSource(pb.Player, window)
			if ctx.Err() != nil {
				return nil
			}
			return err
		})
	}()
	return pb, nil
}

// Run shows the playback in the terminal until the user quits, ctx ends or
// the network fails.
func (pb *Playback) Run(ctx context.Context) error {
	return term.Run(ctx, pb.Model, term.Options{Screen: pb.o.Screen, FPS: pb.o.FPS, Inbox: pb.Feed.Inbox, Errs: pb.errs, Frame: pb.o.Frame})
}

// Done is closed once the network has stopped: the whole recording
// played (its results are then all in Feed's inbox), the run failed, or
// Close stopped it.
func (pb *Playback) Done() <-chan struct{} { return pb.done }

// Close stops the playback and waits for its network to stop.
func (pb *Playback) Close() {
	pb.cancel()
	pb.Feed.Inbox.Close()
	pb.wg.Wait()
}
