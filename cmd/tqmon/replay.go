package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/subject"
)

type replayFlags struct {
	dbDir      string
	parquetDir string
	speed      float64
	max        bool
	from, to   string
	paused     bool
	display    string
	srcs       []query.Source
	exprs      int
	format     string
	timeFormat string
	tz         string
	params     []string
	stats      bool
	maxMemory  query.Bytes
	export     exportFlags
}

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:     "replay (--db DB | --parquet DIR) [--speed X | --max] [--from T] [--to T] [--display SPEC] (-f FILE | -e TEXT)...",
		Short:   "Replay a recorded database into queries, at any speed",
		Long:    doc("replay"),
		Example: doc("replay.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, &f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dbDir, "db", "", "the database to replay")
	fl.StringVar(&f.parquetDir, "parquet", "", "the Parquet recording to replay (a record --parquet directory)")
	fl.Float64Var(&f.speed, "speed", 1, "recorded seconds per real second")
	fl.BoolVar(&f.max, "max", false, "replay as fast as possible")
	fl.StringVar(&f.from, "from", "", "replay from this time (default: the beginning of the recording)")
	fl.StringVar(&f.to, "to", "", "replay up to this time (default: its end)")
	fl.BoolVar(&f.paused, "paused", false, "start paused (on a terminal: space to start, n to step)")
	fl.StringVar(&f.display, "display", "", "play into the animated terminal view described by the display spec SPEC")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringVar(&f.format, "format", "table", "output format: table, csv or jsonl")
	fl.StringVar(&f.timeFormat, "time-format", "auto", timeFormatUsage)
	addTZFlag(fl, &f.tz)
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.BoolVar(&f.stats, "stats", false, "print the blocks and elements read and peak operator state on stderr")
	addMaxMemoryFlag(fl, &f.maxMemory)
	addExportFlags(fl, &f.export)
	return cmd
}

func runReplay(cmd *cobra.Command, f *replayFlags, stdout, stderr io.Writer) error {
	switch {
	case f.dbDir == "" && f.parquetDir == "":
		return usageErr(errors.New("replay needs --db DB or --parquet DIR"))
	case f.dbDir != "" && f.parquetDir != "":
		return usageErr(errors.New("give --db DB or --parquet DIR, not both"))
	case len(f.srcs) == 0 && f.display == "":
		return usageErr(errors.New("replay needs at least one -f FILE or -e TEXT (or --display SPEC)"))
	case f.max && cmd.Flags().Changed("speed"):
		return usageErr(errors.New("give --speed X or --max, not both"))
	case !f.max && f.speed <= 0:
		return usageErr(errors.New("--speed must be positive (or use --max)"))
	}
	if err := f.export.check(false); err != nil {
		return err
	}
	out, err := format.ParseOptions(f.format, f.timeFormat, f.tz)
	if err != nil {
		return usageErr(err)
	}
	params, err := query.ParseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	from, err := parseTimeFlag("from", f.from)
	if err != nil {
		return usageErr(err)
	}
	to, err := parseTimeFlag("to", f.to)
	if err != nil {
		return usageErr(err)
	}
	if from != nil && to != nil && *to < *from {
		return usageErr(errors.New("--to is before --from"))
	}
	sub, err := subject.Open(context.Background(), subject.Options{DB: f.dbDir, Parquet: f.parquetDir, MaxMemory: int64(f.maxMemory)})
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	if f.display != "" {
		return replayDisplay(f, sub, params, from, to, stderr)
	}
	prog, err := query.Compile(sub.Catalog(), f.srcs, check.Options{Params: params, NowFunc: sub.Now})
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	speed := f.speed
	if f.max {
		speed = 0
	}
	set, err := f.export.start(ctx, prog, out.Time, stderr)
	if err != nil {
		return err
	}
	term := subject.StartReplayTerminal(os.Stdin, stderr)
	po := subject.PrintOptions{Output: out, Stream: true, Run: subject.RunOptions{From: from, To: to,
		Pace: &play.Options{Speed: speed, Paused: f.paused, Local: f.tz == "local"}, Player: term.Controls.Set}}
	if set != nil {
		po.Export = set
	}
	st, err := subject.Print(ctx, sub, prog, po, term.Out(stdout))
	term.Done()
	if set != nil {
		if cerr := set.Close(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return runtimeErr(err)
	}
	if f.stats {
		st.Write(stderr)
	}
	return nil
}

// replayDisplay plays a database into the animated display: every stored
// relation, in time order, paced by the display's player (space, +/-, →
// and the timeline work as in tqmon view), with the queries' results
// drawn as the spec says.
func replayDisplay(f *replayFlags, sub subject.Subject, params map[string]string, from, to *algebra.Time, stderr io.Writer) error {
	po := play.Options{Speed: f.speed, Paused: f.paused, Start: from, End: sub.Now()}
	if f.max {
		po.Speed = play.MaxSpeed
	}
	if to != nil {
		po.End = *to
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	o := subject.DisplayOptions{Queries: f.srcs, Params: params, Play: po, Title: "tqmon replay " + f.dbDir + f.parquetDir, TZ: f.tz}
	defer f.export.display(ctx, &o, f.tz, stderr)()
	return display(ctx, sub, f.display, o)
}
