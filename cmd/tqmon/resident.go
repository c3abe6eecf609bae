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

	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/transport"
)

type residentFlags struct {
	kernel    bool
	listen    string
	token     string
	tokenFile string
	specs     []string
	ringBytes int
}

func newResidentCmd(stdout, stderr io.Writer) *cobra.Command {
	var f residentFlags
	cmd := &cobra.Command{
		Use:   "resident --kernel --listen ADDR [--token T] [--spec FILE]...",
		Short: "Serve this machine's kernel sensors to remote monitors",
		Long: `Run a resident monitor for this machine's Linux kernel (as root), serving
remote monitors (tqmon query --connect ADDR) at --listen: a unix socket
path (mode 0600), or host:port, which needs a shared --token.

The resident announces the kernel's description (tqmon sensors list
--kernel), extended by --spec files (uprobe sensors of programs on this
machine). Nothing is attached while no monitor is connected; a monitor's
queries attach the sensors they need and enable them only for the
entities they ask about. If a monitor goes away without saying goodbye,
its enables are undone when its lease runs out. The resident runs until
interrupted (SIGINT or SIGTERM), then detaches everything.`,
		Example: `  # Serve on a unix socket, query from another shell
  sudo tqmon resident --kernel --listen /run/tqmon.sock &
  sudo tqmon query --connect /run/tqmon.sock --duration 5s \
    -e 'range of s is Syscall retrieve (s.Process, s.Name) where s.Name = "execve"'

  # Over TCP, with a token
  sudo tqmon resident --kernel --listen 127.0.0.1:7070 --token s3cret`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResident(&f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.kernel, "kernel", false, "serve the Linux kernel's sensors (the only resident this command runs)")
	fl.StringVar(&f.listen, "listen", "", "where to serve: a unix socket path, or host:port (with --token)")
	fl.StringVar(&f.token, "token", "", "shared token remote monitors must present (required on TCP; or --token-file, or $TQMON_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the shared token from this file")
	fl.StringArrayVar(&f.specs, "spec", nil, "FILE extending the kernel's description (uprobe sensors; repeatable)")
	fl.IntVar(&f.ringBytes, "ring-bytes", 8<<20, "size of the packet ring buffer (a power of two, at least a page)")
	return cmd
}

func runResident(f *residentFlags, stderr io.Writer) (err error) {
	if f.token, err = transport.Token(f.token, f.tokenFile); err != nil {
		return usageErr(err)
	}
	switch {
	case !f.kernel:
		return usageErr(errors.New("resident serves the kernel: give --kernel (Go programs embed their own resident)"))
	case f.listen == "":
		return usageErr(errors.New("resident needs --listen ADDR (a unix socket path, or host:port with --token)"))
	case !isUnix(f.listen) && f.token == "":
		if _, _, err := transport.ParseAddr(f.listen); err != nil {
			return usageErr(err)
		}
		return usageErr(errors.New("a TCP listener needs a shared token: --token"))
	}
	specs, err := readKernelSpecs(f.specs)
	if err != nil {
		return err
	}
	res, err := kernel.New(kernel.Options{Specs: specs, RingBytes: f.ringBytes,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "tqmon resident: "+format+"\n", args...) }})
	if errors.Is(err, kernel.ErrUnavailable) {
		return runtimeErr(err)
	}
	if err != nil {
		return usageErr(err)
	}
	defer res.Close()
	srv, err := transport.NewServer(res.Sessions(), transport.ServerOptions{Token: f.token,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "tqmon resident: "+format+"\n", args...) }})
	if err != nil {
		return usageErr(err)
	}
	lis, err := transport.Listen(f.listen)
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	fmt.Fprintf(stderr, "tqmon resident: serving the kernel's sensors on %s\n", f.listen)
	select {
	case <-ctx.Done():
	case err := <-done:
		if err != nil {
			return runtimeErr(err)
		}
	}
	srv.Stop()
	res.Close()
	return nil
}
