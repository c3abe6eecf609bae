package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/progress"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/store/replay"
)

type replayFlags struct {
	dbDir      string
	speed      float64
	max        bool
	from, to   string
	paused     bool
	display    string
	srcs       []remote.Source
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
	fl.VarP(querySources{list: &f.srcs, file: true}, "file", "f", "read TQuel statements from FILE (repeatable)")
	fl.VarP(querySources{list: &f.srcs, count: &f.exprs}, "expr", "e", "TQuel statements given as TEXT (repeatable)")
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "clock", "time format: clock, rfc3339 or ns")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print the blocks and elements read and peak operator state on stderr")
	return cmd
}

// parseTimeFlag reads a --from/--to value.
func parseTimeFlag(name, s string) (*algebra.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := algebra.ParseTime(s)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return &t, nil
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
	if f.display != "" {
		return runReplayDisplay(f, params, from, to)
	}
	d, prog, q, err := openStored(f.dbDir, true, f.srcs, params)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	speed := f.speed
	if f.max {
		speed = 0
	}
	opts := replay.Options{From: from, To: to, Context: ctx,
		Pace: &play.Options{Speed: speed, Paused: f.paused}}
	span, _ := replay.Span(d, opts)
	bar := progress.New(stderr, isTerminal(stderr))
	w := bufio.NewWriter(bar.Guard(stdout))
	st := newStreamer(w, out, prog)
	opts.OnElem = func(i int, e stream.Elem) {
		st.elem(i, e)
		w.Flush()
	}
	var (
		mu     sync.Mutex
		player *play.Player
	)
	opts.Player = func(p *play.Player) {
		mu.Lock()
		player = p
		mu.Unlock()
	}
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
				mu.Lock()
				p := player
				mu.Unlock()
				if p != nil {
					bar.Update(replayProgress(p, span), replayNote(p, span), false)
				}
			}
		}()
	}
	restore := func() {}
	if isTerminal(os.Stdin) {
		keys, undo, err := terminalKeys(os.Stdin)
		if err == nil {
			restore = undo
			go func() {
				for k := range keys {
					mu.Lock()
					p := player
					mu.Unlock()
					if p != nil {
						applyKey(p, k)
					}
				}
			}()
		}
	}
	_, rst, err := replay.Run(d, q, opts)
	restore()
	close(stopUI)
	ui.Wait()
	bar.Done()
	if err != nil {
		return runtimeErr(prog.Locate(err))
	}
	if err := st.s.Close(); err != nil {
		return runtimeErr(err)
	}
	if err := w.Flush(); err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		printReadStats(stderr, d, rst)
	}
	return nil
}

// applyKey acts on a key pressed during a replay.
func applyKey(p *play.Player, k byte) {
	switch k {
	case ' ', 'p':
		p.TogglePause()
	case 'n', '.':
		if !p.Paused() {
			p.Pause()
		}
		p.Step()
	case '+', '=':
		if s := p.Speed(); s > 0 {
			p.SetSpeed(s * 2)
		}
	case '-', '_':
		if s := p.Speed(); s > 0 {
			p.SetSpeed(s / 2)
		}
	case 'q', 3: // q, Ctrl-C
		p.Stop()
	}
}

func replayProgress(p *play.Player, span algebra.Window) float64 {
	if span.To <= span.From {
		return 0
	}
	pos := max(p.Now(), span.From)
	return float64(pos-span.From) / float64(span.To-span.From)
}

func replayNote(p *play.Player, span algebra.Window) string {
	note := algebra.FormatTime(max(p.Now(), span.From), algebra.TimeClock) + " / " + algebra.FormatTime(span.To, algebra.TimeClock)
	if s := p.Speed(); s > 0 {
		note += fmt.Sprintf("  ×%g", s)
	} else {
		note += "  max"
	}
	if p.Paused() {
		note += "  paused (space: resume, n: step)"
	}
	return note
}
