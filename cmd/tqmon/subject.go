package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/truth"
)

// localSubject is the demo subject running in this process with its
// resident and, when asked, a recorder of its ground truth: what tqmon demo
// monitors and tqmon record --demo records.
type localSubject struct {
	cat   *algebra.Catalog
	clock *demo.SubjectClock
	rec   *truth.Recorder
	res   *resident.Resident
	hello *wire.Hello
}

func newLocalSubject(cfg demo.Config, withTruth bool) (*localSubject, error) {
	cat, err := demoCatalog()
	if err != nil {
		return nil, err
	}
	s := &localSubject{cat: cat, clock: demo.NewClock(cfg.Scale)}
	if withTruth {
		s.rec = truth.New(cat, 0, 0)
	}
	s.res = resident.New(ossensors.Spec(), demo.Options(s.clock, truthSink(s.rec)))
	s.hello = s.res.Hello()
	if s.rec != nil {
		s.rec.SetClock(s.hello.MonoBase, s.hello.WallBase)
	}
	return s, nil
}

// run starts monitor on the resident's connection, runs the subject once
// the monitor is ready, for d or until interrupted, then stops it (the
// monitor sees its session end) and waits for the monitor. It returns the
// subject's stop time on its own clock.
func (s *localSubject) run(cfg demo.Config, d time.Duration, monitor func(conn wire.Conn, ready func()) error) (int64, error) {
	ready := make(chan struct{})
	var once sync.Once
	var monErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		monErr = monitor(s.res.Local(), func() { once.Do(func() { close(ready) }) })
	}()
	select {
	case <-ready:
	case <-done:
		s.res.Close()
		if monErr == nil {
			monErr = errors.New("the monitor ended before the subject started")
		}
		return 0, monErr
	case <-time.After(10 * time.Second):
		return 0, errors.New("the monitor did not start")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelRun := context.WithTimeout(ctx, d)
	defer cancelRun()
	demo.New(ossensors.New(s.res), cfg).Run(ctx)
	stop := s.clock.Stop()
	s.res.Close() // a last drain, then the session ends and the monitor finishes
	<-done
	return stop, monErr
}

// window is the span the subject was observed: from its start to stop.
func (s *localSubject) window(stop int64) algebra.Window {
	return algebra.Window{From: s.hello.WallBase, To: s.hello.WallBase + (stop - s.hello.MonoBase)}
}

// writeTruth writes the ground truth as a history directory.
func (s *localSubject) writeTruth(dir string, stop int64) error {
	return history.Write(dir, s.rec.History(stop), ossensors.SDL, "os.sdl")
}
