package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
)

// querySources collects -f and -e in command-line order: both flags append
// to one list, so range declarations flow from one to the next as written.
type querySources struct {
	list  *[]remote.Source
	file  bool
	count *int
}

func (q querySources) String() string { return "" }
func (q querySources) Type() string {
	if q.file {
		return "FILE"
	}
	return "TEXT"
}
func (q querySources) Set(v string) error {
	if q.file {
		data, err := os.ReadFile(v)
		if err != nil {
			return err
		}
		*q.list = append(*q.list, remote.Source{Name: v, Text: string(data)})
		return nil
	}
	*q.count++
	name := "-e"
	if *q.count > 1 {
		name = fmt.Sprintf("-e#%d", *q.count)
	}
	*q.list = append(*q.list, remote.Source{Name: name, Text: v})
	return nil
}

type queryFlags struct {
	historyDir string
	srcs       []remote.Source
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
	dbDir      string // query --db (querydb.go)
	record     string // --record DB: store the results
	kernel     kernelFlags
}

// outputOptions reads --format and --time-format. An empty time format is
// the source's natural one: RFC 3339 when its times are wall-clock times
// (the kernel's), else clock notation (a subject's own time from zero).
func outputOptions(kind, timeFormat string, wallClock bool) (format.Options, error) {
	k, err := format.ParseKind(kind)
	if err != nil {
		return format.Options{}, err
	}
	if timeFormat == "" {
		timeFormat = "clock"
		if wallClock {
			timeFormat = "rfc3339"
		}
	}
	tf, err := algebra.ParseTimeFormat(timeFormat)
	if err != nil {
		return format.Options{}, err
	}
	return format.Options{Kind: k, Time: tf}, nil
}

// planNaive reads --plan.
func planNaive(kind string) (bool, error) {
	switch kind {
	case "optimized", "optimised":
		return false, nil
	case "naive":
		return true, nil
	}
	return false, fmt.Errorf("--plan %q: want optimized or naive", kind)
}

// parseParams reads --param NAME=VALUE flags.
func parseParams(flags []string) (map[string]string, error) {
	params := map[string]string{}
	for _, p := range flags {
		name, val, ok := strings.Cut(p, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: want NAME=VALUE", p)
		}
		name = strings.TrimPrefix(name, "$")
		if _, dup := params[name]; dup {
			return nil, fmt.Errorf("--param %s is given twice", name)
		}
		params[name] = val
	}
	return params, nil
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
	fl.VarP(querySources{list: &f.srcs, file: true}, "file", "f", "read TQuel statements from FILE (repeatable)")
	fl.VarP(querySources{list: &f.srcs, count: &f.exprs}, "expr", "e", "TQuel statements given as TEXT (repeatable)")
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

// runConnect runs the statements live against resident monitors,
// printing results as they are produced.
func runConnect(f *queryFlags, out format.Options, params map[string]string, naive bool, stdout, stderr io.Writer) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	var conns []wire.Conn
	for _, addr := range f.connect {
		c, err := transport.Dial(ctx, addr, f.token)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return runtimeErr(fmt.Errorf("connect %s: %w", addr, err))
		}
		conns = append(conns, c)
	}
	if err := remote.CheckHellos(conns); err != nil {
		return runtimeErr(err)
	}
	hello := conns[0].Hello()
	sf, err := sdl.Parse(hello.Name+".sdl", hello.SDL)
	if err != nil {
		return runtimeErr(fmt.Errorf("resident %s announces a description that does not parse: %w", hello.Name, err))
	}
	cat, err := sensor.Compile(sf)
	if err != nil {
		return runtimeErr(fmt.Errorf("resident %s announces an invalid description: %w", hello.Name, err))
	}
	if f.display != "" {
		return runLiveDisplay(ctx, liveDisplay{cat: cat, conns: conns, srcs: f.srcs, display: f.display, params: params,
			naive: naive, lease: f.lease, duration: f.duration, title: "tqmon query --connect " + strings.Join(f.connect, " ")})
	}
	prog, err := remote.Compile(cat, f.srcs, check.Options{Params: params})
	if err != nil {
		return usageErr(err)
	}
	var rec *recording
	if f.record != "" {
		if rec, err = startRecording(f.record, nil, db.Spec{Name: hello.Name + ".sdl", Text: hello.SDL}, prog.Stmts, nil); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	st := newStreamer(w, out, prog)
	_, stats, err := prog.RunLive(ctx, conns, remote.LiveOptions{Duration: f.duration, Naive: naive, Lease: f.lease, OnElem: func(i int, e stream.Elem) {
		st.elem(i, e)
		w.Flush()
		if rec != nil {
			rec.d.Elem(i, e)
		}
	}})
	if rec != nil {
		if rec.fresh {
			rec.w.SetWindow(algebra.Window{From: stats.Start, To: max(stats.End, stats.Start)})
		}
		if ferr := rec.finish(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return runtimeErr(err)
	}
	if err := st.s.Close(); err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		w.Flush()
		printLiveStats(stderr, stats)
	}
	return nil
}

func printAcquireStats(w io.Writer, st exec.AcquireStats) {
	fmt.Fprintf(w, "packets: %d\n", st.Total)
	names := make([]string, 0, len(st.Packets))
	for n := range st.Packets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "packets %s: %d\n", n, st.Packets[n])
	}
	fmt.Fprintf(w, "peak held: %d\n", st.PeakHeld)
}

func runQuery(cmd *cobra.Command, f *queryFlags, stdout, stderr io.Writer) (err error) {
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
	kind, tf := out.Kind, out.Time
	params, err := parseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	naive, err := planNaive(f.planKind)
	if err != nil {
		return usageErr(err)
	}
	switch {
	case f.kernel.on:
		return runKernel(f, out, params, naive, stdout, stderr)
	case len(f.connect) > 0 && f.historyDir != "", f.dbDir != "" && (len(f.connect) > 0 || f.historyDir != ""):
		return usageErr(errors.New("give one of --history DIR, --db DB or --connect ADDR"))
	case f.dbDir != "":
		return runQueryDB(f, out, params, naive, stdout, stderr)
	case len(f.connect) > 0:
		return runConnect(f, out, params, naive, stdout, stderr)
	case f.historyDir == "":
		return usageErr(errors.New("query needs --history DIR (a directory with a .sdl file and CSV files), --db DB (a database) or --connect ADDR (a resident monitor)"))
	}
	h, err := history.Load(f.historyDir)
	if err != nil {
		return usageErr(err)
	}
	now := algebra.Time(0)
	if _, end, ok := h.Extent(); ok {
		now = end
	}
	prog, err := remote.Compile(h.Catalog, f.srcs, check.Options{Params: params, Now: now})
	if err != nil {
		return usageErr(err)
	}
	if f.explain {
		rw, err := prog.Rewritten(naive)
		if err != nil {
			return runtimeErr(err)
		}
		w := bufio.NewWriter(stdout)
		for i, r := range rw {
			if i > 0 {
				fmt.Fprintln(w)
			}
			name := prog.Stmts[i].Name
			if name == "" {
				name = fmt.Sprintf("retrieve %d", i+1)
			}
			fmt.Fprintf(w, "%s:\n%s", name, rewrite.Explain(r, h))
		}
		return w.Flush()
	}
	var results []remote.Result
	defer func() {
		if err == nil && f.record != "" {
			err = recordTables(f.record, f.historyDir, prog, results, h.Window)
		}
	}()
	if f.acquire {
		var st exec.AcquireStats
		results, st, err = prog.RunAcquire(h, naive)
		if err != nil {
			return runtimeErr(err)
		}
		if f.stats {
			printAcquireStats(stderr, st)
		}
	} else {
		var st remote.Stats
		results, st, err = prog.RunHistory(h)
		if err != nil {
			return runtimeErr(err)
		}
		if f.stats {
			fmt.Fprintf(stderr, "packets: %d (complete history, no sensors involved)\npeak held: %d\n", 0, st.PeakHeld)
		}
	}
	w := bufio.NewWriter(stdout)
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := format.Write(w, r.Table, format.Options{Kind: kind, Time: tf}); err != nil {
			return runtimeErr(err)
		}
	}
	return w.Flush()
}
