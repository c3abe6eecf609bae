package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/subject"
)

type recordFlags struct {
	demo      bool
	connect   []string
	kernel    kernelFlags
	token     string
	dbDir     string
	relations []string
	duration  time.Duration
	truthDir  string
	retain    time.Duration
	sync      time.Duration
	lease     time.Duration
	verbose   bool
	cfg       demo.Config
}

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	f := recordFlags{cfg: demo.DefaultConfig(1)}
	cmd := &cobra.Command{
		Use:   "record (--demo | --connect ADDR... | --kernel [-c -- CMD...]) --db DB [--relations R,...] [--duration D]",
		Short: "Record a live system's primitive relations into a database",
		Long: `Record what a live system's sensors report into a database, to query and
replay later ("collect now, analyse later"). Only the sensors of the
relations recorded are enabled — every relation by default, or those named
by --relations; entity relations are always available.

The database (a new directory) keeps the sensor description, so it is
self-describing. Intervals are recorded when they begin and closed when
they end: if recording stops abruptly — even by SIGKILL — what was synced
(every --sync) reads back, and the intervals then in progress read back as
open. --retain D keeps only the last D of the recording (in the system's
time), dropping older data as it goes.

--demo records the paper's example system, run in this process (see tqmon
demo; --seed and --scale shape it); --truth DIR also writes the system's
complete ground truth, which tqmon export of the database then equals.
--connect records resident monitors (see tqmon query --connect).`,
		Example: `  tqmon record --demo --seed 7 --duration 3s --db /tmp/run.db --truth /tmp/truth
  tqmon export --db /tmp/run.db --out /tmp/exported      # equals /tmp/truth
  tqmon query --db /tmp/run.db -f testdata/paper/resumed_by_p1.tq

  # Only process states and sends, from a subject serving at a socket
  tqmon record --connect /tmp/tqmon.sock --db /tmp/sends.db --relations Process,SendMessage`,
		Args: kernelArgs(&f.kernel),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(&f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.demo, "demo", false, "record the paper's example system, run in this process")
	fl.StringArrayVar(&f.connect, "connect", nil, "ADDR of a resident monitor to record (repeatable; a unix socket path or host:port)")
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP")
	fl.StringVar(&f.dbDir, "db", "", "the database to create (a new or empty directory)")
	fl.StringSliceVar(&f.relations, "relations", nil, "relations to record, comma-separated (default: every sensed and entity relation)")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (default: --demo 10s; --connect until interrupted or the residents end)")
	fl.StringVar(&f.truthDir, "truth", "", "with --demo: also write the system's complete ground truth as a history directory")
	fl.DurationVar(&f.retain, "retain", 0, "keep only the last D of the recording (in the system's time); 0 keeps everything")
	fl.DurationVar(&f.sync, "sync", 200*time.Millisecond, "make what was recorded durable this often")
	fl.DurationVar(&f.lease, "lease", 3*time.Second, "the lease residents grant; if tqmon vanishes, they clear its flags once it lapses")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "report on stderr each time the recording is synced")
	fl.Uint64Var(&f.cfg.Seed, "seed", 1, "with --demo: seed of the workload")
	fl.Float64Var(&f.cfg.Scale, "scale", f.cfg.Scale, "with --demo: subject seconds per real second")
	addKernelFlags(cmd, fl, &f.kernel, kernelRecordHelp, kernelRecordExamples)
	return cmd
}

func runRecord(f *recordFlags, stderr io.Writer) error {
	so := subject.Options{Demo: f.demo, Config: f.cfg, Truth: f.truthDir, Connect: f.connect, Token: f.token}
	var err error
	if so.Kernel, err = f.kernel.options(); err != nil {
		return err
	}
	switch {
	case so.Given() != 1:
		return usageErr(errors.New("record needs exactly one of --demo, --connect ADDR or --kernel"))
	case f.dbDir == "":
		return usageErr(errors.New("record needs --db DB: a new directory to record into"))
	case f.truthDir != "" && !f.demo:
		return usageErr(errors.New("--truth needs --demo: only the in-process system records its ground truth"))
	case f.sync <= 0:
		return usageErr(errors.New("--sync must be positive"))
	case f.retain < 0:
		return usageErr(errors.New("--retain must not be negative"))
	}
	for i, r := range f.relations {
		f.relations[i] = strings.TrimSpace(r)
	}
	if f.demo && f.duration == 0 {
		f.duration = 10 * time.Second
	}
	opts := record.Options{Relations: f.relations, Duration: f.duration, Lease: f.lease, SyncEvery: f.sync}
	wopts := db.WriterOptions{Retain: int64(f.retain)}
	if f.verbose {
		wopts.OnCommit = func(c db.CommitInfo) {
			if c.Synced {
				fmt.Fprintf(stderr, "synced %d tuples (%d elements) through %s\n", c.Tuples, c.Elements, algebra.FormatTime(c.Through, algebra.TimeClock))
			}
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	sub, err := subject.Open(ctx, so)
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	spec, err := sub.Spec()
	if err != nil {
		return runtimeErr(err)
	}
	d, w, err := openRecording(f.dbDir, spec, wopts, f.relations)
	if err != nil {
		return err
	}
	win, err := subject.Record(ctx, sub, d, w, opts)
	var exit *subject.CommandExit
	if err == nil {
		if err = sub.Close(); errors.As(err, &exit) { // else the demo's ground truth failed
			err = nil
		}
	}
	if err != nil {
		w.Close()
		d.Close()
		return runtimeErr(err)
	}
	return finishRecording(d, w, win, stderr)
}

// openRecording creates the database and its writer; a database that
// exists (or a directory that is not empty) is a usage error.
func openRecording(dir string, spec db.Spec, wopts db.WriterOptions, relations []string) (*db.DB, *db.Writer, error) {
	d, err := db.Create(dir, spec)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	if len(relations) > 0 {
		if _, err := record.Program(d.Catalog(), relations); err != nil {
			d.Close()
			os.RemoveAll(dir)
			return nil, nil, usageErr(err)
		}
	}
	w, err := d.NewWriter(wopts)
	if err != nil {
		d.Close()
		return nil, nil, runtimeErr(err)
	}
	return d, w, nil
}

// finishRecording writes the final window, closes the database and
// reports what it holds.
func finishRecording(d *db.DB, w *db.Writer, win algebra.Window, stderr io.Writer) error {
	w.SetWindow(win)
	if err := w.Close(); err != nil {
		d.Close()
		return runtimeErr(err)
	}
	var tuples uint64
	var rels []string
	for _, s := range d.Stats() {
		if s.Tuples > 0 {
			tuples += s.Tuples
			rels = append(rels, fmt.Sprintf("%s %d", s.Name, s.Tuples))
		}
	}
	fmt.Fprintf(stderr, "recorded %d tuples into %s, observed %s to %s (%s)\n", tuples, d.Dir(),
		algebra.FormatTime(win.From, algebra.TimeClock), algebra.FormatTime(win.To, algebra.TimeClock), strings.Join(rels, ", "))
	return d.Close()
}

const kernelRecordHelp = `

--kernel records this machine's Linux kernel (as root): the relations of
tqmon sensors list --kernel (extended by --spec files), each sensor an eBPF
program attached only while it records. With -c, the arguments after -- are
a command: it starts paused, runs once the sensors are attached (nothing it
does is missed), and the recording ends once it has exited.`

const kernelRecordExamples = `

  # Which processes ran where, and the files opened, while a build runs
  sudo tqmon record --kernel --db /tmp/build.db --relations Process,RunningOn,FileOpen -c -- make -C /tmp/src
  tqmon query --db /tmp/build.db -e 'range of f is FileOpen retrieve (f.Process, f.Path)'`
