package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/subject"
)

// querySources collects -f and -e in command-line order: both flags append
// to one list, so range declarations flow from one to the next as written.
type querySources struct {
	list  *[]query.Source
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
		text, err := source.ReadFile(v, os.Stdin)
		if err != nil {
			return err
		}
		*q.list = append(*q.list, query.Source{Name: v, Text: text})
		return nil
	}
	*q.count++
	name := "-e"
	if *q.count > 1 {
		name = fmt.Sprintf("-e#%d", *q.count)
	}
	*q.list = append(*q.list, query.Source{Name: name, Text: v})
	return nil
}

// addSourceFlags adds -f and -e.
func addSourceFlags(fl *pflag.FlagSet, srcs *[]query.Source, count *int) {
	fl.VarP(querySources{list: srcs, file: true}, "file", "f", "read TQuel statements from FILE (repeatable)")
	fl.VarP(querySources{list: srcs, count: count}, "expr", "e", "TQuel statements given as TEXT (repeatable)")
}

// timeFormatUsage is the help of every --time-format flag.
const timeFormatUsage = "time format: auto (the default: RFC 3339 for wall-clock times, as the kernel's, H:MM:SS.fraction for a subject's own clock from zero), clock, rfc3339 or ns"

// addTZFlag adds --tz.
func addTZFlag(fl *pflag.FlagSet, tz *string) {
	fl.StringVar(tz, "tz", "utc", "time zone of RFC 3339 times: utc or local ($TZ, else the system's), e.g. --tz local")
}

// addMaxMemoryFlag adds --max-memory, its default query.DefaultMaxMemory.
func addMaxMemoryFlag(fl *pflag.FlagSet, n *query.Bytes) {
	*n = query.Bytes(query.DefaultMaxMemory())
	fl.Var(n, "max-memory", "stop a query once the heap holds more than SIZE (512MiB, 2GB; 0: no limit); the default is half of this machine's memory")
}

// parsePlanParams reads --plan and --param (usage errors).
func parsePlanParams(kind string, settings []string) (bool, map[string]string, error) {
	naive, err := query.ParsePlan(kind)
	if err != nil {
		return false, nil, usageErr(err)
	}
	params, err := query.ParseParams(settings)
	if err != nil {
		return false, nil, usageErr(err)
	}
	return naive, params, nil
}

// parseTimeFlag reads a --from/--to value.
func parseTimeFlag(name, s string) (*algebra.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := algebra.ParseTime(s)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return &t, nil
}

// openErr classes an error of subject.Open, subject.Display or a run:
// usage errors for what the subject was given (a history file that does
// not read), runtime errors otherwise.
func openErr(err error) error {
	if errors.Is(err, subject.ErrInput) || errors.Is(err, transport.ErrInClear) {
		return usageErr(err)
	}
	return runtimeErr(err)
}

// kernelFlags are the flags for the Linux kernel as the subject (query,
// record).
type kernelFlags struct {
	on        bool
	command   bool     // -c: the positional arguments are a command to run
	argv      []string // the command
	target    string   // --target PID
	specs     []string // --spec FILE: extensions of linux.sdl (uprobes)
	ringBytes int
	output    string // --command-output FILE
	follow    bool   // --follow
}

// addKernelFlags adds the kernel flags to a command whose positional
// arguments are the -c command, and help and examples to its --help.
func addKernelFlags(cmd *cobra.Command, fl *pflag.FlagSet, k *kernelFlags, help, examples string) {
	fl.BoolVar(&k.on, "kernel", false, "monitor this machine's Linux kernel in process (needs root). Bounds: a selection by command (p.Command = \"cat\") enables sensors in the kernel for at most 32,768 processes at once, beyond which they fire for every process (the same answer, more packets, said on stderr)")
	fl.BoolVarP(&k.command, "command", "c", false, "with --kernel: run the arguments after -- as a command, stopped at its exec until the sensors are ready (traced from its first instruction: no launcher's calls, not its execve); $target is its pid")
	fl.StringVar(&k.output, "command-output", "", "with -c: FILE the command's stdout and stderr go to (default: the terminal; with --display a new temporary file, named when tqmon ends, so the command never draws over the display)")
	fl.StringVarP(&k.target, "target", "p", "", "with --kernel: $target is this running process's pid (-p PID, as bpftrace)")
	fl.BoolVar(&k.follow, "follow", false, "with --kernel: a sensor enabled for a process is enabled for the processes it forks from then on, transitively (its children from their first instruction): s.Process = $target selects the target and its descendants; tuples still name their own process (Process.Parent relates them)")
	fl.StringArrayVar(&k.specs, "spec", nil, "with --kernel: FILE extending the kernel's description (uprobe sensors; repeatable)")
	fl.IntVar(&k.ringBytes, "ring-bytes", 8<<20, "with --kernel: size of the packet ring buffer (a power of two, at least a page)")
	cmd.Long += help
	cmd.Example += examples
}

// kernelArgs checks the positional arguments: a command only with -c.
func kernelArgs(k *kernelFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case !k.on && (k.command || k.target != "" || len(k.specs) > 0 || k.follow):
			return usageErr(errors.New("-c, --target, --follow and --spec go with --kernel"))
		case k.output != "" && !k.command:
			return usageErr(errors.New("--command-output goes with -c"))
		case !k.on:
			return cobra.NoArgs(cmd, args)
		case k.command && len(args) == 0:
			return usageErr(errors.New("-c needs a command after --: tqmon query --kernel -e QUERY -c -- CMD ARGS..."))
		case !k.command && len(args) > 0:
			return usageErr(fmt.Errorf("unexpected argument %q (a command to run goes after -c --)", args[0]))
		}
		k.argv = args
		return nil
	}
}

// options are the kernel subject's options (nil without --kernel). With
// a display (tui), the -c command's output goes to a file, never to the
// terminal the display draws on, and its input is /dev/null (the
// display reads the keys); close closes those files, naming the output
// file on stderr if tqmon chose it.
func (k *kernelFlags) options(tui bool, stderr io.Writer) (o *subject.KernelOptions, close func(), err error) {
	close = func() {}
	if !k.on {
		return nil, close, nil
	}
	specs, err := kernel.ReadSources(k.specs)
	if err != nil {
		return nil, close, usageErr(err)
	}
	o = &subject.KernelOptions{Command: k.argv, Target: k.target, Specs: specs, RingBytes: k.ringBytes, Follow: k.follow,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "tqmon: kernel: "+format+"\n", args...) }}
	if !k.command || k.output == "" && !tui {
		return o, close, nil
	}
	var out *os.File
	if k.output != "" {
		out, err = os.Create(k.output)
	} else {
		out, err = os.CreateTemp("", "tqmon-command-*.log")
	}
	if err != nil {
		return nil, close, usageErr(fmt.Errorf("--command-output: %w", err))
	}
	o.Stdout, o.Stderr = out, out
	files := []*os.File{out}
	if tui {
		in, err := os.Open(os.DevNull)
		if err != nil {
			out.Close()
			return nil, close, runtimeErr(err)
		}
		o.Stdin = in
		files = append(files, in)
	}
	close = func() {
		for _, f := range files {
			f.Close()
		}
		if k.output == "" {
			fmt.Fprintf(stderr, "tqmon: the command's output is in %s\n", out.Name())
		}
	}
	return o, close, nil
}
