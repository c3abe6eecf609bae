package show

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
)

// Live runs the setup's program against resident monitors with the
// display in the terminal. lo is passed to remote.RunLive (its OnElem and
// Progress are chained, not replaced). clock is the subject's clock when
// the caller has it (a subject in the same process); nil: the time up to
// which the residents have reported. It returns when the user quits or
// ctx ends (nil), or the run fails; the display stays up after the
// residents end, until the user quits.
func Live(ctx context.Context, s *Setup, conns []wire.Conn, lo remote.LiveOptions, clock func() algebra.Time, o Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := s.NewFeed()
	o.observe(f)
	if err := s.sampled(f.Scene.Observed, lo.Naive); err != nil {
		return err
	}
	var reported atomic.Int64
	reported.Store(algebra.Beginning)
	onElem, progress, onLoss := lo.OnElem, lo.Progress, lo.OnLoss
	lo.OnLoss = func(l remote.Loss) {
		f.Scene.Observed.Lose(scene.Loss{Rel: l.Rel, From: l.From, To: l.To, Count: l.Lost})
		if onLoss != nil {
			onLoss(l)
		}
	}
	lo.OnElem = func(i int, e stream.Elem) {
		f.OnElem(i, e)
		if onElem != nil {
			onElem(i, e)
		}
	}
	lo.Progress = func(t algebra.Time) {
		reported.Store(t)
		if progress != nil {
			progress(t)
		}
	}
	if clock == nil {
		clock = func() algebra.Time { return reported.Load() }
	}
	errs := make(chan error, 1)
	var ended atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer ended.Store(true)
		guard(errs, func() error {
			_, _, err := remote.RunLive(ctx, s.Prog, conns, lo)
			if ctx.Err() != nil {
				return nil
			}
			return err
		})
	}()
	m := s.model(f, o, clock)
	m.Ended = ended.Load
	err := term.Run(ctx, m, term.Options{Screen: o.Screen, FPS: o.FPS, Inbox: f.Inbox, Errs: errs, Frame: o.Frame})
	cancel()
	f.Inbox.Close()
	wg.Wait()
	return err
}

// sampled tells obs which relations the live run samples, and at what
// period: those its plans (as the run rewrites them) read through a
// sampled α, every Clock[n] of the catalog's clock period — the shortest
// when several.
func (s *Setup) sampled(obs *scene.Observation, naive bool) error {
	rw, err := s.Prog.Rewritten(naive)
	if err != nil {
		return err
	}
	for _, r := range rw {
		plan.Walk(r.Final, func(n plan.Node) {
			a, ok := n.(*plan.Alpha)
			if !ok || a.Rel.Strategy.Kind != algebra.Sampled {
				return
			}
			var period time.Duration
			if clk, ok := a.When.(*plan.ClockSrc); ok {
				period = time.Duration(clk.N * s.Prog.Catalog.ClockPeriod)
			}
			obs.Sample(a.Rel.Name, period)
		})
	}
	return nil
}
