package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/subject"
)

type demoFlags struct {
	headless   bool
	subject    bool
	listen     string
	token      string
	wait       bool
	duration   time.Duration
	truthDir   string
	cfg        demo.Config
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	params     []string
	stats      bool
	planKind   string
	display    string
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := demoFlags{cfg: demo.DefaultConfig(1)}
	cmd := &cobra.Command{
		Use:   "demo [--headless] [--display SPEC] [--duration D] [--seed S] [--truth DIR] [(-f FILE | -e TEXT)...]",
		Short: "Run the paper's example system live and monitor it",
		Long: `Run the paper's example system — processors running processes that send
messages to mailboxes and block on empty ones — as a real concurrent program
with generated sensors, a resident monitor inside it, and the remote monitor
running your queries against it, all in one process. Only the sensors the
queries need are enabled. Results print as they are produced (an interval
once it has ended; those still open when the run stops are printed last).

Time runs fast: one subject second per real millisecond (--scale), from 0,
so times read like the paper's. --truth DIR also writes the subject's
complete ground truth — every tuple of every relation, whatever was enabled
— as a history that tqmon query --history reads: the same queries over it
give the same results.

With --subject, only the subject and its resident run, serving remote
monitors at --listen (a unix socket path, or host:port with --token); by
default the subject waits for a monitor to connect before it starts, so
nothing it does is missed.

Without --headless the system is shown animated in the terminal (see tqmon
view --help for the keys): the paper's display spec by default — processes
inside the processors running them, shaded by state, mailboxes, arrows for
waits and sends, past states fading — with the paper's ResumedbyP1 query
(when no -f or -e is given) flashing the processes P1 resumed. Time then
runs at 2 subject seconds per real second unless --scale says otherwise,
and the demo runs until q (or --duration, when given).`,
		Example: `  # The paper's system, animated (q quits)
  tqmon demo

  # Your own display spec and queries
  tqmon demo --display testdata/paper/os.display -f testdata/paper/resumed_by_p1.tq

  tqmon demo --headless --duration 3s -f testdata/paper/resumed_by_p1.tq

  # The same, checked against the ground truth
  tqmon demo --headless --duration 3s --seed 7 --truth /tmp/truth -f testdata/paper/resumed_by_p1.tq
  tqmon query --history /tmp/truth -f testdata/paper/resumed_by_p1.tq

  # Subject in one process, monitor in another
  tqmon demo --subject --listen /tmp/tqmon.sock --duration 5s &
  tqmon query --connect /tmp/tqmon.sock -f testdata/paper/resumed_by_p1.tq`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.subject {
				return runSubject(&f, stderr)
			}
			if !f.headless {
				return runDemoDisplay(cmd, &f)
			}
			return runDemo(&f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.headless, "headless", false, "print results instead of showing the animated view")
	fl.BoolVar(&f.subject, "subject", false, "run only the subject and its resident, serving monitors at --listen")
	fl.StringVar(&f.listen, "listen", "", "with --subject: where to serve (a unix socket path, or host:port with --token)")
	fl.StringVar(&f.token, "token", "", "shared token remote monitors must present (required on TCP)")
	fl.BoolVar(&f.wait, "wait", true, "with --subject: start the system only once a monitor has connected")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "how long to run (real time)")
	fl.StringVar(&f.truthDir, "truth", "", "write the complete ground truth as a history directory")
	fl.Uint64Var(&f.cfg.Seed, "seed", 1, "seed of the workload")
	fl.IntVar(&f.cfg.Processors, "processors", f.cfg.Processors, "number of processors (A, B, …)")
	fl.IntVar(&f.cfg.Processes, "processes", f.cfg.Processes, "number of processes (P1, P2, …)")
	fl.IntVar(&f.cfg.Mailboxes, "mailboxes", f.cfg.Mailboxes, "number of mailboxes (M1, M2, …)")
	fl.IntVar(&f.cfg.Sends, "sends", f.cfg.Sends, "messages each process sends before it is done (0: no limit)")
	fl.IntVar(&f.cfg.Fanout, "fanout", f.cfg.Fanout, "each process sends to the N mailboxes after its own (0: any)")
	fl.Float64Var(&f.cfg.Scale, "scale", f.cfg.Scale, "subject seconds per real second")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "clock", "time format: clock, rfc3339 or ns")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print packets received (per sensor) and peak operator state on stderr")
	fl.StringVar(&f.planKind, "plan", "optimized", "optimized (rewritten) or naive plans")
	fl.StringVar(&f.display, "display", "", "display spec of the animated view (default: the paper's)")
	return cmd
}

func runDemo(f *demoFlags, stdout, stderr io.Writer) error {
	if len(f.srcs) == 0 {
		return usageErr(errors.New("demo needs at least one -f FILE or -e TEXT to run"))
	}
	out, err := outputOptions(f.format, f.timeFormat, false)
	if err != nil {
		return usageErr(err)
	}
	naive, err := planNaive(f.planKind)
	if err != nil {
		return usageErr(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	sub, err := subject.Open(ctx, subject.Options{Demo: true, Config: f.cfg, Truth: f.truthDir})
	if err != nil {
		return runtimeErr(err)
	}
	defer sub.Close()
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params})
	if err != nil {
		return usageErr(err)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	stream := newStream(w, out, prog.Stmts)
	_, stats, err := sub.Run(ctx, prog, subject.RunOptions{Naive: naive, Duration: f.duration,
		OnElem: func(i int, e exec.Elem) { subject.Stream(stream, i, e) }})
	if err != nil {
		return runtimeErr(err)
	}
	if err := stream.Close(); err != nil {
		return runtimeErr(err)
	}
	if err := sub.Close(); err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		w.Flush()
		stats.Write(stderr)
	}
	return nil
}

func runSubject(f *demoFlags, stderr io.Writer) error {
	if f.listen == "" {
		return usageErr(errors.New("--subject needs --listen ADDR (a unix socket path, or host:port with --token)"))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	err := subject.Serve(ctx, subject.ServeOptions{Config: f.cfg, Listen: f.listen, Token: f.token, Wait: f.wait,
		Duration: f.duration, Truth: f.truthDir,
		Serving: func() { fmt.Fprintf(stderr, "tqmon demo subject: serving on %s\n", f.listen) }})
	if err != nil {
		return openErr(err)
	}
	return nil
}

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
	cfg := f.cfg
	if !cmd.Flags().Changed("scale") {
		cfg.Scale = displayScale
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if cmd.Flags().Changed("duration") {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, f.duration)
		defer stop()
	}
	sub, err := subject.Open(ctx, subject.Options{Demo: true, Config: cfg, Truth: f.truthDir})
	if err != nil {
		return runtimeErr(err)
	}
	defer sub.Close()
	// The subject starts once the monitor has told the resident what to
	// enable, so nothing it does is missed; it stops when the display ends.
	err = subject.Display(ctx, sub, subject.DisplayOptions{Queries: srcs, Spec: dsrc, ReadSpec: reread, Params: params,
		Live: remote.LiveOptions{Naive: naive}, Title: "tqmon demo: the paper's system, " + dsrc.Name})
	if errors.Is(err, term.ErrNoTerminal) {
		return runtimeErr(fmt.Errorf("%w (--headless prints the results instead)", err))
	}
	if err != nil {
		return openErr(err)
	}
	if err := sub.Close(); err != nil {
		return runtimeErr(err)
	}
	return nil
}
