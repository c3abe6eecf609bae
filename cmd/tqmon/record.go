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
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/record"
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
	sources := 0
	for _, on := range []bool{f.demo, len(f.connect) > 0, f.kernel.on} {
		if on {
			sources++
		}
	}
	switch {
	case sources != 1:
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
	opts := record.Options{Relations: f.relations, Duration: f.duration, Lease: f.lease, SyncEvery: f.sync}
	wopts := db.WriterOptions{Retain: int64(f.retain)}
	if f.verbose {
		wopts.OnCommit = func(c db.CommitInfo) {
			if c.Synced {
				fmt.Fprintf(stderr, "synced %d tuples (%d elements) through %s\n", c.Tuples, c.Elements, algebra.FormatTime(c.Through, algebra.TimeClock))
			}
		}
	}
	switch {
	case f.demo:
		return recordDemo(f, opts, wopts, stderr)
	case f.kernel.on:
		return recordKernel(f, opts, wopts, stderr)
	}
	return recordConnect(f, opts, wopts, stderr)
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

func recordDemo(f *recordFlags, opts record.Options, wopts db.WriterOptions, stderr io.Writer) error {
	if f.duration == 0 {
		f.duration = 10 * time.Second
	}
	sub, err := newLocalSubject(f.cfg, f.truthDir != "")
	if err != nil {
		return runtimeErr(err)
	}
	d, w, err := openRecording(f.dbDir, db.Spec{Name: "os.sdl", Text: ossensors.SDL}, wopts, f.relations)
	if err != nil {
		return err
	}
	opts.Duration = 0 // the subject's run bounds the recording
	stop, err := sub.run(f.cfg, f.duration, func(conn wire.Conn, ready func()) error {
		opts.Ready = ready
		_, err := record.Live(context.Background(), []wire.Conn{conn}, w, d.Catalog(), opts)
		return err
	})
	if err != nil {
		w.Close()
		d.Close()
		return runtimeErr(err)
	}
	if f.truthDir != "" {
		if err := sub.writeTruth(f.truthDir, stop); err != nil {
			w.Close()
			d.Close()
			return runtimeErr(err)
		}
	}
	return finishRecording(d, w, sub.window(stop), stderr)
}

func recordConnect(f *recordFlags, opts record.Options, wopts db.WriterOptions, stderr io.Writer) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	conns, spec, err := dialResidents(ctx, f.connect, f.token)
	if err != nil {
		return err
	}
	d, w, err := openRecording(f.dbDir, spec, wopts, f.relations)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return err
	}
	return recordConns(ctx, conns, d, w, opts, stderr)
}

// recordConns records residents reached by any means (Go residents over
// the transport, kernel residents) into an open database, until the
// context ends, the duration passes or the residents end.
func recordConns(ctx context.Context, conns []wire.Conn, d *db.DB, w *db.Writer, opts record.Options, stderr io.Writer) error {
	st, err := record.Live(ctx, conns, w, d.Catalog(), opts)
	if err != nil {
		w.Close()
		d.Close()
		return runtimeErr(err)
	}
	return finishRecording(d, w, algebra.Window{From: st.Start, To: max(st.End, st.Last, st.Start)}, stderr)
}

// dialResidents connects to resident monitors and returns their shared
// sensor description.
func dialResidents(ctx context.Context, addrs []string, token string) ([]wire.Conn, db.Spec, error) {
	var conns []wire.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, addr := range addrs {
		c, err := transport.Dial(ctx, addr, token)
		if err != nil {
			closeAll()
			return nil, db.Spec{}, runtimeErr(fmt.Errorf("connect %s: %w", addr, err))
		}
		conns = append(conns, c)
	}
	hello := conns[0].Hello()
	if err := checkResidents(conns); err != nil {
		closeAll()
		return nil, db.Spec{}, err
	}
	return conns, db.Spec{Name: hello.Name + ".sdl", Text: hello.SDL}, nil
}

func checkResidents(conns []wire.Conn) error {
	for _, c := range conns {
		h := c.Hello()
		sf, err := sdl.Parse(h.Name+".sdl", h.SDL)
		if err != nil {
			return runtimeErr(fmt.Errorf("resident %s announces a description that does not parse: %w", h.Name, err))
		}
		if _, err := sensor.Compile(sf); err != nil {
			return runtimeErr(fmt.Errorf("resident %s announces an invalid description: %w", h.Name, err))
		}
	}
	return nil
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

// recordKernel records the kernel resident in this process.
func recordKernel(f *recordFlags, opts record.Options, wopts db.WriterOptions, stderr io.Writer) error {
	kr, err := openKernel(&f.kernel, map[string]string{})
	if err != nil {
		return err
	}
	defer kr.Close()
	d, w, err := openRecording(f.dbDir, db.Spec{Name: "linux.sdl", Text: kr.res.SDL()}, wopts, f.relations)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	opts.Ready = kr.Ready
	go kr.Watch()
	return recordConns(ctx, kr.Conns(), d, w, opts, stderr)
}
