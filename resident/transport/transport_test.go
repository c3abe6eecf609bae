package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/tqmon/tqmon/resident/wire"
)

// ---- a fake resident ----

type fakeSessions struct {
	hello  *wire.Hello
	opened chan *fakeSession
	// applyErr, if set, is what Apply returns for commands of this kind.
	applyErr map[wire.CommandKind]error
	// endOnBye: Apply(CBye) ends the session, as the resident does.
	endOnBye bool
	nOpen    atomic.Int64
}

func newFake() *fakeSessions {
	return &fakeSessions{
		hello: &wire.Hello{Version: wire.Version, Name: "fake", SDL: "entity Process(pid: int)",
			Types: []string{"Process"}, Sensors: []string{"Process", "Send"}, MonoBase: 5, WallBase: 1e18, Period: 1e9},
		opened: make(chan *fakeSession, 16),
	}
}

func (f *fakeSessions) Hello() *wire.Hello { return f.hello }

func (f *fakeSessions) Open() Session { return f.open() }

func (f *fakeSessions) open() *fakeSession {
	f.nOpen.Add(1)
	s := &fakeSession{f: f, batches: make(chan *wire.Batch, 64), cmds: make(chan *wire.Command, 1024), closed: make(chan struct{})}
	f.opened <- s
	return s
}

type fakeSession struct {
	f         *fakeSessions
	batches   chan *wire.Batch // what Recv returns; closing it ends the session (io.EOF)
	recvErr   atomic.Value     // error: returned by Recv once batches are closed
	cmds      chan *wire.Command
	closed    chan struct{}
	nClose    atomic.Int64
	badApply  atomic.Bool // Apply called after Close, or concurrently
	inApply   atomic.Bool
	closeOnce sync.Once
}

func (s *fakeSession) Apply(c *wire.Command) error {
	if !s.inApply.CompareAndSwap(false, true) {
		s.badApply.Store(true)
	}
	defer s.inApply.Store(false)
	select {
	case <-s.closed:
		s.badApply.Store(true)
	default:
	}
	s.cmds <- c
	if c.Kind == wire.CBye && s.f.endOnBye {
		s.recvErr.Store(errors.New("bye"))
		close(s.batches)
		time.Sleep(20 * time.Millisecond) // Recv sees the end before Apply returns
	}
	return s.f.applyErr[c.Kind]
}

func (s *fakeSession) Recv(ctx context.Context) (*wire.Batch, error) {
	select {
	case b, ok := <-s.batches:
		if !ok {
			if err, _ := s.recvErr.Load().(error); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *fakeSession) Close() {
	s.nClose.Add(1)
	s.closeOnce.Do(func() { close(s.closed) })
}

// ---- helpers ----

func waitOpen(t *testing.T, f *fakeSessions) *fakeSession {
	t.Helper()
	select {
	case s := <-f.opened:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no session opened")
		return nil
	}
}

func waitClosed(t *testing.T, s *fakeSession) {
	t.Helper()
	select {
	case <-s.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("session not closed")
	}
}

func nextCmd(t *testing.T, s *fakeSession) *wire.Command {
	t.Helper()
	select {
	case c := <-s.cmds:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no command arrived")
		return nil
	}
}

// serve starts a server on lis and returns it with a function that stops
// it and returns Serve's result.
func serve(t *testing.T, lis net.Listener, f Sessions, opts ServerOptions) (*Server, func() error) {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	srv, err := NewServer(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	var once sync.Once
	var serr error
	stop := func() error {
		once.Do(func() {
			srv.Stop()
			serr = <-errc
		})
		return serr
	}
	t.Cleanup(func() { stop() })
	return srv, stop
}

func sockPath(t *testing.T) string {
	// Unix socket paths are short (108 bytes); t.TempDir can be long.
	dir, err := os.MkdirTemp("", "tqmon")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "r.sock")
}

func dial(t *testing.T, addr, token string) wire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, token)
	if err != nil {
		t.Fatalf("Dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testBatch(r *rand.Rand, n int) *wire.Batch {
	b := &wire.Batch{Defs: []wire.EntityDef{{Key: 1, Type: 0, ID: "p1"}}}
	ts := int64(1e12) + r.Int64N(1e9)
	for i := 0; i < n; i++ {
		ts += r.Int64N(3000)
		p := wire.Packet{TS: ts, Sensor: uint16(r.IntN(4)), Kind: wire.PacketKind(1 + r.IntN(7))}
		if p.Kind != wire.PEvent {
			p.Tuple = r.Uint64N(1e6)
		}
		if p.Kind == wire.PEnd || p.Kind == wire.PWhole {
			p.Begin = ts - r.Int64N(1e6)
		}
		p.Vals = []wire.Value{{Kind: wire.VEntity, N: 1}, {Kind: wire.VString, S: fmt.Sprint("m", i)}}
		b.Packets = append(b.Packets, p)
	}
	b.Watermark = ts + 1
	b.Counts = []wire.Count{{Sensor: 1, Wanted: uint64(n), Drops: 1}}
	return b
}

// ---- round trips ----

// exercise runs a session: batches from the resident arrive intact and in
// order, commands from the remote arrive in order, Close sends CBye and
// closes the session.
func exercise(t *testing.T, f *fakeSessions, c wire.Conn) {
	t.Helper()
	if !reflect.DeepEqual(c.Hello(), f.hello) {
		t.Fatalf("hello %+v, want %+v", c.Hello(), f.hello)
	}
	s := waitOpen(t, f)
	r := rand.New(rand.NewPCG(1, 2))
	var sent []*wire.Batch
	for i := 0; i < 20; i++ {
		b := testBatch(r, r.IntN(200))
		sent = append(sent, b)
		s.batches <- b
	}
	for i, want := range sent {
		got, err := c.Recv()
		if err != nil {
			t.Fatalf("Recv %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("batch %d differs:\n got %+v\nwant %+v", i, got, want)
		}
	}
	cmds := []*wire.Command{
		{Kind: wire.CEnable, Sensor: 1, Type: 0, Entity: "p1"},
		{Kind: wire.CTrigger, ID: 3, Sensor: 2, On: 1, Attr: 1, Conds: []wire.Cond{{Attr: 0, Value: wire.Value{Kind: wire.VEntity, S: "p1"}}}},
		{Kind: wire.CSample, ID: 4, Sensor: 3, All: true, Period: 1e8},
		{Kind: wire.CLease, Period: 5e9},
	}
	for _, cmd := range cmds {
		if err := c.Send(cmd); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range cmds {
		if got := nextCmd(t, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("command %d: got %+v, want %+v", i, got, want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := nextCmd(t, s); got.Kind != wire.CBye {
		t.Fatalf("after Close: command %+v, want CBye", got)
	}
	waitClosed(t, s)
	if _, err := c.Recv(); err == nil {
		t.Fatal("Recv after Close succeeded")
	}
	if err := c.Send(&wire.Command{Kind: wire.CLease}); err == nil {
		t.Fatal("Send after Close succeeded")
	}
	if s.badApply.Load() {
		t.Fatal("Apply concurrent with itself or after Close")
	}
}

func TestRoundTripUnix(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen("unix:" + path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("socket mode %v, want 0600", perm)
	}
	srv, _ := serve(t, lis, f, ServerOptions{})
	exercise(t, f, dial(t, path, "")) // a bare path is a unix socket
	st := srv.Stats()
	if st.Sessions != 1 || st.Batches != 20 || st.Commands != 5 || st.ApplyErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestRoundTripTCP(t *testing.T) {
	f := newFake()
	lis, err := Listen("tcp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{Token: "s3cret"})
	exercise(t, f, dial(t, lis.Addr().String(), "s3cret"))
}

func TestTCPNeedsToken(t *testing.T) {
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), lis, newFake(), ServerOptions{})
	if err == nil || !strings.Contains(err.Error(), "TCP needs a shared token (--token)") {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := lis.Accept(); err == nil {
		t.Fatal("listener still open after a refused Serve")
	}
}

func TestWrongToken(t *testing.T) {
	f := newFake()
	lis, err := Listen("tcp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, lis, f, ServerOptions{Token: "right"})
	for _, tok := range []string{"", "wrong", "righ", "right2"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := Dial(ctx, "tcp:"+lis.Addr().String(), tok)
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("token %q accepted", tok)
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("token %q: %v (code %v), want Unauthenticated", tok, err, status.Code(err))
		}
	}
	if n := f.nOpen.Load(); n != 0 {
		t.Fatalf("%d sessions opened for unauthenticated clients", n)
	}
	if n := srv.Stats().Unauthenticated; n != 4 {
		t.Fatalf("Unauthenticated %d, want 4", n)
	}
	dial(t, lis.Addr().String(), "right")
}

// A unix socket needs no token, but one is checked when set.
func TestUnixWithToken(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{Token: "tok"})
	if _, err := Dial(context.Background(), path, ""); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no token: %v", err)
	}
	dial(t, path, "tok")
}

func TestVersionRefused(t *testing.T) {
	f := newFake()
	f.hello = &wire.Hello{Version: wire.Version + 1, Name: "future"}
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{})
	_, err = Dial(context.Background(), path, "")
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("speaks protocol version %d; this monitor speaks version %d", wire.Version+1, wire.Version)) {
		t.Fatalf("Dial: %v", err)
	}
	var ve *wire.VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("not a VersionError: %v", err)
	}
	s := waitOpen(t, f)
	waitClosed(t, s) // the refused session is closed on the resident
}

// ---- limits ----

// A command larger than the server's MaxFrame ends the stream with
// ResourceExhausted; the session closes.
func TestOversizedCommand(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{MaxFrame: 1024})
	c := dial(t, path, "")
	s := waitOpen(t, f)
	if err := c.Send(&wire.Command{Kind: wire.CEnable, Entity: strings.Repeat("x", 4096)}); err != nil {
		t.Fatalf("Send: %v", err) // refused by the resident, not here
	}
	_, err = c.Recv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Recv: %v, want ResourceExhausted", err)
	}
	waitClosed(t, s)
	// And the client refuses to encode a command over wire.MaxFrame.
	if err := c.Send(&wire.Command{Kind: wire.CEnable, Entity: strings.Repeat("x", wire.MaxFrame)}); !errors.Is(err, wire.ErrFrameTooLarge) {
		t.Fatalf("Send of an oversized command: %v", err)
	}
}

// A batch larger than MaxFrame is split and arrives whole; a single packet
// larger than MaxFrame ends the stream with ResourceExhausted.
func TestOversizedBatch(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, lis, f, ServerOptions{MaxFrame: 4096})
	c := dial(t, path, "")
	s := waitOpen(t, f)
	b := testBatch(rand.New(rand.NewPCG(3, 4)), 1000)
	s.batches <- b
	var got wire.Batch
	for len(got.Packets) < len(b.Packets) {
		part, err := c.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got.Defs = append(got.Defs, part.Defs...)
		got.Packets = append(got.Packets, part.Packets...)
		got.Counts = append(got.Counts, part.Counts...)
		got.Watermark = part.Watermark
	}
	if !reflect.DeepEqual(&got, b) {
		t.Fatal("split batch does not reassemble")
	}
	if st := srv.Stats(); st.Frames < 5 || st.Batches != 1 || st.Packets != 1000 {
		t.Fatalf("stats %+v", st)
	}
	s.batches <- &wire.Batch{Packets: []wire.Packet{{Kind: wire.PEvent, Vals: []wire.Value{{Kind: wire.VString, S: strings.Repeat("y", 5000)}}}}}
	if _, err := c.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("Recv: %v, want ResourceExhausted", err)
	}
	waitClosed(t, s)
}

func TestMaxFrameOption(t *testing.T) {
	if _, err := NewServer(newFake(), ServerOptions{MaxFrame: wire.MaxFrame + 1}); err == nil {
		t.Fatal("MaxFrame over wire.MaxFrame accepted")
	}
}

// ---- ends ----

func TestServerStopEndsRecv(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, lis, f, ServerOptions{}) }()
	c := dial(t, path, "")
	s := waitOpen(t, f)
	recvd := make(chan error, 1)
	go func() {
		_, err := c.Recv()
		recvd <- err
	}()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if n := s.nClose.Load(); n != 1 { // Serve waits for sessions to close
		t.Fatalf("session closed %d times by the time Serve returned", n)
	}
	select {
	case err := <-recvd:
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "resident shutting down") {
			t.Fatalf("Recv after server stop: %v, want Unavailable: resident shutting down", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Recv still blocked after server stop")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file left behind: %v", err)
	}
}

// The resident ending the session gives io.EOF; ending it with an error
// gives codes.Aborted with that error's text.
func TestSessionEnds(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{})

	c := dial(t, path, "")
	s := waitOpen(t, f)
	s.batches <- &wire.Batch{Watermark: 7}
	close(s.batches)
	if b, err := c.Recv(); err != nil || b.Watermark != 7 {
		t.Fatalf("Recv: %+v, %v", b, err)
	}
	if _, err := c.Recv(); err != io.EOF {
		t.Fatalf("Recv after the session ended: %v, want io.EOF", err)
	}
	waitClosed(t, s)

	c = dial(t, path, "")
	s = waitOpen(t, f)
	s.recvErr.Store(errors.New("lease expired"))
	close(s.batches)
	_, err = c.Recv()
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "lease expired") {
		t.Fatalf("Recv: %v", err)
	}
	if err := c.Send(&wire.Command{Kind: wire.CLease}); err == nil {
		// gRPC may accept a send on a finished stream; it must not panic.
		t.Log("Send after the end accepted")
	}
}

// A resident whose session ends on CBye (Recv then fails) still gives the
// client a clean end; Adapt wraps a concrete Open.
func TestByeEndsCleanly(t *testing.T) {
	for i := 0; i < 5; i++ {
		f := newFake()
		f.endOnBye = true
		path := sockPath(t)
		lis, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		_, stop := serve(t, lis, Adapt(f.Hello, f.open), ServerOptions{})
		c := dial(t, path, "").(*conn)
		s := waitOpen(t, f)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, s)
		if c.ahead.Err() != io.EOF {
			t.Fatalf("stream ended with %v, want a clean end", c.ahead.Err())
		}
		stop()
	}
}

// An Apply error is counted and logged; the session goes on.
func TestApplyErrorContinues(t *testing.T) {
	f := newFake()
	f.applyErr = map[wire.CommandKind]error{wire.CDisable: errors.New("no such sensor")}
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	var logged atomic.Value
	srv, _ := serve(t, lis, f, ServerOptions{Logf: func(format string, args ...any) { logged.Store(fmt.Sprintf(format, args...)) }})
	c := dial(t, path, "")
	s := waitOpen(t, f)
	for _, k := range []wire.CommandKind{wire.CDisable, wire.CLease} {
		if err := c.Send(&wire.Command{Kind: k, Sensor: 9}); err != nil {
			t.Fatal(err)
		}
	}
	nextCmd(t, s)
	nextCmd(t, s)
	s.batches <- &wire.Batch{Watermark: 1}
	if _, err := c.Recv(); err != nil {
		t.Fatalf("stream ended after an Apply error: %v", err)
	}
	if st := srv.Stats(); st.ApplyErrors != 1 || st.Commands != 2 {
		t.Fatalf("stats %+v", st)
	}
	if msg, _ := logged.Load().(string); !strings.Contains(msg, "disable command refused: no such sensor") {
		t.Fatalf("logged %q", msg)
	}
}

// A frame that is not a Command ends the stream with InvalidArgument.
func TestBadCommandFrame(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := serve(t, lis, f, ServerOptions{})
	cc, err := grpc.NewClient("unix:"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stream, err := cc.NewStream(context.Background(), &serviceDesc.Streams[0], SessionMethod, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	var hello frame
	if err := stream.RecvMsg(&hello); err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&frame{[]byte("Cgarbage")}); err != nil {
		t.Fatal(err)
	}
	err = stream.RecvMsg(&frame{})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "bad command frame") {
		t.Fatalf("RecvMsg: %v", err)
	}
	waitClosed(t, waitOpen(t, f))
	if srv.Stats().BadCommands != 1 {
		t.Fatalf("stats %+v", srv.Stats())
	}
}

// Closing the client's connection without Close (a crash) closes the
// session too.
func TestClientVanishes(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{})
	c := dial(t, path, "").(*conn)
	s := waitOpen(t, f)
	c.cancel()
	c.cc.Close()
	waitClosed(t, s)
}

func TestDialErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Dial(ctx, sockPath(t), ""); err == nil {
		t.Fatal("Dial to a missing socket succeeded")
	}
	if _, err := Dial(ctx, "tcp:nonsense", ""); err == nil {
		t.Fatal("Dial to a malformed address succeeded")
	}
	// A server that accepts but never answers: the dial context bounds it.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if _, err := Dial(short, lis.Addr().String(), "t"); err == nil {
		t.Fatal("Dial to a silent server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Dial took %v despite a 300ms context", d)
	}
}

// ---- addresses ----

func TestParseAddr(t *testing.T) {
	tests := []struct{ in, network, address string }{
		{"unix:/run/tqmon.sock", "unix", "/run/tqmon.sock"},
		{"unix:///run/tqmon.sock", "unix", "/run/tqmon.sock"},
		{"unix:rel.sock", "unix", "rel.sock"},
		{"/tmp/a:b.sock", "unix", "/tmp/a:b.sock"},
		{"./r.sock", "unix", "./r.sock"},
		{"r.sock", "unix", "r.sock"},
		{"tcp:host:7000", "tcp", "host:7000"},
		{"tcp::7000", "tcp", ":7000"},
		{"localhost:7000", "tcp", "localhost:7000"},
		{"[::1]:7000", "tcp", "[::1]:7000"},
	}
	for _, tt := range tests {
		n, a, err := ParseAddr(tt.in)
		if err != nil || n != tt.network || a != tt.address {
			t.Errorf("ParseAddr(%q) = %q, %q, %v; want %q, %q", tt.in, n, a, err, tt.network, tt.address)
		}
	}
	for _, bad := range []string{"", "unix:", "tcp:nohostport", "host:port:extra"} {
		if _, _, err := ParseAddr(bad); err == nil {
			t.Errorf("ParseAddr(%q) succeeded", bad)
		}
	}
}

func TestListenUnixStale(t *testing.T) {
	path := sockPath(t)
	// A stale socket (its listener gone without unlinking) is replaced.
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal("stale socket not left behind")
	}
	lis, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	// A live one is not.
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "already listening") {
		t.Fatalf("Listen over a live socket: %v", err)
	}
	lis.Close()
	// Nor is a regular file.
	file := filepath.Join(filepath.Dir(path), "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("file replaced")
	}
}

// ---- concurrency ----

// Several goroutines Send while another Recvs; several sessions at once.
func TestConcurrentSessions(t *testing.T) {
	f := newFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{})
	var wg sync.WaitGroup
	for k := 0; k < 4; k++ {
		c := dial(t, path, "")
		s := waitOpen(t, f)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sw sync.WaitGroup
			for g := 0; g < 4; g++ {
				sw.Add(1)
				go func() {
					defer sw.Done()
					for i := 0; i < 50; i++ {
						if err := c.Send(&wire.Command{Kind: wire.CLease, Period: int64(i + 1)}); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			go func() {
				for i := 0; i < 50; i++ {
					s.batches <- &wire.Batch{Watermark: int64(i)}
				}
			}()
			for i := 0; i < 50; i++ {
				b, err := c.Recv()
				if err != nil || b.Watermark != int64(i) {
					t.Errorf("Recv %d: %+v, %v", i, b, err)
					return
				}
			}
			sw.Wait()
			for i := 0; i < 200; i++ {
				nextCmd(t, s)
			}
			c.Close()
			waitClosed(t, s)
			if s.badApply.Load() {
				t.Error("Apply concurrent with itself or after Close")
			}
		}()
	}
	wg.Wait()
}

// ---- benchmark ----

// BenchmarkSessionUnix streams 1000-packet batches from a resident to a
// remote over a unix socket: encode, gRPC, decode.
func BenchmarkSessionUnix(b *testing.B) {
	f := newFake()
	dir, _ := os.MkdirTemp("", "tqmon")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "r.sock")
	lis, err := Listen(path)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(f, ServerOptions{Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	c, err := Dial(context.Background(), path, "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s := <-f.opened
	batch := testBatch(rand.New(rand.NewPCG(5, 6)), 1000)
	go func() {
		for {
			select {
			case s.batches <- batch:
			case <-s.closed:
				return
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Recv(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch.Packets))*float64(b.N)/b.Elapsed().Seconds(), "packets/s")
}
