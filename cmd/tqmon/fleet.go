package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/query"
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
	cluster   string
	routes    []string
	name      string
}

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:     "serve [--addr HOST:PORT] [--data DIR] [--token T] [--tls-cert FILE --tls-key FILE [--tls-ca FILE]] [--cluster HOST:PORT --routes URL,… --name NAME]",
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
	fl.StringVar(&f.cluster, "cluster", "", "make this server a node of a NATS cluster: listen for the other nodes' routes at HOST:PORT (over TLS, both ends verified, when --tls-cert is given)")
	fl.StringSliceVar(&f.routes, "routes", nil, "with --cluster: nats-route://HOST:PORT of the cluster's nodes (every node's, this one's too: JetStream wants them all from the start)")
	fl.StringVar(&f.name, "name", "", "with --cluster: this node's name, unique in the cluster (default: this machine's name)")
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
	o := embedded.Options{Addr: f.addr, Data: f.data, Token: token, TLS: cfg, Name: f.name,
		// The server's warnings and errors (a route refused in its TLS
		// handshake), not its notices.
		Logf: func(format string, args ...any) {
			if !strings.HasPrefix(format, "[INF]") {
				fmt.Fprintf(stderr, "tqmon serve: "+format+"\n", args...)
			}
		}}
	if f.cluster != "" {
		o.Cluster = &embedded.Cluster{Addr: f.cluster, Routes: f.routes}
		if o.Name == "" {
			if o.Name, err = os.Hostname(); err != nil {
				return usageErr(fmt.Errorf("--name: %w", err))
			}
		}
	} else if len(f.routes) > 0 || f.name != "" {
		return usageErr(errors.New("--routes and --name are a cluster node's: give --cluster HOST:PORT too"))
	}
	srv, err := embedded.Start(o)
	if err != nil {
		return openErr(err)
	}
	defer srv.Shutdown()
	// The URL on stdout, alone: scripts read it (port 0).
	fmt.Fprintln(stdout, srv.URL())
	fmt.Fprintf(stderr, "tqmon serve: NATS with JetStream at %s; join with --nats %s\n", srv.URL(), srv.URL())
	if r := srv.RouteURL(); r != "" {
		fmt.Fprintf(stderr, "tqmon serve: node %s of a cluster, routes at %s\n", o.Name, r)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	return nil
}

// resumeFlags make a query's monitor resumable (query --resume).
type resumeFlags struct {
	name        string
	replicas    int
	retain      time.Duration
	retainBytes query.Bytes
	resumeLease time.Duration
}

func addResumeFlags(fl *pflag.FlagSet, f *resumeFlags) {
	f.retainBytes = fleet.DefaultRetainBytes
	fl.StringVar(&f.name, "resume", "", "with --nats: NAME this monitor resumes under if it is killed: the hosts publish its sessions' frames to the JetStream stream "+fleet.Stream+", and `query --resume NAME` run again (the same queries and output flags, within --lease) goes on printing where the killed one stopped, nothing lost or printed twice")
	fl.IntVar(&f.replicas, "replicas", 1, "with --resume: the nodes of a NATS cluster that keep the stream and the monitors' state (3: a node that dies loses nothing)")
	fl.DurationVar(&f.retain, "retain", fleet.DefaultRetainAge, "with --resume: the stream keeps the hosts' frames this long (a monitor resumed later than that is refused, exit 3)")
	fl.Var(&f.retainBytes, "retain-bytes", "with --resume: the stream keeps at most SIZE of every host's frames, the oldest dropped first (a monitor resumed past them is refused, exit 3)")
}

// resumeDefaultLease is --lease under --resume unless given: how long the
// hosts keep a killed monitor's sessions (and enables) for it to come back.
const resumeDefaultLease = time.Minute

// openResume reads the state of the resumable monitor f names and checks
// it was running the same queries (sig); the answer goes to out.
func openResume(ctx context.Context, f *resumeFlags, url, token string, sec transport.Security, sig string, tf algebra.TimeFormat, out io.Writer, stderr io.Writer) (*fleet.Resume, *resumeOut, error) {
	if url == "" {
		return nil, nil, usageErr(errors.New("--resume NAME goes with --nats URL: the hosts keep a resumable monitor's frames in their NATS server's JetStream"))
	}
	if f.replicas < 1 || f.replicas > 5 {
		return nil, nil, usageErr(fmt.Errorf("--replicas %d: want 1 to 5", f.replicas))
	}
	r, err := fleet.OpenResume(ctx, url, token, f.name, fleet.StreamOptions{MaxAge: f.retain, MaxBytes: int64(f.retainBytes), Replicas: f.replicas}, sec)
	if err != nil {
		return nil, nil, openErr(err)
	}
	o := &resumeOut{r: r, ctx: ctx}
	file := regularFile(out)
	if !r.Found {
		r.State.Queries = sig
		if file != nil {
			r.State.Out = fleet.Output{File: true, Dev: file.dev, Ino: file.ino, Base: file.size}
		}
		return r, o, nil
	}
	if r.State.Queries != sig {
		r.Close()
		return nil, nil, usageErr(fmt.Errorf("--resume %s was running other queries or output flags: run it again as it was, or give another name", f.name))
	}
	was := r.State.Out
	o.n0 = was.N
	if was.Committed {
		fmt.Fprintf(stderr, "tqmon: resuming %s: its hosts' frames are read again from the first; the answer goes on after %s, the watermark it had printed up to\n", f.name, algebra.FormatTime(algebra.Time(was.WM), tf))
	} else {
		fmt.Fprintf(stderr, "tqmon: resuming %s: its hosts' frames are read again from the first; it had printed nothing\n", f.name)
	}
	same := was.File && file != nil && file.dev == was.Dev && file.ino == was.Ino && file.size >= was.Base+was.N
	switch {
	case same:
		// The answer goes to the file it went to: what the run before
		// wrote after its last commit (killed between a write and the
		// next commit) is taken back, and written again from the
		// committed watermark on — nothing twice, nothing lost.
		if err := file.f.Truncate(was.Base + was.N); err != nil {
			r.Close()
			return nil, nil, runtimeErr(fmt.Errorf("--resume %s: taking back what was printed after the last commit: %w", f.name, err))
		}
		file.f.Seek(0, io.SeekEnd)
	case was.Committed:
		fmt.Fprintf(stderr, "tqmon: resuming %s: the answer does not go to the file it went to: what the run before printed after its last commit (%v at most) may be printed again\n", f.name, commitEvery)
	}
	// Only the file the answer went to from its start says what went out;
	// with any other, a later resume goes by the commits alone.
	r.State.Out.File = same
	return r, o, nil
}

// commitEvery is how often, at most, a resumable monitor commits how far
// its answer went out (on a watermark, once the answer up to it is
// written out).
const commitEvery = 100 * time.Millisecond

// resumeOut is a resumable monitor's subject.Checkpoint: it commits to
// the monitors' bucket.
type resumeOut struct {
	r    *fleet.Resume
	ctx  context.Context
	n0   int64 // bytes of the answer printed before this run
	last time.Time
	err  error
}

func (o *resumeOut) Resumed() []fleet.Mark {
	if !o.r.Found || !o.r.State.Out.Committed {
		return nil
	}
	return o.r.State.Out.Marks
}

func (o *resumeOut) Commit(n int64, marks []fleet.Mark, t algebra.Time) {
	if time.Since(o.last) < commitEvery || o.err != nil {
		return
	}
	o.last = time.Now()
	out := o.r.State.Out
	out.Committed, out.N, out.WM, out.Marks = true, o.n0+n, int64(t), marks
	o.err = o.r.Commit(o.ctx, out)
}

type outFile struct {
	f        *os.File
	dev, ino uint64
	size     int64
}

// regularFile is w when it is a regular file (stdout redirected to one).
func regularFile(w io.Writer) *outFile {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &outFile{f: f, dev: uint64(st.Dev), ino: st.Ino, size: fi.Size()}
}
