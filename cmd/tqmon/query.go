package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/subject"
)

type queryFlags struct {
	historyDir string
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	params     []string
	acquire    bool
	planKind   string
	stats      bool
	explain    bool
	connect    []string
	token      string
	duration   time.Duration
	lease      time.Duration
	display    string
	dbDir      string // query --db
	record     string // --record DB: store the results
	kernel     kernelFlags
}

func newQueryCmd(stdout, stderr io.Writer) *cobra.Command {
	var f queryFlags
	cmd := &cobra.Command{
		Use:   "query (--history DIR | --db DB | --connect ADDR) (-f FILE | -e TEXT)...",
		Short: "Evaluate TQuel statements over a history, a database, a live system or the kernel",
		Long: `Evaluate TQuel statements over a recorded history and print each retrieve's
result relation.

A history directory holds one sensor description (.sdl) and one CSV file per
relation (see SDL.md). Statements come from -f files and -e texts, in the
order given; range declarations and derived relations ("retrieve into NAME")
carry from one to the next. $NAME in a query stands for a --param value.

Results are sets: value-equivalent intervals that meet or overlap are
coalesced. Rows are ordered by time, then values. With several retrieves,
results are separated by a blank line.

With --acquire the history stands for the running system: a simulated
resident monitor delivers a packet only when a sensor would fire — when its
flag holder is enabled — and the plan's α operators decide what is enabled.
The plan is rewritten so that as few sensors as possible are enabled
(--plan naive keeps the initial plan); either way the results are the same.
--stats reports on stderr the packets delivered, in all and per sensor, and
the most tuples the operators held at once. --explain prints, instead of
running, each retrieve's initial algebra, every rewrite rule applied, the
final plan, and for each α what it enables and the packets to expect.

--db DB queries a database (tqmon record, tqmon import) instead: temporal
selections on a variable become time windows, so a timeslice reads only
the blocks it needs (--stats reports them, --explain shows the windows).
--record DB also stores each named retrieve's result in a database, as it
is produced (a new one, or beside what an existing one holds).

Exit status: 0 on success, 2 for usage, syntax or semantic errors and
malformed histories, 1 for runtime errors.`,
		Example: `  # The paper's ResumedbyP1: which processes were resumed by P1?
  tqmon query --history testdata/paper -f testdata/paper/resumed_by_p1.tq --format csv

  # An ad-hoc question, with a parameter
  tqmon query --history testdata/paper --param p=P2 \
    -e 'range of p is Process retrieve (p.State) where p.Process = $p'

  # Which sensors does ResumedbyP1 need? Run it as the monitor would.
  tqmon query --history testdata/paper -f testdata/paper/resumed_by_p1.tq --explain
  tqmon query --history testdata/paper -f testdata/paper/resumed_by_p1.tq --acquire --stats

  # Over a database, one instant
  tqmon query --db /tmp/run.db --stats -e 'range of p is Process retrieve (p.Process, p.State) when p overlap "0:10:00"'`,
		Args: kernelArgs(&f.kernel),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQuery(cmd, &f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	addKernelFlags(cmd, fl, &f.kernel, kernelQueryHelp, kernelQueryExamples)
	fl.StringVar(&f.historyDir, "history", "", "history directory: one .sdl file and one CSV per relation")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "", "time format: clock (H:MM:SS.fraction, the default), rfc3339 (the default with --kernel) or ns")
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.acquire, "acquire", false, "run acquisitionally: only packets enabled sensors would deliver")
	fl.StringVar(&f.planKind, "plan", "optimized", "plan to acquire with: optimized (rewritten) or naive")
	fl.BoolVar(&f.stats, "stats", false, "print packets delivered (per sensor) and peak operator state on stderr")
	fl.BoolVar(&f.explain, "explain", false, "print the plans, the rewrite rules applied and what each sensor enables, and do not run")
	fl.StringArrayVar(&f.connect, "connect", nil, "ADDR of a resident monitor to query live (repeatable; a unix socket path or host:port)")
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP")
	fl.DurationVar(&f.duration, "duration", 0, "with --connect or --kernel: stop after this long (default: until interrupted, the residents end or the -c command exits)")
	fl.DurationVar(&f.lease, "lease", 3*time.Second, "with --connect: the lease residents grant; if the monitor vanishes, they clear its flags once it lapses")
	fl.StringVar(&f.display, "display", "", "with --connect: show the results animated in the terminal as the display spec SPEC says (see tqmon view --help)")
	fl.StringVar(&f.dbDir, "db", "", "database to query (see tqmon record, tqmon import); --stats reports the blocks read")
	fl.StringVar(&f.record, "record", "", "DB: also store each named retrieve's result there, as it is produced (a new database, or an existing one)")
	return cmd
}

const kernelQueryHelp = `

With --kernel the subject is the Linux kernel of this machine (run as root):
the relations of its built-in description (tqmon sensors list --kernel),
extended by --spec files (uprobe sensors of your programs), collected by
eBPF programs that are attached only while the query needs them. With
-c, the arguments after -- are a command: it starts paused, $target is
its pid, it runs once the sensors are ready (nothing it does is missed)
and the query ends when it has exited (it is killed if the query stops
first). With --target PID, $target is a running process.`

const kernelQueryExamples = `

  # Exactly the system calls a command makes (as root)
  sudo tqmon query --kernel -e 'range of s is Syscall
    retrieve (s.Name) where s.Process = $target' -c -- ls /tmp

  # The files a running process opens, for ten seconds
  sudo tqmon query --kernel --target 1234 --duration 10s \
    -e 'range of f is FileOpen retrieve (f.Path) where f.Process = $target'

  # The command on the processors, animated (q quits)
  sudo tqmon query --kernel --display testdata/kernel/cpus.display \
    -f testdata/kernel/cpus.tq -c -- make -C /tmp/src

  # Calls of a function of your program (a uprobe, declared in a spec)
  sudo tqmon query --kernel --spec calls.sdl \
    -e 'range of c is WorkCall retrieve (c.N) where c.Process = $target' -c -- ./myprog`

func runQuery(cmd *cobra.Command, f *queryFlags, stdout, stderr io.Writer) error {
	if f.display != "" && len(f.connect) == 0 && !f.kernel.on {
		return usageErr(errors.New("--display goes with --connect or --kernel; to play a recorded history into a display, use tqmon view --history DIR --display SPEC"))
	}
	if len(f.srcs) == 0 && f.display == "" {
		return usageErr(errors.New("query needs at least one -f FILE or -e TEXT"))
	}
	out, err := outputOptions(f.format, f.timeFormat, f.kernel.on)
	if err != nil {
		return usageErr(err)
	}
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	naive, err := planNaive(f.planKind)
	if err != nil {
		return usageErr(err)
	}
	so := subject.Options{History: f.historyDir, DB: f.dbDir, Connect: f.connect, Token: f.token, ResultsInto: f.record}
	if so.Kernel, err = f.kernel.options(); err != nil {
		return err
	}
	switch n := so.Given(); {
	case n > 1 && f.kernel.on:
		return usageErr(errors.New("give one of --history DIR, --connect ADDR or --kernel"))
	case n > 1:
		return usageErr(errors.New("give one of --history DIR, --db DB or --connect ADDR"))
	case n == 0:
		return usageErr(errors.New("query needs --history DIR (a directory with a .sdl file and CSV files), --db DB (a database) or --connect ADDR (a resident monitor)"))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	sub, err := subject.Open(ctx, so)
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	maps.Copy(params, sub.Params())
	if f.display != "" {
		title := "tqmon query --kernel"
		if len(f.connect) > 0 {
			title = "tqmon query --connect " + strings.Join(f.connect, " ")
		}
		return showLive(ctx, sub, f.srcs, f.display, params, remote.LiveOptions{Naive: naive, Lease: f.lease}, f.duration, title)
	}
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params, Now: sub.Now()})
	if err != nil {
		return usageErr(err)
	}
	if f.explain {
		if err := sub.Explain(stdout, prog, 0, naive); err != nil {
			return runtimeErr(err)
		}
		return nil
	}
	var rec *record.ResultDB
	if f.record != "" {
		if rec, err = subject.Results(sub, f.record, prog.Stmts); err != nil {
			return usageErr(err)
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	var stream *format.Stream
	ro := subject.RunOptions{Acquire: f.acquire, Naive: naive, Duration: f.duration, Lease: f.lease}
	if sub.Live() {
		stream = newStream(w, out, prog.Stmts)
		ro.OnElem = func(i int, e exec.Elem) {
			subject.Stream(stream, i, e)
			w.Flush()
			if rec != nil {
				rec.Elem(i, e)
			}
		}
	}
	results, stats, err := sub.Run(ctx, prog, ro)
	if rec != nil {
		if st := stats.Live; st != nil {
			rec.Observed(algebra.Window{From: st.Start, To: max(st.End, st.Start)})
		}
		for i, r := range results {
			if stream == nil {
				rec.Table(i, r.Table)
			}
		}
		if cerr := rec.Close(); err == nil && cerr != nil {
			return runtimeErr(cerr)
		}
	}
	if err != nil {
		return runtimeErr(err)
	}
	if stream != nil {
		if err := stream.Close(); err != nil {
			return runtimeErr(err)
		}
	} else if err := writeTables(w, results, out); err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		w.Flush()
		stats.Write(stderr)
	}
	var exit *subject.CommandExit
	if err := sub.Close(); errors.As(err, &exit) {
		w.Flush()
		fmt.Fprintf(stderr, "tqmon: %v\n", exit)
	}
	return nil
}

// newStream prints the results of stmts as they are produced.
func newStream(w io.Writer, o format.Options, stmts []*check.Retrieve) *format.Stream {
	var rels []*algebra.Relation
	for _, r := range stmts {
		rels = append(rels, r.Result)
	}
	return format.NewStream(w, o, rels)
}

// writeTables prints whole results, a blank line between them.
func writeTables(w io.Writer, results []query.Result, o format.Options) error {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := format.Write(w, r.Table, o); err != nil {
			return err
		}
	}
	return nil
}

// showLive shows a live subject animated as the display spec says, the
// queries' results drawn, until the user quits or the duration passes.
func showLive(ctx context.Context, sub subject.Subject, srcs []query.Source, display string, params map[string]string,
	lo remote.LiveOptions, d time.Duration, title string) error {
	dsrc, err := readDisplay(display)
	if err != nil {
		return usageErr(err)
	}
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	err = subject.Display(ctx, sub, subject.DisplayOptions{Queries: srcs, Spec: dsrc, ReadSpec: specReader(display),
		Params: params, Live: lo, Title: title})
	if err != nil {
		return openErr(err)
	}
	return nil
}
