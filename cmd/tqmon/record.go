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

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/export"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/journal"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/record"
	"github.com/tqmon/tqmon/subject"
)

type recordFlags struct {
	demo      bool
	connect   []string
	nats      natsFlags
	kernel    kernelFlags
	token     string
	tls       tlsFlags
	dbDir     string
	parquet   string
	host      string
	every     time.Duration
	journal   string
	fromJ     string
	replicas  int
	relations []string
	duration  time.Duration
	truthDir  string
	retain    time.Duration
	sync      time.Duration
	lease     time.Duration
	verbose   bool
	allowLoss bool
	cfg       demo.Config
	export    exportFlags
}

func newRecordCmd(stdout, stderr io.Writer) *cobra.Command {
	f := recordFlags{cfg: demo.DefaultConfig(1)}
	cmd := &cobra.Command{
		Use:     "record (--demo | --connect ADDR... | --nats URL | --kernel [-c -- CMD...]) (--db DB | --parquet DIR | --journal URL)... [--relations R,...] [--duration D]",
		Short:   "Record a live system's primitive relations into a database",
		Long:    doc("record"),
		Example: doc("record.example"),
		Args:    kernelArgs(&f.kernel),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRecord(&f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.demo, "demo", false, "record the paper's example system, run in this process")
	fl.StringArrayVar(&f.connect, "connect", nil, "ADDR of a resident monitor to record (repeatable; a unix socket path or host:port)")
	addNATSFlags(fl, &f.nats)
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP or NATS")
	addTLSFlags(fl, &f.tls, tlsClient)
	fl.StringVar(&f.dbDir, "db", "", "the database to create (a new or empty directory)")
	fl.StringVar(&f.parquet, "parquet", "", "DIR: also (or instead) record as Parquet files there, partitioned relation=R/host=H/hour=H (a new or empty directory; docs/parquet.md)")
	fl.StringVar(&f.host, "record-host", "", "the host the recording is filed under: the Parquet host column of relations without a Host attribute, the journal's subject (default: this machine's host name)")
	fl.StringVar(&f.journal, "journal", "", "URL: also (or instead) journal the recording into the NATS server's JetStream stream "+journal.Stream+" (subject tqmon.journal.HOST), for tqmon record --from-journal to write as Parquet files")
	fl.IntVar(&f.replicas, "replicas", 1, "with --journal: the nodes of a NATS cluster that keep the journal's stream (3: a node that dies loses nothing)")
	fl.StringVar(&f.fromJ, "from-journal", "", "URL: write the journal of --record-host on this NATS server as Parquet files into --parquet DIR, resuming where a run before stopped; ends when the journal does")
	fl.DurationVar(&f.every, "parquet-every", time.Minute, "with --parquet: write files at least this often in the recording's time (and at each hour's end and on exit); a crash loses at most this much")
	fl.StringSliceVar(&f.relations, "relations", nil, "relations to record, comma-separated (default: every sensed and entity relation)")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (default: --demo 10s; --connect until interrupted or the residents end)")
	fl.StringVar(&f.truthDir, "truth", "", "with --demo: also write the system's complete ground truth as a history directory")
	fl.DurationVar(&f.retain, "retain", 0, "keep only the last D of the recording (in the system's time); 0 keeps everything")
	fl.DurationVar(&f.sync, "sync", 200*time.Millisecond, "make what was recorded durable this often")
	fl.DurationVar(&f.lease, "lease", 3*time.Second, "the lease residents grant; if tqmon vanishes, they clear its flags once it lapses")
	fl.BoolVar(&f.allowLoss, "allow-loss", false, "exit 0 even if packets or a session were lost (losses are still reported; without it such a run exits 3)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "report on stderr each time the recording is synced")
	fl.Uint64Var(&f.cfg.Seed, "seed", 1, "with --demo: seed of the workload")
	fl.Float64Var(&f.cfg.Scale, "scale", f.cfg.Scale, "with --demo: subject seconds per real second")
	addKernelFlags(cmd, fl, &f.kernel, doc("record.kernel"), doc("record.kernel.example"))
	addExportFlags(fl, &f.export)
	return cmd
}

func runRecord(f *recordFlags, stderr io.Writer) error {
	host := f.host
	if host == "" {
		if host, _ = os.Hostname(); host == "" {
			host = "local"
		}
	}
	sec, err := f.tls.client()
	if err != nil {
		return err
	}
	if f.fromJ != "" {
		return consumeJournal(f, host, sec, stderr)
	}
	so := subject.Options{Demo: f.demo, Config: f.cfg, Truth: f.truthDir, Connect: f.connect, NATS: f.nats.url, Hosts: f.nats.hosts, Skew: f.nats.skew, Silence: f.nats.silence, Token: f.token, Security: sec}
	var closeKernel func()
	so.Kernel, closeKernel, err = f.kernel.options(false, stderr)
	if err != nil {
		return err
	}
	defer closeKernel()
	switch {
	case so.Given() != 1:
		return usageErr(errors.New("record needs exactly one of --demo, --connect ADDR (or --nats URL) or --kernel"))
	case f.dbDir == "" && f.parquet == "" && f.journal == "":
		return usageErr(errors.New("record needs --db DB or --parquet DIR (a new directory to record into) or --journal URL"))
	case f.every <= 0:
		return usageErr(errors.New("--parquet-every must be positive"))
	case f.truthDir != "" && !f.demo:
		return usageErr(errors.New("--truth needs --demo: only the in-process system records its ground truth"))
	case f.sync <= 0:
		return usageErr(errors.New("--sync must be positive"))
	case f.retain < 0:
		return usageErr(errors.New("--retain must not be negative"))
	}
	if err := f.export.check(false); err != nil {
		return err
	}
	for i, r := range f.relations {
		f.relations[i] = strings.TrimSpace(r)
	}
	if f.demo && f.duration == 0 {
		f.duration = 10 * time.Second
	}
	opts := record.Options{Relations: f.relations, Duration: f.duration, Lease: f.lease, SyncEvery: f.sync,
		OnLoss: remote.PrintLosses(stderr, algebra.TimeAuto)}
	wopts := db.WriterOptions{Retain: int64(f.retain)}
	if f.verbose {
		wopts.OnCommit = func(c db.CommitInfo) {
			if c.Synced {
				fmt.Fprintln(stderr, c)
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
	set, err := startRecordExport(ctx, &f.export, sub.Catalog(), opts.Relations, stderr)
	if err != nil {
		return err
	}
	if set != nil {
		opts.OnElem, opts.Progress = set.Elem, set.Watermark
	}
	to := subject.Stores{DB: f.dbDir, Writer: wopts, Parquet: f.parquet, ParquetOptions: parquet.Options{Host: host, Every: f.every}}
	if f.journal != "" {
		if f.replicas < 1 || f.replicas > 5 {
			return usageErr(fmt.Errorf("--replicas %d: want 1 to 5", f.replicas))
		}
		nc, err := fleet.Connect(f.journal, f.token, "tqmon record --journal", so.Security)
		if err != nil {
			return openErr(err)
		}
		defer nc.Close()
		if to.Journal, err = jetstream.New(nc); err != nil {
			return openErr(err)
		}
		to.JournalHost = host
		to.JournalOptions.Replicas = f.replicas
	}
	d, pw, win, err := subject.Record(ctx, sub, to, opts)
	if set != nil {
		if cerr := set.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil && !errors.Is(err, remote.ErrIncomplete) {
		return openErr(err)
	}
	if pw != nil {
		st := pw.Stats()
		fmt.Fprintf(stderr, "wrote %d rows in %d Parquet files (%d bytes) into %s\n", st.Rows, st.Files, st.Bytes, f.parquet)
	}
	if d != nil {
		fmt.Fprintln(stderr, d.Summary(win))
		if cerr := d.Close(); cerr != nil {
			return runtimeErr(cerr)
		}
	}
	return incomplete(err, f.allowLoss, stderr)
}

// startRecordExport starts the exporters of a recording (nil when none
// is asked for): each recorded relation's tuples, as they are recorded,
// under the relation's own name.
func startRecordExport(ctx context.Context, x *exportFlags, cat *algebra.Catalog, relations []string, stderr io.Writer) (*export.Set, error) {
	if !x.Given() {
		return nil, nil
	}
	if len(relations) == 0 {
		relations = record.Recordable(cat)
	}
	prog, err := record.Program(cat, relations)
	if err != nil {
		return nil, usageErr(err)
	}
	rels := make([]*algebra.Relation, len(prog.Stmts))
	for i, s := range prog.Stmts {
		r := *s.Result
		r.Name = relations[i]
		rels[i] = &r
	}
	return x.startRels(ctx, rels, algebra.TimeAuto, stderr)
}

// consumeJournal writes a host's journal as Parquet files (record
// --from-journal): until the journal ends, or an interrupt — which leaves
// the files as a kill would, to resume from.
func consumeJournal(f *recordFlags, host string, sec transport.Security, stderr io.Writer) error {
	if f.parquet == "" {
		return usageErr(errors.New("--from-journal URL needs --parquet DIR: where the journal is written"))
	}
	if f.demo || len(f.connect) > 0 || f.nats.url != "" || f.kernel.on || f.dbDir != "" || f.journal != "" {
		return usageErr(errors.New("--from-journal URL reads a journal: give no live source, --db or --journal with it"))
	}
	nc, err := fleet.Connect(f.fromJ, f.token, "tqmon record --from-journal", sec)
	if err != nil {
		return openErr(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return openErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	err = journal.Consume(ctx, js, host, f.parquet, parquet.Options{Host: host, Every: f.every})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "tqmon: interrupted: %s holds what its last write did; run again to resume\n", f.parquet)
		return nil
	}
	if err != nil {
		return runtimeErr(err)
	}
	fmt.Fprintf(stderr, "wrote the journal of %s into %s\n", host, f.parquet)
	return nil
}
