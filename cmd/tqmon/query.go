package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/subject"
)

type queryFlags struct {
	historyDir string
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	tz         string
	params     []string
	acquire    bool
	planKind   string
	stats      bool
	explain    bool
	connect    []string
	nats       natsFlags
	resume     resumeFlags
	token      string
	tls        tlsFlags
	duration   time.Duration
	lease      time.Duration
	display    string
	dbDir      string // query --db
	parquetDir string // query --parquet
	record     string // --record DB: store the results
	kernel     kernelFlags
	maxMemory  query.Bytes
	allowLoss  bool
	export     exportFlags
}

func newQueryCmd(stdout, stderr io.Writer) *cobra.Command {
	var f queryFlags
	cmd := &cobra.Command{
		Use:     "query (--history DIR | --db DB | --parquet DIR | --connect ADDR... | --nats URL | --kernel) (-f FILE | -e TEXT)...",
		Short:   "Evaluate TQuel statements over a history, a database, a live system or the kernel",
		Long:    doc("query"),
		Example: doc("query.example"),
		Args:    kernelArgs(&f.kernel),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQuery(cmd, &f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	addKernelFlags(cmd, fl, &f.kernel, doc("query.kernel"), doc("query.kernel.example"))
	fl.StringVar(&f.historyDir, "history", "", "history directory: one .sdl file and one CSV per relation")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "auto", timeFormatUsage)
	addTZFlag(fl, &f.tz)
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.acquire, "acquire", false, "run acquisitionally: only packets enabled sensors would deliver")
	fl.StringVar(&f.planKind, "plan", "optimized", "plan to acquire with: optimized (rewritten) or naive")
	fl.BoolVar(&f.stats, "stats", false, "print packets delivered (per sensor) and peak operator state on stderr")
	fl.BoolVar(&f.explain, "explain", false, "print the plans, the rewrite rules applied and what each sensor enables, and do not run")
	fl.StringArrayVar(&f.connect, "connect", nil, "ADDR of a resident monitor to query live (repeatable; a unix socket path or host:port)")
	addNATSFlags(fl, &f.nats)
	addResumeFlags(fl, &f.resume)
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP or NATS")
	addTLSFlags(fl, &f.tls, tlsClient)
	fl.DurationVar(&f.duration, "duration", 0, "with --connect or --kernel: stop after this long (default: until interrupted, the residents end or the -c command exits)")
	fl.DurationVar(&f.lease, "lease", 3*time.Second, "with --connect or --nats: the lease residents grant; if the monitor vanishes, they clear its flags once it lapses (with --resume, default 1m: a killed monitor started again within it resumes)")
	fl.StringVar(&f.display, "display", "", "with --connect, --nats or --kernel: show the results animated in the terminal as the display spec SPEC says (see tqmon view --help)")
	fl.StringVar(&f.dbDir, "db", "", "database to query (see tqmon record, tqmon import); --stats reports the blocks read")
	fl.StringVar(&f.parquetDir, "parquet", "", "DIR: a Parquet recording to query (tqmon record --parquet; docs/parquet.md), read through the same time windows as --db; --stats reports the files read")
	addMaxMemoryFlag(fl, &f.maxMemory)
	fl.BoolVar(&f.allowLoss, "allow-loss", false, "live: exit 0 even if packets or a session were lost (losses are still reported; without it such a run exits 3)")
	fl.StringVar(&f.record, "record", "", "DB: also store each named retrieve's result there, as it is produced (a new database, or an existing one)")
	addExportFlags(fl, &f.export)
	return cmd
}

func runQuery(cmd *cobra.Command, f *queryFlags, stdout, stderr io.Writer) error {
	if f.display != "" && len(f.connect) == 0 && f.nats.url == "" && !f.kernel.on {
		return usageErr(errors.New("--display goes with --connect, --nats or --kernel; to play a recorded history into a display, use tqmon view --history DIR --display SPEC"))
	}
	if len(f.srcs) == 0 && f.display == "" {
		return usageErr(errors.New("query needs at least one -f FILE or -e TEXT"))
	}
	if err := f.export.check(false); err != nil {
		return err
	}
	out, err := format.ParseOptions(f.format, f.timeFormat, f.tz)
	if err != nil {
		return usageErr(err)
	}
	naive, params, err := parsePlanParams(f.planKind, f.params)
	if err != nil {
		return err
	}
	if naive && f.kernel.follow {
		// The naive plan keeps `s.Process = $target` as a selection,
		// which compares IDs; --follow works through the sensors'
		// enables, which the rewritten plan makes of it.
		return usageErr(errors.New("--follow goes with the rewritten plan (--plan optimized): it follows descendants through the sensors' enables, which a naive plan does not use"))
	}
	sec, err := f.tls.client()
	if err != nil {
		return err
	}
	so := subject.Options{Notes: stderr, History: f.historyDir, DB: f.dbDir, Parquet: f.parquetDir, Connect: f.connect, NATS: f.nats.url, Hosts: f.nats.hosts, Skew: f.nats.skew, Silence: f.nats.silence, Token: f.token, Security: sec, ResultsInto: f.record,
		MaxMemory: int64(f.maxMemory)}
	var closeKernel func()
	so.Kernel, closeKernel, err = f.kernel.options(f.display != "", stderr)
	if err != nil {
		return err
	}
	defer closeKernel()
	switch n := so.Given(); {
	case n > 1 && f.kernel.on:
		return usageErr(errors.New("give one of --history DIR, --connect ADDR or --kernel"))
	case n > 1:
		return usageErr(errors.New("give one of --history DIR, --db DB, --parquet DIR or --connect ADDR"))
	case n == 0:
		return usageErr(errors.New("query needs --history DIR (a directory with a .sdl file and CSV files), --db DB (a database), --parquet DIR (a Parquet recording), --connect ADDR (a resident monitor) or --nats URL (a fleet's hosts)"))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	var resume *fleet.Resume
	var cp *resumeOut
	if f.resume.name != "" {
		if f.display != "" || f.record != "" || f.export.Given() || f.explain {
			return usageErr(errors.New("--resume goes with printing the answer (not --display, --record, --explain or exports, which a resumed run would feed twice)"))
		}
		if !cmd.Flags().Changed("lease") {
			f.lease = resumeDefaultLease
		}
		if resume, cp, err = openResume(ctx, &f.resume, f.nats.url, f.token, sec, querySig(f), out.Time, stdout, stderr); err != nil {
			return err
		}
		defer resume.Close()
		so.Resume = resume
	}
	sub, err := subject.Open(ctx, so)
	var gone *fleet.GoneError
	if errors.As(err, &gone) {
		fmt.Fprintf(stderr, "tqmon: %v (the answer's watermark: %s)\n", err, algebra.FormatTime(algebra.Time(resume.State.Out.WM), out.Time))
		return &exitError{code: exitIncomplete, err: err}
	}
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	maps.Copy(params, sub.Params())
	if f.explain { // before the display, which would otherwise run the queries
		return explainQuery(sub, f.srcs, params, naive, stdout)
	}
	if f.display != "" {
		title := "tqmon query --kernel"
		if len(f.connect) > 0 {
			title = "tqmon query --connect " + strings.Join(f.connect, " ")
		}
		if f.nats.url != "" {
			title = "tqmon query --nats " + f.nats.url
		}
		if f.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, f.duration)
			defer cancel()
		}
		o := subject.DisplayOptions{Queries: f.srcs, Params: params,
			Live: remote.LiveOptions{Naive: naive, Lease: f.lease}, Title: title, TZ: f.tz}
		defer f.export.display(ctx, &o, f.tz, stderr)()
		return display(ctx, sub, f.display, o)
	}
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params, NowFunc: sub.Now})
	if err != nil {
		return usageErr(err)
	}
	var rec *record.ResultDB
	if f.record != "" {
		if rec, err = subject.Results(sub, f.record, prog.Stmts); err != nil {
			return usageErr(err)
		}
	}
	gcPct := batchGCPercent
	if sub.Live() {
		gcPct = liveGCPercent
	}
	defer tuneGC(os.Getenv, int64(f.maxMemory), gcPct)()
	ro := subject.RunOptions{Acquire: f.acquire, Naive: naive, Duration: f.duration, Lease: f.lease}
	if resume == nil {
		return runProgram(ctx, sub, prog, ro, out, rec, &f.export, f.stats, f.allowLoss, nil, stdout, stderr)
	}
	err = runProgram(ctx, sub, prog, ro, out, rec, &f.export, f.stats, f.allowLoss, cp, stdout, stderr)
	// The run ended in this process (its sessions closed): nothing is
	// left to resume.
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer fcancel()
	if ferr := resume.Finish(fctx); ferr != nil {
		fmt.Fprintf(stderr, "tqmon: %v\n", ferr)
	}
	if cp.err != nil {
		fmt.Fprintf(stderr, "tqmon: --resume %s: how far the answer went out was not always saved (%v): a resumed run may have printed some rows twice\n", f.resume.name, cp.err)
	}
	return err
}

// querySig identifies a resumable query: its sources and what shapes its
// printed answer.
func querySig(f *queryFlags) string {
	h := fnv.New64a()
	for _, s := range f.srcs {
		fmt.Fprintf(h, "%s\x00%s\x00", s.Name, s.Text)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%v", f.format, f.timeFormat, f.tz, f.planKind, f.params)
	return fmt.Sprintf("%016x", h.Sum64())
}

// explainQuery prints the plans of srcs over sub, and runs nothing: with
// a display, --connect or --kernel alike (the -c command, started paused,
// is killed unrun when sub closes).
func explainQuery(sub subject.Subject, srcs []query.Source, params map[string]string, naive bool, stdout io.Writer) error {
	if len(srcs) == 0 {
		return usageErr(errors.New("--explain needs the queries to explain: -f FILE or -e TEXT"))
	}
	prog, err := query.Compile(sub.Catalog(), srcs, check.Options{Params: params, NowFunc: sub.Now})
	if err != nil {
		return usageErr(err)
	}
	if err := sub.Explain(stdout, prog, 0, naive); err != nil {
		return runtimeErr(err)
	}
	return nil
}

// runProgram runs prog over sub, printing its results (and its
// statistics when stats) and exporting them as ex says, and closes sub.
func runProgram(ctx context.Context, sub subject.Subject, prog *query.Program, ro subject.RunOptions, out format.Options,
	rec *record.ResultDB, ex *exportFlags, stats, allowLoss bool, cp subject.Checkpoint, stdout, stderr io.Writer) error {
	ro.OnLoss, ro.TimeFormat = remote.PrintLosses(stderr, out.Time), out.Time
	ro.WireBytes = stats
	po := subject.PrintOptions{Run: ro, Output: out, Results: rec}
	if cp != nil {
		po.Checkpoint = cp
	}
	set, err := ex.start(ctx, prog, out.Time, stderr)
	if err != nil {
		return err
	}
	if set != nil {
		po.Export = set
	}
	st, err := subject.Print(ctx, sub, prog, po, stdout)
	if set != nil {
		if cerr := set.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil && !errors.Is(err, remote.ErrIncomplete) {
		return openErr(err) // a history's files are read as they are run
	}
	if stats {
		st.Write(stderr)
	}
	var exit *subject.CommandExit
	if err := sub.Close(); errors.As(err, &exit) {
		fmt.Fprintf(stderr, "tqmon: %v\n", exit)
	} else if err != nil {
		return runtimeErr(err)
	}
	return incomplete(err, allowLoss, stderr)
}

// display shows sub animated as the display spec at path says (o.Spec
// when path is ""), until the user quits or ctx ends; spec and query
// errors are usage errors, reported before the terminal is touched.
func display(ctx context.Context, sub subject.Subject, path string, o subject.DisplayOptions) error {
	if path != "" {
		if err := o.ReadDisplaySpec(path); err != nil {
			return usageErr(err)
		}
	}
	if err := subject.Display(ctx, sub, o); err != nil {
		return openErr(err)
	}
	return nil
}
