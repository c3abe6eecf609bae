package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// CommandExit is the kernel subject's Close error when its command (-c)
// exited with a status other than 0 (-1: killed by a signal).
type CommandExit struct{ Code int }

func (e *CommandExit) Error() string {
	return fmt.Sprintf("the command exited with status %d", e.Code)
}

// settle is how long a run goes on after the command exits before it
// waits for the drain to apply what was stamped until then: the
// command's last context switch happens after its parent learns of its
// exit.
const settle = 20 * time.Millisecond

// kernelSubject is this machine's kernel resident, and the command it
// watches. Each session is a session of the resident's; the first starts
// watching the command, ending the run once it has exited and the rings
// are drained.
type kernelSubject struct {
	live
	res *kernel.Resident
	cmd *launch.Cmd
	// follow: how the monitor follows the processes enabled ones fork
	// (--follow; nil without).
	follow *exec.Follow
	watch  sync.Once
	close  sync.Once
	code   int
}

// openKernel makes the resident and starts the command stopped at its
// exec.
func openKernel(k *KernelOptions) (*kernelSubject, error) {
	params := map[string]string{}
	if len(k.Command) > 0 && k.Target != "" {
		return nil, badInput(errors.New("give -c CMD or --target PID, not both"))
	}
	if k.Target != "" {
		pid, err := strconv.ParseUint(k.Target, 10, 32)
		if err != nil {
			return nil, badInput(fmt.Errorf("--target %q: want a process ID", k.Target))
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return nil, fmt.Errorf("--target %d: no such process", pid)
		}
		params["target"] = k.Target
	}
	res, err := kernel.New(kernel.Options{Specs: k.Specs, RingBytes: k.RingBytes, Follow: k.Follow, Logf: k.Logf})
	if errors.Is(err, kernel.ErrUnavailable) {
		return nil, err
	}
	if err != nil {
		return nil, badInput(err)
	}
	s := &kernelSubject{res: res}
	if k.Follow {
		s.follow = kernelFollow(res.Catalog())
	}
	if len(k.Command) > 0 {
		cmd, err := launch.Start(k.Command, launch.Options{Stdin: k.Stdin, Stdout: k.Stdout, Stderr: k.Stderr})
		if err != nil {
			res.Close()
			return nil, fmt.Errorf("-c: %w", err)
		}
		s.cmd = cmd
		params["target"] = strconv.Itoa(cmd.Pid)
	}
	desc := "this machine's Linux kernel (eBPF sensors attach only while a query needs them)"
	if k.Target != "" {
		desc += "; $target = " + k.Target
	}
	if k.Follow {
		desc += "; following the processes enabled ones fork (--follow)"
	}
	s.live = live{desc: desc, cat: res.Catalog(), hello: res.Hello(), params: params, open: s.begin, selects: res.Selects}
	return s, nil
}

func (s *kernelSubject) begin(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
	if s.cmd != nil {
		s.watch.Do(func() {
			go func() {
				<-s.cmd.Done()
				time.Sleep(settle)
				// Everything the command caused, read by the monitor
				// before the end (kernel.Resident.WaitApplied); an
				// interrupted run ends at once.
				s.res.WaitApplied(ctx)
				s.res.Close()
			}()
		})
	}
	return nil, mon(Session{Conns: []wire.Conn{s.res.Local()}, Ready: s.release, Ctx: ctx, Duration: d, Follow: s.follow})
}

// release lets the command run.
func (s *kernelSubject) release() {
	if s.cmd != nil {
		s.cmd.Release()
	}
}

// Close detaches everything; a command still running is killed.
func (s *kernelSubject) Close() error {
	s.close.Do(func() {
		s.res.Close()
		if s.cmd == nil {
			return
		}
		select {
		case <-s.cmd.Done():
		default:
			s.cmd.Kill()
		}
		st, _ := s.cmd.Wait()
		if st == nil {
			s.code = -1
		} else {
			s.code = st.ExitCode()
		}
	})
	if s.code != 0 {
		return &CommandExit{Code: s.code}
	}
	return nil
}

// KernelServeOptions shape ServeKernel.
type KernelServeOptions struct {
	// Kernel shapes the resident (Specs, RingBytes).
	Kernel KernelOptions
	// Listen is where to serve: a unix socket path, or host:port with
	// Token. With NATS set, the resident joins that NATS server as Host
	// instead.
	Listen, Token string
	NATS, Host    string
	// TLS names the TLS files: the server's certificate (and the CA of
	// the clients it accepts) over gRPC, the client's over NATS
	// (transport.TLSFiles); Insecure lets a token go to a NATS server
	// that is not loopback in clear.
	TLS      transport.TLSFiles
	Insecure bool
	// Logf reports the resident's and the server's events.
	Logf func(format string, args ...any)
	// Serving is called once the server listens.
	Serving func()
	// NoPlans: the resident runs no plan fragments (kernel.Options.NoPlans;
	// `tqmon resident --no-plans`): joins and aggregates run at the monitor.
	NoPlans bool
}

// ServeKernel serves this machine's kernel sensors to remote monitors
// until ctx ends, then detaches everything.
func ServeKernel(ctx context.Context, o KernelServeOptions) error {
	res, err := kernel.New(kernel.Options{Specs: o.Kernel.Specs, RingBytes: o.Kernel.RingBytes, Logf: o.Logf, NoPlans: o.NoPlans})
	if errors.Is(err, kernel.ErrUnavailable) {
		return err
	}
	if err != nil {
		return badInput(err)
	}
	defer res.Close()
	srv, err := serveSessions(res.Sessions(), o.Listen, o.Token, o.NATS, o.Host, o.TLS, o.Insecure, o.Logf)
	if err != nil {
		return err
	}
	if o.Serving != nil {
		o.Serving()
	}
	select {
	case <-ctx.Done():
	case err := <-srv.failed:
		srv.stop()
		return err
	}
	srv.stop()
	res.Close()
	return nil
}

// kernelFollow is how a monitor follows the kernel resident's --follow:
// Process tuples name their parent (linux.sdl's Process.Parent).
func kernelFollow(cat *algebra.Catalog) *exec.Follow {
	rel := cat.Lookup("Process")
	f := &exec.Follow{Rel: "Process", Type: "Process", Parent: -1}
	for i, a := range rel.Attrs {
		if a.Name == "Parent" {
			f.Parent = i
		}
	}
	return f
}
