package subject

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/truth"
)

// DemoCatalog compiles the demo's sensor description.
func DemoCatalog() (*algebra.Catalog, error) {
	f, err := sdl.Parse("os.sdl", ossensors.SDL)
	if err != nil {
		return nil, err
	}
	return sensor.Compile(f)
}

// demoSubject is the paper's example system running in this process with
// its resident and, when asked, a recorder of its ground truth.
type demoSubject struct {
	live
	cfg      demo.Config
	clock    *demo.SubjectClock
	rec      *truth.Recorder
	res      *resident.Resident
	truthDir string
	stopBg   func()

	ran  bool  // a session ended well: the truth is worth writing
	stop int64 // the subject's stop time on its own clock
}

// newDemo makes the resident of the demo system, and the recorder of its
// truth when withTruth.
func newDemo(cfg demo.Config, withTruth bool) (*demoSubject, error) {
	cat, err := DemoCatalog()
	if err != nil {
		return nil, err
	}
	s := &demoSubject{cfg: cfg, clock: demo.NewClock(cfg.Scale)}
	s.cat = cat
	if withTruth {
		s.rec = truth.New(cat, 0, 0)
	}
	var sink resident.TruthSink // not a typed nil
	if s.rec != nil {
		sink = s.rec
	}
	s.res = resident.New(ossensors.Spec(), demo.Options(s.clock, sink))
	s.hello = s.res.Hello()
	if s.rec != nil {
		s.rec.SetClock(s.hello.MonoBase, s.hello.WallBase)
	}
	return s, nil
}

func openDemo(o Options) (*demoSubject, error) {
	s, err := newDemo(o.Config, o.Truth != "")
	if err != nil {
		return nil, err
	}
	s.truthDir = o.Truth
	cfg := o.Config
	s.desc = fmt.Sprintf("the demo system (seed %d: %d processors, %d processes, %d mailboxes; one subject second per real millisecond)", cfg.Seed, cfg.Processors, cfg.Processes, cfg.Mailboxes)
	s.open = s.runOnce
	if o.Background {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			demo.New(ossensors.New(s.res), cfg).Run(ctx)
		}()
		s.stopBg = func() {
			cancel()
			<-done
			s.clock.Stop()
		}
		s.open = func(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
			return nil, mon(Session{Conns: []wire.Conn{s.res.Local()}, Ctx: ctx, Duration: d})
		}
	}
	return s, nil
}

func (s *demoSubject) now() algebra.Time { return s.clock.Now() }

// Spec is the demo's sensor description, under the name its ground truth
// has.
func (s *demoSubject) Spec() (db.Spec, error) {
	return db.Spec{Name: "os.sdl", Text: ossensors.SDL}, nil
}

// runOnce runs mon on the resident's connection and the subject once mon
// is ready, until d passes (when positive), ctx ends or mon does; then it
// stops the subject (mon sees its session end) and waits for mon. It
// returns the span the subject ran.
func (s *demoSubject) runOnce(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error) {
	ready := make(chan struct{})
	var once sync.Once
	var monErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		monErr = mon(Session{Conns: []wire.Conn{s.res.Local()}, Ready: func() { once.Do(func() { close(ready) }) },
			Clock: s.now, Ctx: context.WithoutCancel(ctx)})
	}()
	select {
	case <-ready:
	case <-done:
		s.res.Close()
		if monErr == nil {
			monErr = errors.New("the monitor ended before the subject started")
		}
		return nil, monErr
	case <-time.After(10 * time.Second):
		return nil, errors.New("the monitor did not start")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	demo.New(ossensors.New(s.res), s.cfg).Run(ctx)
	s.stop = s.clock.Stop()
	s.res.Close() // a last drain, then the session ends and the monitor finishes
	<-done
	s.ran = monErr == nil
	w := algebra.Window{From: s.hello.WallBase, To: s.hello.WallBase + (s.stop - s.hello.MonoBase)}
	return &w, monErr
}

// Close stops the subject and, after a run that went well, writes its
// ground truth where Options.Truth says.
func (s *demoSubject) Close() error {
	if s.stopBg != nil {
		s.stopBg()
	}
	s.res.Close()
	if s.rec == nil || !s.ran {
		return nil
	}
	rec := s.rec
	s.rec, s.ran = nil, false
	return writeTruth(s.truthDir, rec, s.stop)
}

func writeTruth(dir string, rec *truth.Recorder, stop int64) error {
	return history.Write(dir, rec.History(stop), ossensors.SDL, "os.sdl")
}

// ServeOptions shape a demo subject serving remote monitors.
type ServeOptions struct {
	Config demo.Config
	// Listen is where to serve: a unix socket path, or host:port with
	// Token. With NATS set, the resident joins that NATS server as Host
	// instead (Token presented there).
	Listen, Token string
	NATS, Host    string
	// TLS names the TLS files: the server's certificate (and the CA of
	// the clients it accepts) over gRPC, the client's over NATS
	// (transport.TLSFiles); Insecure lets a token go to a NATS server
	// that is not loopback in clear.
	TLS      transport.TLSFiles
	Insecure bool
	// Wait starts the system only once a monitor has asked for its lease.
	Wait bool
	// WaitAtMost bounds that wait (0: none): when no monitor has asked by
	// then, the subject ends unwatched, having run nothing, and Unwatched
	// is told.
	WaitAtMost time.Duration
	Unwatched  func()
	// Duration is how long the system runs.
	Duration time.Duration
	// Truth, when set, is where its ground truth is written at the end.
	Truth string
	// Serving is called once the server listens.
	Serving func()
	// Ran, if set, is told how many running bursts the system completed
	// and in how long (real time) once it stops: the subject's rate.
	Ran func(bursts int64, took time.Duration)
}

// LeaseSessions are a resident's sessions for a transport server, and a
// channel closed once a monitor has asked for its lease (which it does
// after every enabling command): a subject started then misses nothing.
func LeaseSessions(res *resident.Resident) (transport.Sessions, <-chan struct{}) {
	rs := &leaseSessions{ready: make(chan struct{})}
	return transport.Adapt(res.Hello, func() leaseSession {
		return leaseSession{Session: res.Open(), rs: rs}
	}), rs.ready
}

type leaseSessions struct {
	once  sync.Once
	ready chan struct{}
}

type leaseSession struct {
	*resident.Session
	rs *leaseSessions
}

func (s leaseSession) Apply(cmd *wire.Command) error {
	err := s.Session.Apply(cmd)
	if cmd.Kind == wire.CLease {
		s.rs.once.Do(func() { close(s.rs.ready) })
	}
	return err
}

// Serve runs the demo system with its resident serving remote monitors
// until the duration passes or ctx ends (before the system started:
// at once).
func Serve(ctx context.Context, o ServeOptions) error {
	s, err := newDemo(o.Config, o.Truth != "")
	if err != nil {
		return err
	}
	sessions, ready := LeaseSessions(s.res)
	srv, err := serveSessions(sessions, o.Listen, o.Token, o.NATS, o.Host, o.TLS, o.Insecure, nil)
	if err != nil {
		return err
	}
	if o.Serving != nil {
		o.Serving()
	}
	if o.Wait {
		var limit <-chan time.Time
		if o.WaitAtMost > 0 {
			t := time.NewTimer(o.WaitAtMost)
			defer t.Stop()
			limit = t.C
		}
		select {
		case <-ready:
		case <-limit:
			if o.Unwatched != nil {
				o.Unwatched()
			}
			srv.stop()
			s.res.Close()
			return nil
		case <-ctx.Done():
			srv.stop()
			s.res.Close()
			return nil
		}
	}
	ctx, cancelRun := context.WithTimeout(ctx, o.Duration)
	defer cancelRun()
	sys := demo.New(ossensors.New(s.res), o.Config)
	start := time.Now()
	sys.Run(ctx)
	took := time.Since(start)
	stop := s.clock.Stop()
	if o.Ran != nil {
		o.Ran(sys.Bursts(), took)
	}
	s.res.Close()
	srv.drain(2 * time.Second) // the monitors get the last batches and a clean end
	srv.stop()
	if s.rec != nil {
		return writeTruth(o.Truth, s.rec, stop)
	}
	return nil
}
