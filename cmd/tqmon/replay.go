package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/progress"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/replay"
	"github.com/tqmon/tqmon/subject"
)

type replayFlags struct {
	dbDir      string
	speed      float64
	max        bool
	from, to   string
	paused     bool
	display    string
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	params     []string
	stats      bool
}

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay --db DB [--speed X | --max] [--from T] [--to T] [--display SPEC] (-f FILE | -e TEXT)...",
		Short: "Replay a recorded database into queries, at any speed",
		Long: `Replay what a database holds, in time order, into TQuel statements, as if
the recorded system were running again: results print as they are produced
(an interval once it has ended; those still open at the end are printed
last), paced by the recorded time at --speed X (X recorded seconds per real
second; 1 is real time) or as fast as possible with --max. --from and --to
replay only the tuples valid between those times (with their whole valid
times); Clock ticks only there.

On a terminal the replay is interactive: space pauses and resumes, n steps
one instant while paused, + and - double and halve the speed, q stops
(what was replayed stands). A progress bar shows on stderr. Times are
written as for queries: clock notation (H:MM:SS), RFC 3339 or integer
nanoseconds.

With --display SPEC the replay plays into the animated terminal view
instead (see tqmon view): every stored relation, paced as above, with the
queries' results drawn as the spec says; the view's keys apply (space,
+/-, → step, t timeline, q quit).`,
		Example: `  tqmon record --demo --duration 3s --db /tmp/run.db
  # The demo's clock runs 1000 times faster than real time: replay it so.
  tqmon replay --db /tmp/run.db --speed 1000 -f testdata/paper/resumed_by_p1.tq

  # One stretch, as fast as possible
  tqmon replay --db /tmp/run.db --max --from 0:10:00 --to 0:20:00 \
    -e 'range of s is SendMessage retrieve (s.Process, s.Mailbox)'

  # Watch it again, animated, ResumedbyP1 flashing
  tqmon replay --db /tmp/run.db --speed 2 --display testdata/paper/os.display \
    -f testdata/paper/resumed_by_p1.tq`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, &f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dbDir, "db", "", "the database to replay")
	fl.Float64Var(&f.speed, "speed", 1, "recorded seconds per real second")
	fl.BoolVar(&f.max, "max", false, "replay as fast as possible")
	fl.StringVar(&f.from, "from", "", "replay from this time (default: the beginning of the recording)")
	fl.StringVar(&f.to, "to", "", "replay up to this time (default: its end)")
	fl.BoolVar(&f.paused, "paused", false, "start paused (on a terminal: space to start, n to step)")
	fl.StringVar(&f.display, "display", "", "play into the animated terminal view described by the display spec SPEC")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "clock", "time format: clock, rfc3339 or ns")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print the blocks and elements read and peak operator state on stderr")
	return cmd
}

func runReplay(cmd *cobra.Command, f *replayFlags, stdout, stderr io.Writer) error {
	switch {
	case f.dbDir == "":
		return usageErr(errors.New("replay needs --db DB"))
	case len(f.srcs) == 0 && f.display == "":
		return usageErr(errors.New("replay needs at least one -f FILE or -e TEXT (or --display SPEC)"))
	case f.max && cmd.Flags().Changed("speed"):
		return usageErr(errors.New("give --speed X or --max, not both"))
	case !f.max && f.speed <= 0:
		return usageErr(errors.New("--speed must be positive (or use --max)"))
	}
	out, err := outputOptions(f.format, f.timeFormat, false)
	if err != nil {
		return usageErr(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	from, err := parseTimeFlag("from", f.from)
	if err != nil {
		return usageErr(err)
	}
	to, err := parseTimeFlag("to", f.to)
	if err != nil {
		return usageErr(err)
	}
	if from != nil && to != nil && *to < *from {
		return usageErr(errors.New("--to is before --from"))
	}
	sub, err := subject.Open(context.Background(), subject.Options{DB: f.dbDir})
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	if f.display != "" {
		return replayDisplay(f, sub, params, from, to)
	}
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params, Now: sub.Now()})
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	speed := f.speed
	if f.max {
		speed = 0
	}
	bar := progress.New(stderr, isTerminal(stderr))
	w := bufio.NewWriter(bar.Guard(stdout))
	stream := newStream(w, out, prog.Stmts)
	var (
		mu     sync.Mutex
		player *replay.Player
	)
	current := func() *replay.Player {
		mu.Lock()
		defer mu.Unlock()
		return player
	}
	ro := subject.RunOptions{From: from, To: to, Pace: &replay.PlayerOptions{Speed: speed, Paused: f.paused},
		OnElem: func(i int, e exec.Elem) {
			subject.Stream(stream, i, e)
			w.Flush()
		},
		Player: func(p *replay.Player) {
			mu.Lock()
			player = p
			mu.Unlock()
		}}
	stopUI := make(chan struct{})
	var ui sync.WaitGroup
	if bar.Enabled() {
		ui.Add(1)
		go func() {
			defer ui.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopUI:
					return
				case <-tick.C:
				}
				if p := current(); p != nil {
					bar.Update(p.Progress(p.Span()), p.Note(p.Span()), false)
				}
			}
		}()
	}
	restore := func() {}
	if isTerminal(os.Stdin) {
		if keys, undo, err := terminalKeys(os.Stdin); err == nil {
			restore = undo
			go func() {
				for k := range keys {
					if p := current(); p != nil {
						p.Key(k)
					}
				}
			}()
		}
	}
	_, st, err := sub.Run(ctx, prog, ro)
	restore()
	close(stopUI)
	ui.Wait()
	bar.Done()
	if err != nil {
		return runtimeErr(err)
	}
	if err := stream.Close(); err != nil {
		return runtimeErr(err)
	}
	if err := w.Flush(); err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		st.Write(stderr)
	}
	return nil
}

// replayDisplay plays a database into the animated display: every stored
// relation, in time order, paced by the display's player (space, +/-, →
// and the timeline work as in tqmon view), with the queries' results
// drawn as the spec says.
func replayDisplay(f *replayFlags, sub subject.Subject, params map[string]string, from, to *algebra.Time) error {
	dsrc, err := readDisplay(f.display)
	if err != nil {
		return usageErr(err)
	}
	po := play.Options{Speed: f.speed, Paused: f.paused, Start: from, End: sub.Now()}
	if f.max {
		po.Speed = play.MaxSpeed
	}
	if to != nil {
		po.End = *to
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = subject.Display(ctx, sub, subject.DisplayOptions{Queries: f.srcs, Spec: dsrc, ReadSpec: specReader(f.display),
		Params: params, Play: po, Title: "tqmon replay " + f.dbDir})
	if err != nil {
		return openErr(err)
	}
	return nil
}
