// Package launch starts a command paused: its process exists (its pid is
// known) but it has not run a single instruction of its program until
// Release — so that sensors enabled for that pid miss nothing it does.
//
// The command is started through a shim: this program re-executed with a
// hidden argument (ShimCommand, handled by calling Shim), which says it is
// ready (its own start-up done) on one pipe, waits for one byte on
// another and then executes the command in place (same pid). Start
// returns once the shim is ready, so that what sensors see of the process
// from then on is the release and the command.
// If the monitor goes away before releasing it, the pipe closes and the
// shim exits without running the command.
package launch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// ShimCommand is the hidden first argument that makes this program the
// shim: the program's main must hand the arguments after it to Shim.
const ShimCommand = "__exec-paused"

// exitNotReleased is the shim's exit status when it is never released.
const exitNotReleased = 125

// Options shape how a command is started.
type Options struct {
	// Self runs this program as the shim: the executable and arguments
	// before the command (default: os.Executable() and ShimCommand).
	Self []string
	// Env is the command's environment (nil: this process's).
	Env []string
	// Dir is its working directory ("": this process's).
	Dir string
	// Stdin, Stdout and Stderr (nil: this process's).
	Stdin, Stdout, Stderr *os.File
}

// Cmd is a command started paused.
type Cmd struct {
	// Pid is the command's process ID (the shim's, then the command's:
	// the shim executes it in place).
	Pid int
	// Path is the executable the command runs.
	Path string

	cmd      *exec.Cmd
	release  *os.File
	once     sync.Once
	done     chan struct{}
	state    *os.ProcessState
	err      error
	released bool
}

// Start starts argv paused. The executable is looked up (PATH) now, so a
// missing command is reported before anything else happens.
func Start(argv []string, opts Options) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("launch: no command")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, err
	}
	self := opts.Self
	if len(self) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("launch: finding this program to run as the shim: %w", err)
		}
		self = []string{exe, ShimCommand}
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		rd.Close()
		wr.Close()
		return nil, err
	}
	defer readyR.Close()
	args := append(append(append([]string{}, self[1:]...), path), argv...)
	cmd := exec.Command(self[0], args...)
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
	cmd.ExtraFiles = []*os.File{rd, readyW} // fds 3 and 4 in the shim
	err = cmd.Start()
	rd.Close()
	readyW.Close()
	if err != nil {
		wr.Close()
		return nil, err
	}
	c := &Cmd{Pid: cmd.Process.Pid, Path: path, cmd: cmd, release: wr, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.done)
	}()
	var b [1]byte
	if n, _ := readyR.Read(b[:]); n != 1 {
		c.Kill()
		c.Wait()
		return nil, fmt.Errorf("launch: the shim (%s) did not start: does this program call launch.Shim for %s?", self[0], ShimCommand)
	}
	return c, nil
}

// Release lets the command run.
func (c *Cmd) Release() error {
	var err error
	c.once.Do(func() {
		c.released = true
		_, err = c.release.Write([]byte{1})
		c.release.Close()
	})
	return err
}

// Wait waits for the command to exit and returns its state. A command
// never released exits with status 125 without running.
func (c *Cmd) Wait() (*os.ProcessState, error) {
	<-c.done
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return c.state, nil // a non-zero status is the command's business
	}
	return c.state, c.err
}

// Done is closed when the command has exited.
func (c *Cmd) Done() <-chan struct{} { return c.done }

// Kill kills the command (or the shim, if not released yet).
func (c *Cmd) Kill() {
	c.once.Do(func() { c.release.Close() })
	c.cmd.Process.Signal(syscall.SIGKILL)
}

// Shim is the shim's side, given the arguments after ShimCommand (the
// executable's path, then the command's argv): it waits for the release
// and executes the command in place. It returns only on failure; the
// caller should then exit with ExitCode.
func Shim(args []string) error {
	if len(args) < 2 {
		return errors.New("launch: the shim needs an executable and a command")
	}
	f, ready := os.NewFile(3, "release"), os.NewFile(4, "ready")
	if f == nil || ready == nil {
		return errors.New("launch: the shim has no release and ready pipes (fds 3 and 4)")
	}
	var b [1]byte
	ready.Write(b[:])
	ready.Close()
	n, _ := f.Read(b[:])
	f.Close()
	if n != 1 {
		return ErrNotReleased
	}
	return fmt.Errorf("launch: executing %s: %w", args[0], syscall.Exec(args[0], args[1:], os.Environ()))
}

// ErrNotReleased: the monitor went away before releasing the command.
var ErrNotReleased = errors.New("launch: the monitor went away before the command was released; not running it")

// ExitCode is the status a shim should exit with after Shim returned err.
func ExitCode(err error) int {
	if errors.Is(err, ErrNotReleased) {
		return exitNotReleased
	}
	return 127
}
