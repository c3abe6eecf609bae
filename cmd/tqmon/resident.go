package main

import (
	"cmp"
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
	"github.com/tqmon/tqmon/subject"
)

type residentFlags struct {
	kernel    bool
	listen    string
	nats      string
	host      string
	token     string
	tokenFile string
	tls       tlsFlags
	specs     []string
	ringBytes int
	noPlans   bool
}

func newResidentCmd(stdout, stderr io.Writer) *cobra.Command {
	var f residentFlags
	cmd := &cobra.Command{
		Use:     "resident --kernel --listen ADDR [--token T] [--spec FILE]...",
		Short:   "Serve this machine's kernel sensors to remote monitors",
		Long:    doc("resident"),
		Example: doc("resident.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runResident(&f, stderr)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.kernel, "kernel", false, "serve the Linux kernel's sensors (the only resident this command runs)")
	fl.StringVar(&f.listen, "listen", "", "where to serve: a unix socket path, or host:port (with --token)")
	fl.StringVar(&f.nats, "nats", "", "join the NATS server at URL as --host instead of listening (see tqmon serve)")
	fl.StringVar(&f.host, "host", "", "with --nats: this machine's name in the fleet (unique; letters, digits, - and _)")
	fl.StringVar(&f.token, "token", "", "shared token remote monitors must present (required on TCP; or --token-file, or $TQMON_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the shared token from this file")
	addTLSFlags(fl, &f.tls, tlsResident)
	fl.StringArrayVar(&f.specs, "spec", nil, "FILE extending the kernel's description (uprobe sensors; repeatable)")
	fl.IntVar(&f.ringBytes, "ring-bytes", 8<<20, "size of the packet ring buffer (a power of two, at least a page)")
	fl.BoolVar(&f.noPlans, "no-plans", false, "run no plan fragments: a query's joins and aggregates run at the monitor, over the packets (for comparing)")
	return cmd
}

func runResident(f *residentFlags, stderr io.Writer) (err error) {
	if f.token, err = transport.Token(f.token, f.tokenFile); err != nil {
		return usageErr(err)
	}
	switch {
	case !f.kernel:
		return usageErr(errors.New("resident serves the kernel: give --kernel (Go programs embed their own resident)"))
	case f.listen != "" && f.nats != "":
		return usageErr(errors.New("give --listen ADDR or --nats URL, not both"))
	case f.nats != "" && f.host == "":
		return usageErr(errors.New("--nats needs --host NAME: this machine's name in the fleet"))
	case f.nats != "":
	case f.listen == "":
		return usageErr(errors.New("resident needs --listen ADDR (a unix socket path, or host:port with --token) or --nats URL --host NAME"))
	}
	if f.listen != "" {
		if err := transport.CheckToken(f.listen, f.token); err != nil {
			return usageErr(err)
		}
	}
	specs, err := kernel.ReadSources(f.specs)
	if err != nil {
		return usageErr(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	err = subject.ServeKernel(ctx, subject.KernelServeOptions{Kernel: subject.KernelOptions{Specs: specs, RingBytes: f.ringBytes},
		Listen: f.listen, NATS: f.nats, Host: f.host, Token: f.token, TLS: f.tls.files, Insecure: f.tls.insecure, NoPlans: f.noPlans,
		Logf: func(format string, args ...any) { fmt.Fprintf(stderr, "tqmon resident: "+format+"\n", args...) },
		Serving: func() {
			fmt.Fprintf(stderr, "tqmon resident: serving the kernel's sensors on %s\n", cmp.Or(f.listen, f.nats+" as host "+f.host))
		}})
	if err != nil {
		return openErr(err)
	}
	return nil
}
