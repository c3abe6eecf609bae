package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
)

// natsFlags reach a fleet's hosts on a NATS server (query, shell, record).
type natsFlags struct {
	url           string
	hosts         string
	skew, silence time.Duration
}

func addNATSFlags(fl *pflag.FlagSet, f *natsFlags) {
	fl.StringVar(&f.url, "nats", "", "URL of a NATS server whose hosts' residents to monitor (see tqmon serve; --token is presented there)")
	fl.StringVar(&f.hosts, "hosts", "", "with --nats: only the hosts this glob matches (web-*, h[12]; default: all)")
	fl.DurationVar(&f.skew, "skew", 0, "with --nats: the clock-skew bound of every host (default: measured from round trips to each host); each host's watermark is held back by its bound")
	fl.DurationVar(&f.silence, "silence", fleet.Silence, "with --nats: a host that sends nothing, not even a heartbeat, for this long is lost: its relations are unobserved from its last watermark (exit 3), the others go on")
}

type serveFlags struct {
	addr      string
	data      string
	token     string
	tokenFile string
	tls       tlsFlags
}

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:     "serve [--addr HOST:PORT] [--data DIR] [--token T] [--tls-cert FILE --tls-key FILE [--tls-ca FILE]]",
		Short:   "Run a NATS server (with JetStream storage) for a fleet of residents and monitors",
		Long:    doc("serve"),
		Example: doc("serve.example"),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(&f, stdout, stderr)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", embedded.DefaultAddr, "HOST:PORT to listen on (port 0: any free port)")
	fl.StringVar(&f.data, "data", "", "JetStream's store directory (default: a temporary one, removed on exit)")
	fl.StringVar(&f.token, "token", "", "token every client must present (or --token-file, or $TQMON_TOKEN)")
	fl.StringVar(&f.tokenFile, "token-file", "", "read the token from this file")
	addTLSFlags(fl, &f.tls, tlsServer)
	return cmd
}

func runServe(f *serveFlags, stdout, stderr io.Writer) error {
	token, err := transport.Token(f.token, f.tokenFile)
	if err != nil {
		return usageErr(err)
	}
	cfg, err := f.tls.server()
	if err != nil {
		return err
	}
	srv, err := embedded.Start(embedded.Options{Addr: f.addr, Data: f.data, Token: token, TLS: cfg})
	if err != nil {
		return openErr(err)
	}
	defer srv.Shutdown()
	// The URL on stdout, alone: scripts read it (port 0).
	fmt.Fprintln(stdout, srv.URL())
	fmt.Fprintf(stderr, "tqmon serve: NATS with JetStream at %s; join with --nats %s\n", srv.URL(), srv.URL())
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	return nil
}
