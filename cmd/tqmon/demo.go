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
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/truth"
)

type demoFlags struct {
	headless   bool
	subject    bool
	listen     string
	token      string
	tokenFile  string
	wait       bool
	duration   time.Duration
	truthDir   string
	cfg        demo.Config
	srcs       []remote.Source
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
	fl.StringVar(&f.token, "token", "", "shared token remote monitors must present (required on TCP; or --token-file, or $TQMON_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --subject: read the shared token from this file")
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
	fl.VarP(querySources{list: &f.srcs, file: true}, "file", "f", "read TQuel statements from FILE (repeatable)")
	fl.VarP(querySources{list: &f.srcs, count: &f.exprs}, "expr", "e", "TQuel statements given as TEXT (repeatable)")
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "clock", "time format: clock, rfc3339 or ns")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print packets received (per sensor) and peak operator state on stderr")
	fl.StringVar(&f.planKind, "plan", "optimized", "optimized (rewritten) or naive plans")
	fl.StringVar(&f.display, "display", "", "display spec of the animated view (default: the paper's)")
	return cmd
}

// demoCatalog compiles the demo's sensor description.
func demoCatalog() (*algebra.Catalog, error) {
	f, err := sdl.Parse("os.sdl", ossensors.SDL)
	if err != nil {
		return nil, err
	}
	return sensor.Compile(f)
}

// truthSink returns the recorder as a TruthSink, or nil (not a typed nil).
func truthSink(rec *truth.Recorder) resident.TruthSink {
	if rec == nil {
		return nil
	}
	return rec
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
	sub, err := newLocalSubject(f.cfg, f.truthDir != "")
	if err != nil {
		return runtimeErr(err)
	}
	prog, err := remote.Compile(sub.cat, f.srcs, check.Options{Params: params})
	if err != nil {
		return usageErr(err)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	st := newStreamer(w, out, prog)
	var stats remote.LiveStats
	stop, err := sub.run(f.cfg, f.duration, func(conn wire.Conn, ready func()) error {
		var err error
		_, stats, err = prog.RunLive(context.Background(), []wire.Conn{conn}, remote.LiveOptions{
			Naive:  naive,
			OnElem: st.elem,
			Ready:  ready,
		})
		return err
	})
	if err != nil {
		return runtimeErr(err)
	}
	if err := st.s.Close(); err != nil {
		return runtimeErr(err)
	}
	if f.truthDir != "" {
		if err := sub.writeTruth(f.truthDir, stop); err != nil {
			return runtimeErr(err)
		}
	}
	if f.stats {
		w.Flush()
		printLiveStats(stderr, stats)
	}
	return nil
}

// readySessions starts the subject once a monitor has asked for its lease
// (which it does after every enabling command).
type readySessions struct {
	r     *resident.Resident
	once  sync.Once
	ready chan struct{}
}

type readySession struct {
	*resident.Session
	rs *readySessions
}

func (s readySession) Apply(cmd *wire.Command) error {
	err := s.Session.Apply(cmd)
	if cmd.Kind == wire.CLease {
		s.rs.once.Do(func() { close(s.rs.ready) })
	}
	return err
}

func runSubject(f *demoFlags, stderr io.Writer) error {
	if f.listen == "" {
		return usageErr(errors.New("--subject needs --listen ADDR (a unix socket path, or host:port with --token)"))
	}
	var err error
	if f.token, err = transport.Token(f.token, f.tokenFile); err != nil {
		return usageErr(err)
	}
	var cat *algebra.Catalog
	var rec *truth.Recorder
	if f.truthDir != "" {
		var err error
		if cat, err = demoCatalog(); err != nil {
			return runtimeErr(err)
		}
		rec = truth.New(cat, 0, 0)
	}
	clock := demo.NewClock(f.cfg.Scale)
	res := resident.New(ossensors.Spec(), demo.Options(clock, truthSink(rec)))
	hello := res.Hello()
	if rec != nil {
		rec.SetClock(hello.MonoBase, hello.WallBase)
	}
	rs := &readySessions{r: res, ready: make(chan struct{})}
	srv, err := transport.NewServer(transport.Adapt(res.Hello, func() readySession {
		return readySession{Session: res.Open(), rs: rs}
	}), transport.ServerOptions{Token: f.token})
	if err != nil {
		return usageErr(err)
	}
	lis, err := transport.Listen(f.listen)
	if err != nil {
		return usageErr(err)
	}
	if _, _, err := transport.ParseAddr(f.listen); err == nil && f.token == "" && !isUnix(f.listen) {
		lis.Close()
		return usageErr(errors.New("a TCP listener needs a shared token: --token"))
	}
	go srv.Serve(lis)
	fmt.Fprintf(stderr, "tqmon demo subject: serving on %s\n", f.listen)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if f.wait {
		select {
		case <-rs.ready:
		case <-ctx.Done():
			srv.Stop()
			res.Close()
			return nil
		}
	}
	sens := ossensors.New(res)
	ctx, cancelRun := context.WithTimeout(ctx, f.duration)
	defer cancelRun()
	demo.New(sens, f.cfg).Run(ctx)
	stop := clock.Stop()
	res.Close()
	srv.Stop()
	if rec != nil {
		if err := history.Write(f.truthDir, rec.History(stop), ossensors.SDL, "os.sdl"); err != nil {
			return runtimeErr(err)
		}
	}
	return nil
}

func isUnix(addr string) bool {
	network, _, err := transport.ParseAddr(addr)
	return err == nil && network == "unix"
}
