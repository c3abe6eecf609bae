package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/wire"
)

// kernelFlags are query's flags for the Linux kernel as the subject
// (record --kernel can take the same: addKernelFlags, then openKernel).
type kernelFlags struct {
	on        bool
	command   bool     // -c: the positional arguments are a command to run
	argv      []string // the command
	target    string   // --target PID
	specs     []string // --spec FILE: extensions of linux.sdl (uprobes)
	ringBytes int
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

// addKernelFlags adds the kernel flags to a command whose positional
// arguments are the -c command, and help and examples to its --help.
func addKernelFlags(cmd *cobra.Command, fl *pflag.FlagSet, k *kernelFlags, help, examples string) {
	fl.BoolVar(&k.on, "kernel", false, "monitor this machine's Linux kernel in process (needs root)")
	fl.BoolVarP(&k.command, "command", "c", false, "with --kernel: run the arguments after -- as a command, paused until the sensors are ready; $target is its pid")
	fl.StringVar(&k.target, "target", "", "with --kernel: $target is this running process's pid")
	fl.StringArrayVar(&k.specs, "spec", nil, "with --kernel: FILE extending the kernel's description (uprobe sensors; repeatable)")
	fl.IntVar(&k.ringBytes, "ring-bytes", 8<<20, "with --kernel: size of the packet ring buffer (a power of two, at least a page)")
	cmd.Long += help
	cmd.Example += examples
}

// kernelArgs checks the positional arguments: a command only with -c.
func kernelArgs(k *kernelFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case !k.on && (k.command || k.target != "" || len(k.specs) > 0):
			return usageErr(errors.New("-c, --target and --spec go with --kernel"))
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

// kernelRun is a kernel resident, and the command it watches (-c): what
// a live run against the kernel needs. Run with Conns, release the
// command from RunLive's Ready callback, and call Watch in a goroutine:
// it ends the run once the command has exited and the rings are drained.
type kernelRun struct {
	res *kernel.Resident
	cmd *launch.Cmd
}

// settle is how long the run goes on after the command exits: its last
// context switch happens after its parent learns of its exit.
const settle = 20 * time.Millisecond

// openKernel makes the resident and starts the command paused; it sets
// params["target"] (from -c or --target).
func openKernel(k *kernelFlags, params map[string]string) (*kernelRun, error) {
	if k.command && k.target != "" {
		return nil, usageErr(errors.New("give -c CMD or --target PID, not both"))
	}
	if k.target != "" {
		pid, err := strconv.ParseUint(k.target, 10, 32)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--target %q: want a process ID", k.target))
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return nil, runtimeErr(fmt.Errorf("--target %d: no such process", pid))
		}
		params["target"] = k.target
	}
	specs, err := readKernelSpecs(k.specs)
	if err != nil {
		return nil, err
	}
	res, err := kernel.New(kernel.Options{Specs: specs, RingBytes: k.ringBytes})
	if errors.Is(err, kernel.ErrUnavailable) {
		return nil, runtimeErr(err)
	}
	if err != nil {
		return nil, usageErr(err)
	}
	kr := &kernelRun{res: res}
	if k.command {
		cmd, err := launch.Start(k.argv, launch.Options{})
		if err != nil {
			res.Close()
			return nil, runtimeErr(fmt.Errorf("-c: %w", err))
		}
		kr.cmd = cmd
		params["target"] = strconv.Itoa(cmd.Pid)
	}
	return kr, nil
}

// Conns are the connections to give RunLive.
func (kr *kernelRun) Conns() []wire.Conn { return []wire.Conn{kr.res.Local()} }

// Ready releases the command (RunLive's Ready callback).
func (kr *kernelRun) Ready() {
	if kr.cmd != nil {
		kr.cmd.Release()
	}
}

// Watch ends the run once the command has exited (no command: never).
func (kr *kernelRun) Watch() {
	if kr.cmd == nil {
		return
	}
	<-kr.cmd.Done()
	time.Sleep(settle)
	kr.res.Close()
}

// Close detaches everything; a command still running is killed. It
// returns the command's exit status (0 without one).
func (kr *kernelRun) Close() int {
	kr.res.Close()
	if kr.cmd == nil {
		return 0
	}
	select {
	case <-kr.cmd.Done():
	default:
		kr.cmd.Kill()
	}
	st, _ := kr.cmd.Wait()
	if st == nil {
		return -1
	}
	return st.ExitCode()
}

// runKernel runs the statements live against this machine's kernel.
func runKernel(f *queryFlags, out format.Options, params map[string]string, naive bool, stdout, stderr io.Writer) error {
	if f.historyDir != "" || len(f.connect) > 0 {
		return usageErr(errors.New("give one of --history DIR, --connect ADDR or --kernel"))
	}
	kr, err := openKernel(&f.kernel, params)
	if err != nil {
		return err
	}
	defer kr.Close()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if f.display != "" {
		go kr.Watch()
		return runLiveDisplay(ctx, liveDisplay{cat: kr.res.Catalog(), conns: kr.Conns(), srcs: f.srcs, display: f.display,
			params: params, naive: naive, lease: f.lease, duration: f.duration, ready: kr.Ready,
			title: "tqmon query --kernel"})
	}
	prog, err := query.Compile(kr.res.Catalog(), f.srcs, check.Options{Params: params})
	if err != nil {
		return usageErr(err)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	st := newStreamer(w, out, prog)
	go kr.Watch()
	_, stats, err := remote.RunLive(ctx, prog, kr.Conns(), remote.LiveOptions{Duration: f.duration, Naive: naive, Ready: kr.Ready,
		OnElem: func(i int, e exec.Elem) {
			st.elem(i, e)
			w.Flush()
		}})
	if err != nil {
		return runtimeErr(err)
	}
	if err := st.s.Close(); err != nil {
		return runtimeErr(err)
	}
	w.Flush()
	if f.stats {
		printLiveStats(stderr, stats)
	}
	if code := kr.Close(); code != 0 {
		fmt.Fprintf(stderr, "tqmon: the command exited with status %d\n", code)
	}
	return nil
}

// readKernelSpecs reads --spec files (kept for diagnostics' snippets, as
// is linux.sdl).
func readKernelSpecs(paths []string) ([]kernel.Source, error) {
	texts[kernel.LinuxSDLName] = kernel.LinuxSDL
	var specs []kernel.Source
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, usageErr(err)
		}
		texts[path] = string(text)
		specs = append(specs, kernel.Source{Name: path, Text: string(text)})
	}
	return specs, nil
}
