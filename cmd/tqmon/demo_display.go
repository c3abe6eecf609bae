package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/truth"
)

// displayScale is the demo's time scale under the animated view: slow
// enough to watch.
const displayScale = 2

// runDemoDisplay runs the demo system animated in the terminal: the
// display spec (--display, or the paper's) and the queries (-f/-e, or the
// paper's ResumedbyP1) compiled together, only the sensors they need
// enabled, until the user quits (or --duration, when given).
func runDemoDisplay(cmd *cobra.Command, f *demoFlags) error {
	naive, err := planNaive(f.planKind)
	if err != nil {
		return usageErr(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	srcs := f.srcs
	if len(srcs) == 0 {
		texts[defaults.PaperQueryName] = defaults.PaperQuery
		srcs = []query.Source{{Name: defaults.PaperQueryName, Text: defaults.PaperQuery}}
	}
	dsrc := query.Source{Name: defaults.PaperSpecName, Text: defaults.PaperSpec}
	var reread func() (string, error)
	if f.display != "" {
		if dsrc, err = readDisplay(f.display); err != nil {
			return usageErr(err)
		}
		reread = specReader(f.display)
	} else {
		texts[dsrc.Name] = dsrc.Text
	}
	cat, err := demoCatalog()
	if err != nil {
		return runtimeErr(err)
	}
	setup, err := show.Compile(show.Config{Catalog: cat, Queries: srcs, Display: dsrc, Check: check.Options{Params: params}})
	if err != nil {
		return usageErr(err)
	}

	cfg := f.cfg
	if !cmd.Flags().Changed("scale") {
		cfg.Scale = displayScale
	}
	clock := demo.NewClock(cfg.Scale)
	var rec *truth.Recorder
	if f.truthDir != "" {
		rec = truth.New(cat, 0, 0)
	}
	res := resident.New(ossensors.Spec(), demo.Options(clock, truthSink(rec)))
	hello := res.Hello()
	if rec != nil {
		rec.SetClock(hello.MonoBase, hello.WallBase)
	}
	sens := ossensors.New(res)

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if cmd.Flags().Changed("duration") {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, f.duration)
		defer stop()
	}
	// The subject starts once the monitor has told the resident what to
	// enable, so nothing it does is missed; it stops when the display ends.
	ready := make(chan struct{})
	subjectCtx, stopSubject := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ready:
			demo.New(sens, cfg).Run(subjectCtx)
		case <-subjectCtx.Done():
		}
	}()
	var once sync.Once
	err = show.Live(ctx, setup, []wire.Conn{res.Local()},
		remote.LiveOptions{Naive: naive, Ready: func() { once.Do(func() { close(ready) }) }},
		func() algebra.Time { return clock.Now() },
		show.Options{Title: "tqmon demo: the paper's system, " + dsrc.Name, ReadSpec: reread})
	stopSubject()
	wg.Wait()
	stop := clock.Stop()
	res.Close()
	if errors.Is(err, term.ErrNoTerminal) {
		return runtimeErr(fmt.Errorf("%w (--headless prints the results instead)", err))
	}
	if err != nil {
		return runtimeErr(err)
	}
	if rec != nil {
		if err := history.Write(f.truthDir, rec.History(stop), ossensors.SDL, "os.sdl"); err != nil {
			return runtimeErr(err)
		}
	}
	return nil
}
