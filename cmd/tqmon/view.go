package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/subject"
)

type viewFlags struct {
	historyDir string
	parquetDir string
	display    string
	srcs       []query.Source
	exprs      int
	params     []string
	speed      float64
	from       string
	paused     bool
	maxMemory  query.Bytes
	tz         string
	export     exportFlags
}

func newViewCmd(stdout, stderr io.Writer) *cobra.Command {
	var f viewFlags
	cmd := &cobra.Command{
		Use:     "view (--history DIR | --parquet DIR) --display SPEC [(-f FILE | -e TEXT)...] [--speed X] [--from TIME]",
		Short:   "Play a recorded history into the animated display",
		Long:    doc("view"),
		Example: doc("view.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runView(&f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.historyDir, "history", "", "history directory: one .sdl file and one CSV per relation")
	fl.StringVar(&f.parquetDir, "parquet", "", "a Parquet recording's directory (record --parquet) to play instead of a history")
	fl.StringVar(&f.display, "display", "", "display spec file (see tqmon view --help)")
	addSourceFlags(fl, &f.srcs, &f.exprs)
	fl.StringArrayVar(&f.params, "param", nil, "NAME=VALUE: the value of $NAME in queries (repeatable)")
	fl.Float64Var(&f.speed, "speed", 1, "subject seconds per real second")
	fl.StringVar(&f.from, "from", "", "start playing at TIME (e.g. 2:45:00; default: the history's beginning)")
	fl.BoolVar(&f.paused, "paused", false, "start paused (space resumes, → steps)")
	addMaxMemoryFlag(fl, &f.maxMemory)
	addTZFlag(fl, &f.tz)
	addExportFlags(fl, &f.export)
	return cmd
}

func runView(f *viewFlags, stderr io.Writer) error {
	switch {
	case f.historyDir == "" && f.parquetDir == "":
		return usageErr(errors.New("view needs --history DIR (a directory with a .sdl file and CSV files) or --parquet DIR (a record --parquet directory)"))
	case f.historyDir != "" && f.parquetDir != "":
		return usageErr(errors.New("give --history DIR or --parquet DIR, not both"))
	case f.display == "":
		return usageErr(errors.New("view needs --display SPEC (a display spec file)"))
	case !(f.speed > 0):
		return usageErr(fmt.Errorf("--speed %g: want a positive number of subject seconds per real second", f.speed))
	}
	if _, err := algebra.WithTZ(algebra.TimeAuto, f.tz); err != nil {
		return usageErr(fmt.Errorf("--tz: %w", err))
	}
	if err := f.export.check(false); err != nil {
		return err
	}
	po := play.Options{Speed: f.speed, Paused: f.paused}
	if f.from != "" {
		t, err := algebra.ParseTime(f.from)
		if err != nil {
			return usageErr(fmt.Errorf("--from %q: %w", f.from, err))
		}
		po.Start = &t
	}
	params, err := query.ParseParams(f.params)
	if err != nil {
		return usageErr(err)
	}
	sub, err := subject.Open(context.Background(), subject.Options{History: f.historyDir, Parquet: f.parquetDir, MaxMemory: int64(f.maxMemory)})
	if err != nil {
		return openErr(err)
	}
	defer sub.Close()
	if _, end, ok := sub.Extent(); ok {
		po.End = end
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	o := subject.DisplayOptions{Queries: f.srcs, Params: params, Play: po, Title: "tqmon view " + f.historyDir + f.parquetDir, TZ: f.tz}
	defer f.export.display(ctx, &o, f.tz, stderr)()
	return display(ctx, sub, f.display, o)
}
