package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/replay"
)

// A shellSource is what a shell session queries: a recorded history, or
// live residents.
type shellSource interface {
	// Describe is a line for the banner.
	Describe() string
	Catalog() *algebra.Catalog
	// Now is the time "now" stands for.
	Now() algebra.Time
	// Live sources stream results (show) until the context ends; others
	// return whole tables.
	Live() bool
	Run(ctx context.Context, prog *query.Program, show func(stmt int, e exec.Elem)) ([]query.Result, error)
	// Explain describes a rewrite (with estimates where the source can
	// give them).
	Explain(r rewrite.Result) string
	// Sensors reports the sensors: what the last live query enabled and
	// received.
	Sensors() string
	Close() error
}

// historySource is a recorded history directory.
type historySource struct {
	dir string
	h   *algebra.History
}

func openHistorySource(dir string) (*historySource, error) {
	h, err := history.Load(dir)
	if err != nil {
		return nil, err
	}
	return &historySource{dir: dir, h: h}, nil
}

func (s *historySource) Describe() string {
	n := 0
	if _, _, ok := s.h.Extent(); ok {
		for _, t := range s.h.Tables {
			n += len(t.Rows)
		}
	}
	return fmt.Sprintf("history %s: %d relations, %d tuples", s.dir, len(s.h.Catalog.Relations), n)
}
func (s *historySource) Catalog() *algebra.Catalog { return s.h.Catalog }
func (s *historySource) Now() algebra.Time {
	if _, end, ok := s.h.Extent(); ok {
		return end
	}
	return 0
}
func (s *historySource) Live() bool { return false }
func (s *historySource) Run(_ context.Context, prog *query.Program, _ func(int, exec.Elem)) ([]query.Result, error) {
	rs, _, err := prog.RunHistory(s.h)
	return rs, err
}
func (s *historySource) Explain(r rewrite.Result) string { return rewrite.Explain(r, s.h) }
func (s *historySource) Sensors() string {
	return "no sensors: the source is a recorded history (every tuple is already there)\n"
}
func (s *historySource) Close() error { return nil }

// liveSource queries resident monitors: the demo subject running inside
// the shell, or residents reached with --connect.
type liveSource struct {
	desc  string
	cat   *algebra.Catalog
	dial  func(ctx context.Context) ([]wire.Conn, error)
	stop  func()
	mu    sync.Mutex
	last  *remote.LiveStats
	hello *wire.Hello
}

func (s *liveSource) Describe() string          { return s.desc }
func (s *liveSource) Catalog() *algebra.Catalog { return s.cat }
func (s *liveSource) Now() algebra.Time         { return 0 }
func (s *liveSource) Live() bool                { return true }
func (s *liveSource) Explain(r rewrite.Result) string {
	return rewrite.Explain(r, nil)
}

func (s *liveSource) Run(ctx context.Context, prog *query.Program, show func(int, exec.Elem)) ([]query.Result, error) {
	conns, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	rs, st, err := remote.RunLive(ctx, prog, conns, remote.LiveOptions{OnElem: show})
	s.mu.Lock()
	s.last = &st
	s.mu.Unlock()
	return rs, err
}

func (s *liveSource) Sensors() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resident %s: %d sensors\n", s.hello.Name, len(s.hello.Sensors))
	s.mu.Lock()
	st := s.last
	s.mu.Unlock()
	if st == nil {
		b.WriteString("no query has run yet: nothing is enabled\n")
		return b.String()
	}
	b.WriteString("last query (nothing stays enabled between queries):\n")
	names := append([]string(nil), s.hello.Sensors...)
	sort.Strings(names)
	for _, n := range names {
		p, w, d := st.Packets[n], st.Wanted[n], st.Dropped[n]
		if p == 0 && w == 0 && d == 0 {
			fmt.Fprintf(&b, "  %-14s not enabled\n", n)
			continue
		}
		fmt.Fprintf(&b, "  %-14s %d packets received, %d produced while enabled, %d dropped\n", n, p, w, d)
	}
	for _, v := range st.Widened {
		fmt.Fprintf(&b, "  note: α %s was widened (its sensor enabled for every entity)\n", v)
	}
	fmt.Fprintf(&b, "  peak held: %d tuples\n", st.PeakHeld)
	return b.String()
}

func (s *liveSource) Close() error {
	if s.stop != nil {
		s.stop()
	}
	return nil
}

// startDemoSource runs the demo subject inside the shell for as long as
// the session lasts; each query is a new session with its resident.
func startDemoSource(cfg demo.Config) (*liveSource, error) {
	cat, err := demoCatalog()
	if err != nil {
		return nil, err
	}
	clock := demo.NewClock(cfg.Scale)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		demo.New(ossensors.New(res), cfg).Run(ctx)
	}()
	s := &liveSource{
		desc:  fmt.Sprintf("the demo system (seed %d: %d processors, %d processes, %d mailboxes; one subject second per real millisecond)", cfg.Seed, cfg.Processors, cfg.Processes, cfg.Mailboxes),
		cat:   cat,
		hello: res.Hello(),
		dial: func(context.Context) ([]wire.Conn, error) {
			return []wire.Conn{res.Local()}, nil
		},
		stop: func() {
			cancel()
			<-done
			clock.Stop()
			res.Close()
		},
	}
	return s, nil
}

// connectSource queries residents at addrs, connecting anew for each query.
func connectSource(ctx context.Context, addrs []string, token string) (*liveSource, error) {
	dial := func(ctx context.Context) ([]wire.Conn, error) {
		var conns []wire.Conn
		for _, a := range addrs {
			c, err := transport.Dial(ctx, a, token)
			if err != nil {
				for _, c := range conns {
					c.Close()
				}
				return nil, fmt.Errorf("connect %s: %w", a, err)
			}
			conns = append(conns, c)
		}
		if err := remote.CheckHellos(conns); err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		return conns, nil
	}
	conns, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	hello := conns[0].Hello()
	for _, c := range conns {
		c.Close()
	}
	f, err := sdl.Parse(hello.Name+".sdl", hello.SDL)
	if err != nil {
		return nil, fmt.Errorf("resident %s announces a description that does not parse: %w", hello.Name, err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		return nil, fmt.Errorf("resident %s announces an invalid description: %w", hello.Name, err)
	}
	if len(addrs) == 0 {
		return nil, errors.New("no address")
	}
	return &liveSource{desc: fmt.Sprintf("resident %s at %s", hello.Name, strings.Join(addrs, ", ")), cat: cat, dial: dial, hello: hello}, nil
}

// dbSource is a recorded database.
type dbSource struct {
	dir string
	d   *db.DB
}

func openDBSource(dir string) (*dbSource, error) {
	d, err := db.Open(dir, db.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	return &dbSource{dir: dir, d: d}, nil
}

func (s *dbSource) Describe() string {
	desc := fmt.Sprintf("database %s: %d relations", s.dir, len(s.d.Catalog().Relations))
	if start, end, ok := s.d.Extent(); ok {
		desc += fmt.Sprintf(", %s to %s", algebra.FormatTime(start, algebra.TimeClock), algebra.FormatTime(end, algebra.TimeClock))
	}
	return desc
}
func (s *dbSource) Catalog() *algebra.Catalog { return s.d.Catalog() }
func (s *dbSource) Now() algebra.Time {
	if _, end, ok := s.d.Extent(); ok {
		return end
	}
	return 0
}
func (s *dbSource) Live() bool { return false }
func (s *dbSource) Run(ctx context.Context, prog *query.Program, _ func(int, exec.Elem)) ([]query.Result, error) {
	q, err := replay.Plan(s.d.Catalog(), prog.Stmts)
	if err != nil {
		return nil, err
	}
	rs, _, err := replay.Run(s.d, q, replay.Options{Context: ctx})
	if err != nil {
		return nil, prog.Locate(err)
	}
	out := make([]query.Result, len(rs))
	for i, r := range rs {
		out[i] = query.Result{Stmt: r.Stmt, Table: r.Table}
	}
	return out, nil
}
func (s *dbSource) Explain(r rewrite.Result) string { return rewrite.Explain(r, nil) }
func (s *dbSource) Sensors() string {
	return "no sensors: the source is a recorded database (what was recorded is all there is)\n"
}
func (s *dbSource) Close() error { return s.d.Close() }

// storeSpec is the sensor description \record stores results under, and
// the span they cover.
func storeSpec(src shellSource) (db.Spec, *algebra.Window, error) {
	switch s := src.(type) {
	case *historySource:
		spec, err := historySpec(s.dir)
		return spec, s.h.Window, err
	case *dbSource:
		return s.d.Spec(), s.d.Window(), nil
	case *liveSource:
		return db.Spec{Name: s.hello.Name + ".sdl", Text: s.hello.SDL}, nil, nil
	}
	return db.Spec{}, nil, errors.New("this source cannot record")
}

// startKernelSource makes a kernel resident for the session; each query is
// a session of its own, and a sensor is attached only while one needs it.
func startKernelSource(target string, params map[string]string) (*liveSource, error) {
	kr, err := openKernel(&kernelFlags{on: true, target: target}, params)
	if err != nil {
		return nil, err
	}
	desc := "this machine's Linux kernel (eBPF sensors attach only while a query needs them)"
	if target != "" {
		desc += "; $target = " + target
	}
	return &liveSource{
		desc:  desc,
		cat:   kr.res.Catalog(),
		hello: kr.res.Hello(),
		dial: func(context.Context) ([]wire.Conn, error) {
			return kr.Conns(), nil
		},
		stop: func() { kr.Close() },
	}, nil
}
