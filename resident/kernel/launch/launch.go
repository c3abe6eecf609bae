// Package launch starts a command stopped at its exec: its process exists
// (its pid is known) and its program is loaded, but it has not run a
// single instruction of it until Release — so that sensors enabled for
// that pid see exactly the command's own system calls, none of a
// launcher's.
//
// # Why ptrace, not a shim
//
// The command is started with PTRACE_TRACEME (Go's SysProcAttr.Ptrace):
// between the fork and the execve the child runs only the raw system
// calls of Go's forkAndExecInChild (no Go runtime, no threads), then the
// kernel stops it with SIGTRAP once the execve has completed, before the
// new program's first instruction. Start returns at that stop. Release
// detaches (PTRACE_DETACH, the SIGTRAP suppressed), and the program starts.
// Sensors enabled for the pid before the release therefore see the
// command from its first instruction on and nothing before: not its
// execve (whose entry happened before the stop), and none of a launcher's
// calls.
//
// An earlier version re-executed this program as a shim that waited on a
// pipe and then called syscall.Exec: the shim's Go runtime (its futex,
// epoll_pwait, tgkill and nanosleep calls between the release and the
// exec) showed in the command's counts, 0–5 extra calls per /bin/true.
// Enabling the filter "only from the exec" would have needed a second,
// in-kernel enable state; the exec stop gives the same guarantee with the
// enables the resident already has.
//
// Until its release the command is killed if this process goes away
// (PTRACE_O_EXITKILL): a monitor that dies before its sensors are ready
// never lets the command run unwatched. After the release the command is
// an ordinary child, no longer traced (it can be debugged or traced by
// others; a set-user-ID program started this way runs without its
// privileges, as under any tracer).
//
// ptrace requests must come from the thread that is the tracer, so each
// Cmd keeps one goroutine locked to its OS thread from the start to the
// release.
package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Options shape how a command is started.
type Options struct {
	// Env is the command's environment (nil: this process's).
	Env []string
	// Dir is its working directory ("": this process's).
	Dir string
	// Stdin, Stdout and Stderr (nil: this process's).
	Stdin, Stdout, Stderr *os.File
}

// Cmd is a command started stopped at its exec.
type Cmd struct {
	// Pid is the command's process ID.
	Pid int
	// Path is the executable the command runs.
	Path string

	cmd   *exec.Cmd
	ops   chan op // to the tracer thread, until the release
	once  sync.Once
	done  chan struct{}
	state *os.ProcessState
	err   error
}

// op is a request to the tracer thread: release (detach) or kill.
type op struct {
	kill  bool
	reply chan error
}

// Start starts argv stopped at its exec. The executable is looked up
// (PATH) now, so a missing command is reported before anything else
// happens.
func Start(argv []string, opts Options) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("launch: no command")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if opts.Stdin != nil {
		cmd.Stdin = opts.Stdin
	}
	if opts.Stdout != nil {
		cmd.Stdout = opts.Stdout
	}
	if opts.Stderr != nil {
		cmd.Stderr = opts.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	c := &Cmd{Path: path, cmd: cmd, ops: make(chan op), done: make(chan struct{})}
	started := make(chan error, 1)
	go c.tracer(started)
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// tracer is the goroutine, locked to its thread, that starts the command,
// waits for its exec stop, and detaches it (or kills it) on request. Its
// thread must live until then: a tracer thread's exit detaches its
// tracees (and, with PTRACE_O_EXITKILL, kills them).
func (c *Cmd) tracer(started chan<- error) {
	runtime.LockOSThread()
	// The thread stays locked (and so ends with this goroutine) if it
	// ever had a tracee: never hand it back to other goroutines.
	if err := c.cmd.Start(); err != nil {
		started <- err
		return
	}
	c.Pid = c.cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(c.Pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			started <- fmt.Errorf("launch: waiting for %s to stop at its exec: %w", c.Path, err)
			return
		}
		break
	}
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		// It died before its exec stop (cannot happen unless it was
		// killed from outside): report what it did.
		started <- fmt.Errorf("launch: %s did not stop at its exec (%s)", c.Path, describe(ws))
		return
	}
	if err := unix.PtraceSetOptions(c.Pid, unix.PTRACE_O_EXITKILL); err != nil {
		unix.Kill(c.Pid, unix.SIGKILL)
		c.reap()
		started <- fmt.Errorf("launch: PTRACE_O_EXITKILL on %s: %w", c.Path, err)
		return
	}
	started <- nil
	o := <-c.ops
	var err error
	if o.kill {
		unix.Kill(c.Pid, unix.SIGKILL)
	} else if err = unix.PtraceDetach(c.Pid); err != nil {
		err = fmt.Errorf("launch: releasing %s: %w", c.Path, err)
		unix.Kill(c.Pid, unix.SIGKILL)
	}
	// Detached (or killed): an ordinary child now, waited for by any
	// thread.
	go c.reap()
	o.reply <- err
}

// reap waits for the command's exit.
func (c *Cmd) reap() {
	c.err = c.cmd.Wait()
	c.state = c.cmd.ProcessState
	close(c.done)
}

func describe(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return "killed by " + ws.Signal().String()
	case ws.Stopped():
		return "stopped by " + ws.StopSignal().String()
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// send hands the tracer thread its one request; later requests do
// nothing.
func (c *Cmd) send(kill bool) error {
	err := errAlready
	c.once.Do(func() {
		reply := make(chan error)
		c.ops <- op{kill: kill, reply: reply}
		err = <-reply
	})
	return err
}

var errAlready = errors.New("launch: the command was already released or killed")

// Release lets the command run.
func (c *Cmd) Release() error {
	if err := c.send(false); err != nil && err != errAlready {
		return err
	}
	return nil
}

// Wait waits for the command to exit and returns its state. Call it only
// after Release or Kill.
func (c *Cmd) Wait() (*os.ProcessState, error) {
	<-c.done
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return c.state, nil // a non-zero status is the command's business
	}
	return c.state, c.err
}

// Done is closed when the command has exited (after Release or Kill).
func (c *Cmd) Done() <-chan struct{} { return c.done }

// Kill kills the command, released or not.
func (c *Cmd) Kill() {
	if c.send(true) == errAlready {
		c.cmd.Process.Signal(syscall.SIGKILL)
	}
}
