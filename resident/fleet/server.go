package fleet

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// Bounds (see the package comment).
const (
	Window     = 64
	AckTimeout = 10 * time.Second
	Beat       = time.Second
	Silence    = 10 * time.Second
	// headerRoom is what a frame leaves of the server's max payload for
	// its headers.
	headerRoom = 64 << 10
	// pingWait is how long Join waits for another resident serving the
	// same host to answer.
	pingWait = 500 * time.Millisecond
	// KeepBytes bounds the frames a session keeps, unacknowledged, to
	// send again (at most Window frames, at most this many bytes): what
	// a NATS server that died took with it in flight, or a slow
	// consumer's drop, is sent again when the monitor asks for it
	// (tqmon.H.s.ID.r). A frame past the bound is not kept: if it is
	// lost, the session is.
	KeepBytes = 16 << 20
	// GapWait is how long a monitor waits for a missing frame to be
	// sent again before the session is lost.
	GapWait = 3 * time.Second
)

// Headers.
const (
	hLast  = "Tqmon-Last" // on a heartbeat: the last frame number published
	hSeq   = "Tqmon-Seq"
	hEnd   = "Tqmon-End"
	hBeat  = "Tqmon-Beat"
	hError = "Tqmon-Error"
)

const discoverSubject = "tqmon.discover"

var hostName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckHost refuses a host name that is not one NATS token.
func CheckHost(host string) error {
	if !hostName.MatchString(host) {
		return fmt.Errorf("fleet: host name %q: want 1 to 64 letters, digits, '-' or '_'", host)
	}
	return nil
}

// ErrHostTaken: another resident already serves the host name.
var ErrHostTaken = errors.New("fleet: host name taken")

func subj(host string, parts ...string) string {
	s := "tqmon." + host
	for _, p := range parts {
		s += "." + p
	}
	return s
}

// Options shape a resident's server.
type Options struct {
	// Beat is the heartbeat period (0: Beat; negative: no heartbeats —
	// tests of silence).
	Beat time.Duration
	// AckTimeout ends a session whose monitor acknowledges nothing for
	// that long while frames wait (0: AckTimeout).
	AckTimeout time.Duration
	// Logf reports refused commands (default: nothing).
	Logf func(format string, args ...any)
	// Clock reads the global clock the resident stamps its tuples with
	// (ns since the epoch), which tqmon.H.clock answers: the monitor's
	// skew bound for the host is measured against it. Nil: the wall
	// clock, which a resident's global clock follows (WallBase was read
	// from it) up to the adjustments made to it since.
	Clock func() int64
}

// Server serves a resident's sessions as one host on a NATS connection.
type Server struct {
	nc       *nats.Conn
	js       jetstream.JetStream // durable sessions' frames go to the stream
	host     string
	sessions transport.Sessions
	opts     Options
	maxFrame int
	subs     []*nats.Subscription

	mu     sync.Mutex
	live   map[string]*session
	closed bool
	wg     sync.WaitGroup
	active atomic.Int64
	sent   transport.Counters
}

// clock answers the resident's clock now, in ns (decimal).
func (srv *Server) clock(m *nats.Msg) {
	now := time.Now().UnixNano()
	if srv.opts.Clock != nil {
		now = srv.opts.Clock()
	}
	m.Respond(strconv.AppendInt(nil, now, 10))
}

// Join serves s as host on nc: it refuses a host name another resident
// serves (ErrHostTaken) and returns once monitors can open sessions.
func Join(nc *nats.Conn, host string, s transport.Sessions, o Options) (*Server, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	if o.Beat == 0 {
		o.Beat = Beat
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = AckTimeout
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if _, err := nc.Request(subj(host, "ping"), nil, pingWait); err == nil {
		return nil, fmt.Errorf("%w: another resident serves %q on %s", ErrHostTaken, host, nc.ConnectedUrlRedacted())
	} else if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		return nil, fmt.Errorf("fleet: joining as %q: %w", host, err)
	}
	mf := int(nc.MaxPayload()) - headerRoom
	if mf > wire.MaxFrame {
		mf = wire.MaxFrame
	}
	if mf < 1024 {
		return nil, fmt.Errorf("fleet: the NATS server's max payload (%d bytes) leaves no room for frames", nc.MaxPayload())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: joining as %q: %w", host, err)
	}
	srv := &Server{nc: nc, js: js, host: host, sessions: s, opts: o, maxFrame: mf, live: map[string]*session{}}
	for _, h := range []struct {
		subject string
		cb      nats.MsgHandler
	}{
		{subj(host, "ping"), func(m *nats.Msg) { m.Respond([]byte(host)) }},
		{discoverSubject, func(m *nats.Msg) { m.Respond([]byte(host)) }},
		{subj(host, "open"), srv.open},
		{subj(host, "clock"), srv.clock},
	} {
		sub, err := nc.Subscribe(h.subject, h.cb)
		if err != nil {
			srv.unsubscribe()
			return nil, fmt.Errorf("fleet: %s: %w", h.subject, err)
		}
		srv.subs = append(srv.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		srv.unsubscribe()
		return nil, fmt.Errorf("fleet: joining as %q: %w", host, err)
	}
	return srv, nil
}

func (srv *Server) unsubscribe() {
	for _, s := range srv.subs {
		s.Unsubscribe()
	}
	srv.subs = nil
}

// Host is the name served.
func (srv *Server) Host() string { return srv.host }

// Active is the number of sessions open now.
func (srv *Server) Active() int64 { return srv.active.Load() }

// Drain waits, at most timeout, until every session has ended (after
// the resident closed, each ends once its last frame is out).
func (srv *Server) Drain(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for srv.active.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

var errShutdown = errors.New("resident shutting down")

// Stop stops answering, ends every session ("resident shutting down")
// and returns once each is closed.
func (srv *Server) Stop() {
	srv.mu.Lock()
	srv.closed = true
	srv.unsubscribe()
	for _, s := range srv.live {
		s.cancel(errShutdown)
	}
	srv.mu.Unlock()
	srv.wg.Wait()
	srv.nc.Flush()
}

// session is one monitor's session.
type session struct {
	id     string
	srv    *Server
	served *transport.Served
	cancel context.CancelCauseFunc
	subs   []*nats.Subscription

	seq    uint64        // frames published (the pump's)
	acked  atomic.Uint64 // the last frame the monitor took
	ackCh  chan struct{} // signalled on each acknowledgement
	sendMu sync.Mutex    // frames and heartbeats are published one at a time
	// kept are the frames published and not yet acknowledged, in order,
	// copied (sendMu): sent again on request; keptBytes their size.
	kept      []*nats.Msg
	keptBytes int

	// durable: the session's frames go to the stream (durable.go), wait
	// for no monitor and are not kept here; hello is its Hello, what a
	// resuming monitor is answered. cmdDone is the last numbered command
	// applied (header Tqmon-Cmd): a resumed monitor, running the same
	// program again from the same frames, sends the same commands again
	// in the same order, and those already applied are not applied twice.
	durable bool
	hello   []byte
	cmdDone uint64
}

// errMonitorDone is the cause when the monitor ends the session (CBye).
var errMonitorDone = errors.New("monitor ended the session")

func (srv *Server) open(m *nats.Msg) {
	id := string(m.Data)
	if !hostName.MatchString(id) || m.Reply == "" {
		return // not a monitor speaking the protocol
	}
	fail := func(err error) {
		r := nats.NewMsg(m.Reply)
		r.Header.Set(hError, err.Error())
		m.RespondMsg(r)
	}
	if m.Header.Get(hResume) != "" {
		// A monitor resuming a durable session (killed, started again):
		// it goes on where it is, under its new monitor.
		srv.mu.Lock()
		s, ok := srv.live[id]
		srv.mu.Unlock()
		if !ok || !s.durable {
			fail(fmt.Errorf("session %s is not open here (it ended: its lease lapsed, or the resident restarted)", id))
			return
		}
		m.Respond(s.hello)
		return
	}
	durable := m.Header.Get(hDurable) != ""
	hello, err := transport.HelloFrame(srv.sessions, srv.maxFrame)
	if err != nil {
		fail(err)
		return
	}
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		fail(errShutdown)
		return
	}
	if _, dup := srv.live[id]; dup {
		srv.mu.Unlock()
		fail(fmt.Errorf("session %s already open", id))
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &session{id: id, srv: srv, cancel: cancel, ackCh: make(chan struct{}, 1), durable: durable, hello: hello}
	srv.live[id] = s
	srv.active.Add(1)
	srv.wg.Add(1)
	srv.mu.Unlock()

	s.served = transport.NewServed(srv.sessions.Open(), nil)
	for _, h := range []struct {
		subject string
		cb      nats.MsgHandler
	}{{subj(srv.host, "s", id, "c"), s.command}, {subj(srv.host, "s", id, "a"), s.ack}, {subj(srv.host, "s", id, "r"), s.resend}} {
		sub, err := srv.nc.Subscribe(h.subject, h.cb)
		if err != nil {
			cancel(err)
			break
		}
		s.subs = append(s.subs, sub)
	}
	// Subscribed before the reply: the monitor's first command finds us.
	srv.nc.Flush()
	if durable {
		// The Hello first in the stream (frame 0): a monitor resuming
		// after this resident has gone still reads it there.
		hm := nats.NewMsg("")
		hm.Header.Set(hSeq, "0")
		hm.Data = hello
		if err := s.store(ctx, hm, 0); err != nil {
			s.durable = false // no stream: the end frame goes where a monitor waits
			cancel(err)
			fail(err)
			go s.run(ctx)
			return
		}
	}
	m.Respond(hello)
	go s.run(ctx)
}

// command applies one command and replies (empty, or why the session is
// gone). A refused command is logged and the session goes on, as over
// gRPC.
func (s *session) command(m *nats.Msg) {
	var c wire.Command
	reply := func(err error) {
		if m.Reply == "" {
			return
		}
		r := nats.NewMsg(m.Reply)
		if err != nil {
			r.Header.Set(hError, err.Error())
		}
		m.RespondMsg(r)
	}
	if err := c.UnmarshalBinary(m.Data); err != nil {
		reply(fmt.Errorf("bad command frame: %v", err))
		s.cancel(fmt.Errorf("bad command frame: %v", err))
		return
	}
	if n, err := strconv.ParseUint(m.Header.Get(hCmd), 10, 64); s.durable && err == nil {
		// (Commands come one at a time: one subscription's callback.)
		if n <= s.cmdDone {
			reply(nil) // applied already, for the monitor before
			return
		}
		s.cmdDone = n
	}
	ok, err := s.served.Command(&c, func() { s.cancel(errMonitorDone) })
	if !ok {
		reply(errors.New("session closed"))
		return
	}
	if err != nil {
		s.srv.opts.Logf("fleet: host %s session %s: %s command refused: %v", s.srv.host, s.id, c.Kind, err)
	}
	reply(nil)
}

func (s *session) ack(m *nats.Msg) {
	n, err := strconv.ParseUint(string(m.Data), 10, 64)
	if err != nil {
		return
	}
	for {
		old := s.acked.Load()
		if n <= old || s.acked.CompareAndSwap(old, n) {
			break
		}
	}
	select {
	case s.ackCh <- struct{}{}:
	default:
	}
	s.sendMu.Lock()
	s.trim()
	s.sendMu.Unlock()
}

// trim drops the kept frames the monitor has acknowledged (sendMu held).
func (s *session) trim() {
	acked := s.acked.Load()
	i := 0
	for i < len(s.kept) && seqOf(s.kept[i]) <= acked {
		s.keptBytes -= len(s.kept[i].Data)
		s.kept[i] = nil
		i++
	}
	s.kept = s.kept[i:]
}

// keep keeps a frame just published to send again (sendMu held), within
// KeepBytes: past it, the oldest kept frames go (if one of them is lost
// too, the session is).
func (s *session) keep(m *nats.Msg) {
	c := nats.NewMsg(m.Subject)
	c.Header = m.Header
	c.Data = append([]byte(nil), m.Data...)
	s.kept = append(s.kept, c)
	s.keptBytes += len(c.Data)
	for s.keptBytes > KeepBytes && len(s.kept) > 1 {
		s.keptBytes -= len(s.kept[0].Data)
		s.kept[0] = nil
		s.kept = s.kept[1:]
	}
}

// resend publishes again, in order, the kept frames after the one the
// monitor names (the last it took): it saw a gap.
func (s *session) resend(m *nats.Msg) {
	after, err := strconv.ParseUint(string(m.Data), 10, 64)
	if err != nil {
		return
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	for _, f := range s.kept {
		if seqOf(f) > after {
			s.srv.nc.PublishMsg(f)
		}
	}
}

// seqOf is a frame's number.
func seqOf(m *nats.Msg) uint64 {
	n, _ := strconv.ParseUint(m.Header.Get(hSeq), 10, 64)
	return n
}

// publish sends one frame with the next sequence number, after waiting
// for the window: at most Window frames unacknowledged.
func (s *session) publish(ctx context.Context, data []byte) error {
	if s.durable {
		// The stream is the window: a durable session's monitor may be
		// dead, and the frame waits there, not here.
		m := nats.NewMsg("")
		m.Data = data
		s.sendMu.Lock()
		s.seq++
		seq := s.seq
		s.sendMu.Unlock()
		m.Header.Set(hSeq, strconv.FormatUint(seq, 10))
		if err := s.store(ctx, m, seq); err != nil {
			// Not kept: the end frame takes its number, so that a
			// monitor reads why rather than a frame missing.
			s.sendMu.Lock()
			s.seq--
			s.sendMu.Unlock()
			return err
		}
		return nil
	}
	var idle *time.Timer
	for s.seq-s.acked.Load() >= Window {
		if idle == nil {
			idle = time.NewTimer(s.srv.opts.AckTimeout)
			defer idle.Stop()
		}
		select {
		case <-s.ackCh:
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.C:
			return fmt.Errorf("monitor acknowledged nothing for %v with %d frames waiting", s.srv.opts.AckTimeout, Window)
		}
	}
	m := nats.NewMsg(subj(s.srv.host, "s", s.id, "b"))
	m.Data = data
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.seq++
	m.Header.Set(hSeq, strconv.FormatUint(s.seq, 10))
	s.keep(m)
	return s.srv.nc.PublishMsg(m)
}

func (s *session) beat(ctx context.Context) {
	if s.srv.opts.Beat < 0 {
		return
	}
	t := time.NewTicker(s.srv.opts.Beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m := nats.NewMsg(subj(s.srv.host, "s", s.id, "b"))
			m.Header.Set(hBeat, "1")
			s.sendMu.Lock()
			m.Header.Set(hLast, strconv.FormatUint(s.seq, 10))
			s.srv.nc.PublishMsg(m)
			s.sendMu.Unlock()
		}
	}
}

// run pumps the session's batches, then sends its end frame and closes it.
func (s *session) run(ctx context.Context) {
	defer s.srv.wg.Done()
	beatCtx, stopBeat := context.WithCancel(ctx)
	go s.beat(beatCtx)
	err := s.served.Pump(ctx, s.srv.maxFrame, func(fr []byte) error { return s.publish(ctx, fr) }, &s.srv.sent)
	stopBeat()
	why := ""
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil && err != errMonitorDone {
		why = err.Error()
	}
	s.served.Close()
	if err != errMonitorDone && s.durable {
		// The end frame to the stream too, where a monitor resuming
		// later reads why the session ended.
		m := nats.NewMsg("")
		s.sendMu.Lock()
		s.seq++
		seq := s.seq
		s.sendMu.Unlock()
		m.Header.Set(hSeq, strconv.FormatUint(seq, 10))
		m.Header.Set(hEnd, why)
		sctx, cancel := context.WithTimeout(context.Background(), endWait)
		if err := s.store(sctx, m, seq); err != nil {
			s.srv.opts.Logf("fleet: host %s session %s: its end frame: %v", s.srv.host, s.id, err)
		}
		cancel()
	} else if err != errMonitorDone {
		// The end frame waits for no window: the monitor may be gone.
		m := nats.NewMsg(subj(s.srv.host, "s", s.id, "b"))
		s.sendMu.Lock()
		s.seq++
		m.Header.Set(hSeq, strconv.FormatUint(s.seq, 10))
		m.Header.Set(hEnd, why)
		s.keep(m)
		s.srv.nc.PublishMsg(m)
		last := s.seq
		s.sendMu.Unlock()
		// The end frame, too, is sent again if it is lost: the session
		// stays for the monitor to take it, up to GapWait.
		wait := time.NewTimer(GapWait)
	linger:
		for s.acked.Load() < last {
			select {
			case <-s.ackCh:
			case <-wait.C:
				break linger
			}
		}
		wait.Stop()
	}
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
	s.cancel(nil)
	s.srv.mu.Lock()
	delete(s.srv.live, s.id)
	s.srv.mu.Unlock()
	s.srv.active.Add(-1)
}
