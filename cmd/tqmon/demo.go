package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/defaults"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/display/term"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/subject"
)

type demoFlags struct {
	headless   bool
	subject    bool
	listen     string
	nats       string
	host       string
	token      string
	tokenFile  string
	tls        tlsFlags
	wait       bool
	waitAtMost time.Duration
	duration   time.Duration
	truthDir   string
	cfg        demo.Config
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	tz         string
	params     []string
	stats      bool
	planKind   string
	display    string
	maxMemory  query.Bytes
	allowLoss  bool
	export     exportFlags
}

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	f := demoFlags{cfg: demo.DefaultConfig(1)}
	cmd := &cobra.Command{
		Use:     "demo [--headless] [--display SPEC] [--duration D] [--seed S] [--truth DIR] [(-f FILE | -e TEXT)...]",
		Short:   "Run the paper's example system live and monitor it",
		Long:    doc("demo"),
		Example: doc("demo.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.export.check(f.subject); err != nil {
				return err
			}
			if f.subject {
				// An explicit --duration bounds the wait for a monitor too
				// (a subject told to run 1s does not wait forever
				// unwatched), unless --wait-limit says otherwise.
				if !cmd.Flags().Changed("wait-limit") && cmd.Flags().Changed("duration") {
					f.waitAtMost = f.duration
				}
				if !f.wait {
					f.waitAtMost = 0
				}
				return runSubject(&f, stderr)
			}
			if !f.headless {
				return runDemoDisplay(cmd, &f, stderr)
			}
			return runDemo(&f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.headless, "headless", false, "print results instead of showing the animated view")
	fl.BoolVar(&f.subject, "subject", false, "run only the subject and its resident, serving monitors at --listen")
	fl.StringVar(&f.listen, "listen", "", "with --subject: where to serve (a unix socket path, or host:port with --token)")
	fl.StringVar(&f.nats, "nats", "", "with --subject: join the NATS server at URL as --host instead of listening (see tqmon serve)")
	fl.StringVar(&f.host, "host", "", "with --nats: this demo host's name in the fleet (unique; letters, digits, - and _)")
	fl.StringVar(&f.token, "token", "", "shared token remote monitors must present (required on TCP; or --token-file, or $TQMON_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --subject: read the shared token from this file")
	addTLSFlags(fl, &f.tls, tlsResident)
	fl.BoolVar(&f.allowLoss, "allow-loss", false, "exit 0 even if packets or a session were lost (losses are still reported; without it such a run exits 3)")
	fl.BoolVar(&f.wait, "wait", true, "with --subject: start the system only once a monitor has connected")
	fl.DurationVar(&f.waitAtMost, "wait-limit", 0, "with --subject: end unwatched if no monitor has connected within this long (default: the --duration when given, else no limit; 0: no limit)")
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
	fl.StringVar(&f.timeFormat, "time-format", "auto", timeFormatUsage)
	addTZFlag(fl, &f.tz)
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print packets received (per sensor) and peak operator state on stderr")
	addMaxMemoryFlag(fl, &f.maxMemory)
	fl.StringVar(&f.planKind, "plan", "optimized", "optimized (rewritten) or naive plans")
	fl.StringVar(&f.display, "display", "", "display spec of the animated view (default: the paper's)")
	addExportFlags(fl, &f.export)
	return cmd
}

func runDemo(f *demoFlags, stdout, stderr io.Writer) error {
	if len(f.srcs) == 0 {
		return usageErr(errors.New("demo needs at least one -f FILE or -e TEXT to run"))
	}
	out, err := format.ParseOptions(f.format, f.timeFormat, f.tz)
	if err != nil {
		return usageErr(err)
	}
	naive, params, err := parsePlanParams(f.planKind, f.params)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	sub, err := subject.Open(ctx, subject.Options{Demo: true, Config: f.cfg, Truth: f.truthDir, MaxMemory: int64(f.maxMemory)})
	if err != nil {
		return runtimeErr(err)
	}
	defer sub.Close()
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params})
	if err != nil {
		return usageErr(err)
	}
	return runProgram(ctx, sub, prog, subject.RunOptions{Naive: naive, Duration: f.duration}, out, nil, &f.export, f.stats, f.allowLoss, nil, stdout, stderr)
}

func runSubject(f *demoFlags, stderr io.Writer) error {
	switch {
	case f.listen == "" && f.nats == "":
		return usageErr(errors.New("--subject needs --listen ADDR (a unix socket path, or host:port with --token) or --nats URL --host NAME"))
	case f.listen != "" && f.nats != "":
		return usageErr(errors.New("give --listen ADDR or --nats URL, not both"))
	case f.nats != "" && f.host == "":
		return usageErr(errors.New("--nats needs --host NAME: this demo host's name in the fleet"))
	}
	where := f.listen
	if f.nats != "" {
		where = fmt.Sprintf("%s as host %s", f.nats, f.host)
	}
	var err error
	if f.token, err = transport.Token(f.token, f.tokenFile); err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	err = subject.Serve(ctx, subject.ServeOptions{Config: f.cfg, Listen: f.listen, NATS: f.nats, Host: f.host, Token: f.token, TLS: f.tls.files, Insecure: f.tls.insecure, Wait: f.wait,
		Duration: f.duration, Truth: f.truthDir, WaitAtMost: f.waitAtMost,
		Unwatched: func() {
			fmt.Fprintf(stderr, "tqmon demo subject: no monitor connected within %v; ending unwatched\n", f.waitAtMost)
		},
		Serving: func() { fmt.Fprintf(stderr, "tqmon demo subject: serving on %s\n", where) },
		Ran: func(n int64, took time.Duration) {
			fmt.Fprintf(stderr, "tqmon demo subject: ran %d bursts in %v (%.0f/s)\n", n, took.Round(time.Millisecond), float64(n)/took.Seconds())
		}})
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
func runDemoDisplay(cmd *cobra.Command, f *demoFlags, stderr io.Writer) error {
	if _, err := algebra.WithTZ(algebra.TimeAuto, f.tz); err != nil {
		return usageErr(fmt.Errorf("--tz: %w", err))
	}
	naive, params, err := parsePlanParams(f.planKind, f.params)
	if err != nil {
		return err
	}
	srcs := f.srcs
	if len(srcs) == 0 {
		srcs = []query.Source{{Name: defaults.PaperQueryName, Text: defaults.PaperQuery()}}
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
	title := "tqmon demo: the paper's system, " + cmp.Or(f.display, defaults.PaperSpecName)
	o := subject.DisplayOptions{Queries: srcs, Params: params, Title: title, TZ: f.tz,
		Spec: query.Source{Name: defaults.PaperSpecName, Text: defaults.PaperSpec()}, Live: remote.LiveOptions{Naive: naive}}
	flush := f.export.display(ctx, &o, f.tz, stderr)
	err = display(ctx, sub, f.display, o)
	flush()
	if errors.Is(err, term.ErrNoTerminal) {
		return runtimeErr(fmt.Errorf("%w (--headless prints the results instead)", errors.Unwrap(err)))
	}
	if err != nil {
		return err
	}
	if err := sub.Close(); err != nil {
		return runtimeErr(err)
	}
	return nil
}
