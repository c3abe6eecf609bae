package main

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/display/shell"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/subject"
)

type shellFlags struct {
	historyDir  string
	dbDir       string
	parquetDir  string
	connect     []string
	nats        natsFlags
	token       string
	tls         tlsFlags
	demo        bool
	kernel      bool
	target      string
	seed        uint64
	format      string
	timeFormat  string
	tz          string
	params      []string
	historyFile string
	maxMemory   query.Bytes
	script      string // -f FILE
	export      exportFlags
}

func newShellCmd(stdout, stderr io.Writer) *cobra.Command {
	var f shellFlags
	cmd := &cobra.Command{
		Use:     "shell [--history DIR | --db DB | --parquet DIR | --connect ADDR... | --nats URL | --demo | --kernel]",
		Short:   "Ask TQuel questions interactively",
		Long:    doc("shell"),
		Example: doc("shell.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.script == "" {
				return runShell(&f, os.Stdin, stdout, stderr)
			}
			script, err := os.Open(f.script)
			if err != nil {
				return usageErr(err)
			}
			defer script.Close()
			return runShell(&f, script, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.historyDir, "history", "", "query a recorded history directory")
	fl.StringVar(&f.dbDir, "db", "", "query a recorded database (see tqmon record)")
	fl.StringVar(&f.parquetDir, "parquet", "", "query a Parquet recording (see tqmon record --parquet)")
	fl.StringArrayVar(&f.connect, "connect", nil, "query resident monitors live at ADDR (repeatable)")
	addNATSFlags(fl, &f.nats)
	fl.StringVar(&f.token, "token", "", "shared token for residents reached over TCP or NATS")
	addTLSFlags(fl, &f.tls, tlsClient)
	fl.BoolVar(&f.demo, "demo", false, "run the paper's example system inside the shell and query it live")
	fl.BoolVar(&f.kernel, "kernel", false, "query this machine's Linux kernel live (eBPF sensors; needs root)")
	fl.StringVarP(&f.target, "target", "p", "", "with --kernel: $target is this running process's pid (-p PID, as bpftrace)")
	fl.Uint64Var(&f.seed, "seed", 1, "with --demo: seed of the workload")
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl (\\format changes it)")
	fl.StringVar(&f.timeFormat, "time-format", "auto", timeFormatUsage+" (\\time changes it)")
	addTZFlag(fl, &f.tz)
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable; \\param sets one)")
	addMaxMemoryFlag(fl, &f.maxMemory)
	fl.StringVarP(&f.script, "file", "f", "", "run the statements and commands in FILE, as from a pipe, and exit (1 if one failed), as psql -f")
	fl.StringVar(&f.historyFile, "history-file", shell.DefaultHistoryFile(), "where the shell keeps the lines typed (empty: nowhere)")
	addExportFlags(fl, &f.export)
	return cmd
}

func runShell(f *shellFlags, stdin io.Reader, stdout, stderr io.Writer) error {
	opts, err := format.ParseOptions(f.format, f.timeFormat, f.tz)
	if err != nil {
		return usageErr(err)
	}
	params, err := query.ParseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	if f.export.Given() {
		if err := f.export.check(false); err != nil {
			return err
		}
	}
	if f.export.Hold {
		return usageErr(errors.New("--prometheus-hold does not go with the shell: each statement's metrics are served while it runs"))
	}
	sec, err := f.tls.client()
	if err != nil {
		return err
	}
	so := subject.Options{Notes: stderr, History: f.historyDir, DB: f.dbDir, Parquet: f.parquetDir, Connect: f.connect, NATS: f.nats.url, Hosts: f.nats.hosts, Skew: f.nats.skew, Silence: f.nats.silence, Token: f.token, Security: sec,
		Demo: f.demo, Config: demo.DefaultConfig(f.seed), Background: true, MaxMemory: int64(f.maxMemory)}
	if f.kernel {
		so.Kernel = &subject.KernelOptions{Target: f.target}
	}
	if so.Given() != 1 {
		return usageErr(errors.New("shell needs one source: --history DIR, --db DB, --parquet DIR, --connect ADDR, --nats URL, --demo or --kernel"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	sub, err := subject.Open(ctx, so)
	cancel()
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	maps.Copy(params, sub.Params())
	cfg := shell.Config{Subject: sub, Output: opts, Params: params, HistoryFile: f.historyFile, Render: renderError}
	if f.export.Given() {
		cfg.Export = func(ctx context.Context, rels []*algebra.Relation) (shell.Exporter, error) {
			return f.export.startRels(ctx, rels, opts.Time, stderr)
		}
	}
	err = shell.Run(cfg, stdin, stdout, stderr)
	if err != nil {
		return runtimeErr(err)
	}
	return nil
}
