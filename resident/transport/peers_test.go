package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/wire"
)

// dialFrom dials addr from the local IP address ip (a TCP peer of its
// own: Linux accepts any 127.0.0.0/8 source on the loopback).
func dialFrom(ctx context.Context, addr, token, ip string) (wire.Conn, error) {
	return dialWith(ctx, addr, token, net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}, Security{})
}

// roomyFake is a fake resident whose Open never blocks on the test.
func roomyFake() *fakeSessions {
	f := newFake()
	f.opened = make(chan *fakeSession, 4*MaxSessions)
	return f
}

func mustDial(t *testing.T, dial func(context.Context) (wire.Conn, error)) wire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// One peer — a uid on a unix socket, an IP address over TCP — has at most
// MaxSessionsPerPeer sessions over all its connections: one more is
// refused before the handshake (the resident never opens it), naming
// the peer and the limit; another peer is not affected, and a session
// that ends gives its place back.
func TestSessionsPerPeer(t *testing.T) {
	t.Run("unix", func(t *testing.T) {
		f := roomyFake()
		path := sockPath(t)
		lis, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		srv, _ := serve(t, lis, f, ServerOptions{})
		dial := func(ctx context.Context) (wire.Conn, error) { return Dial(ctx, path, "") }
		checkPeerLimit(t, f, srv, dial, dial, fmt.Sprintf("peer uid %d ", os.Getuid()))
	})
	t.Run("tcp", func(t *testing.T) {
		f := roomyFake()
		lis, err := Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv, _ := serve(t, lis, f, ServerOptions{Token: "tok"})
		addr := lis.Addr().String()
		checkPeerLimit(t, f, srv,
			func(ctx context.Context) (wire.Conn, error) { return dialFrom(ctx, addr, "tok", "127.0.0.2") },
			func(ctx context.Context) (wire.Conn, error) { return dialFrom(ctx, addr, "tok", "127.0.0.3") },
			"peer 127.0.0.2 ")
	})
}

// checkPeerLimit opens MaxSessionsPerPeer sessions with dial, then one
// more; other dials as another peer (or the same, for unix).
func checkPeerLimit(t *testing.T, f *fakeSessions, srv *Server, dial, other func(context.Context) (wire.Conn, error), name string) {
	var conns []wire.Conn
	for range MaxSessionsPerPeer {
		conns = append(conns, mustDial(t, dial))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dial(ctx)
	if err == nil {
		c.Close()
		t.Fatalf("session %d from one peer admitted", MaxSessionsPerPeer+1)
	}
	want := fmt.Sprintf("%salready has %d sessions open, the most one peer may have (MaxSessionsPerPeer)", name, MaxSessionsPerPeer)
	if !strings.Contains(err.Error(), "code = "+codes.ResourceExhausted.String()) || !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal: %v\nwant ResourceExhausted and %q", err, want)
	}
	if n := f.nOpen.Load(); n != MaxSessionsPerPeer {
		t.Fatalf("resident opened %d sessions, want %d: the refused one was opened", n, MaxSessionsPerPeer)
	}
	if st := srv.Stats(); st.PeerRefused != 1 {
		t.Fatalf("stats %+v: want PeerRefused 1", st)
	}
	if name != fmt.Sprintf("peer uid %d ", os.Getuid()) { // another address is another peer
		mustDial(t, other).Close()
	}
	// A session that ends gives its place back.
	conns[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := dial(ctx)
		cancel()
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a place freed by Close was not given back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tickSpec is a minimal Go resident: processes and one traced event.
func tickSpec() *resident.Spec {
	proc := resident.AttrSpec{Name: "Process", Kind: wire.VEntity, Type: 0}
	return &resident.Spec{
		SDL:   "-- transport test",
		Types: []string{"Process"},
		Sensors: []resident.SensorSpec{
			{Name: "Process", Class: resident.ClassEntity, Attrs: []resident.AttrSpec{proc}, Flag: -1},
			{Name: "Tick", Class: resident.ClassEvent, Strategy: resident.Traced, Attrs: []resident.AttrSpec{proc}, Flag: 0},
		},
		EntityRel: []int{0},
		Period:    1e9,
	}
}

// idleMonitor holds a session open from peer ip: it renews its lease and
// reads whatever comes, and reports how its session ended.
type idleMonitor struct {
	c    wire.Conn
	done chan struct{}
	err  error // after done: what Recv ended with
}

func openIdle(t *testing.T, addr, token, ip string) *idleMonitor {
	t.Helper()
	c := mustDial(t, func(ctx context.Context) (wire.Conn, error) { return dialFrom(ctx, addr, token, ip) })
	m := &idleMonitor{c: c, done: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() { // the lease
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if c.Send(&wire.Command{Kind: wire.CLease, Period: int64(5 * time.Second)}) != nil {
					return
				}
			case <-stop:
				return
			}
		}
	}()
	go func() {
		defer close(m.done)
		for {
			if _, err := c.Recv(); err != nil {
				m.err = err
				return
			}
		}
	}()
	return m
}

// 64 sessions that only renew their leases (from four peers, as many as
// each may have) do not lock out a real monitor: once idle (IdleAfter),
// the one idle the longest gives way — and is told so with an error,
// never a quiet end — while sessions that hold something enabled are
// never evicted. The resident is the real Go resident, whose session
// table holds MaxSessions: the newcomer gets the slot the eviction freed.
func TestIdleSessionsDoNotLockOut(t *testing.T) {
	r := resident.New(tickSpec(), resident.Options{})
	t.Cleanup(r.Close)
	p := r.Create(0, "p1", nil)
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const token = "tok"
	srv, _ := serve(t, lis, Adapt(r.Hello, r.Open), ServerOptions{Token: token})
	addr := lis.Addr().String()

	var idle []*idleMonitor
	for i := range MaxSessions / MaxSessionsPerPeer {
		for range MaxSessionsPerPeer {
			idle = append(idle, openIdle(t, addr, token, fmt.Sprintf("127.0.0.%d", 2+i)))
		}
	}
	// The first peer's sessions hold an enable: they are watching, not
	// idle, though they too send nothing more.
	for _, m := range idle[:MaxSessionsPerPeer] {
		if err := m.c.Send(&wire.Command{Kind: wire.CEnable, Sensor: 1, Type: 0, Entity: "p9"}); err != nil {
			t.Fatal(err)
		}
	}
	waitHolding(t, srv.peers, MaxSessionsPerPeer)
	time.Sleep(IdleAfter + 200*time.Millisecond)

	mon := mustDial(t, func(ctx context.Context) (wire.Conn, error) { return dialFrom(ctx, addr, token, "127.0.0.9") })
	for _, cmd := range []wire.Command{{Kind: wire.CEnableAll, Sensor: 1}, {Kind: wire.CLease, Period: int64(5 * time.Second)}} {
		if err := mon.Send(&cmd); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan error, 1)
	go func() {
		for {
			b, err := mon.Recv()
			if err != nil {
				got <- err
				return
			}
			for _, pk := range b.Packets {
				if pk.Sensor == 1 {
					got <- nil
					return
				}
			}
		}
	}()
	stopTicks := make(chan struct{})
	go func() {
		for {
			select {
			case <-stopTicks:
				return
			default:
			}
			r.Sensor(1).Event([]resident.Value{{E: p}})
			time.Sleep(time.Millisecond)
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the real monitor was not served: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the real monitor got no Tick in 20 s")
	}
	close(stopTicks)

	// Exactly one idle session was evicted: the one idle the longest
	// among those holding nothing — the first of the second peer.
	select {
	case <-idle[MaxSessionsPerPeer].done:
	case <-time.After(10 * time.Second):
	}
	var evicted []int
	for i, m := range idle {
		select {
		case <-m.done:
			evicted = append(evicted, i)
		default:
		}
	}
	if len(evicted) != 1 || evicted[0] != MaxSessionsPerPeer {
		t.Fatalf("sessions ended: %v; want only session %d", evicted, MaxSessionsPerPeer)
	}
	err = idle[MaxSessionsPerPeer].err
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "session evicted: idle for") ||
		!strings.Contains(err.Error(), "peer 127.0.0.9 asked for one") {
		t.Fatalf("the evicted monitor saw %v; want an eviction error naming the newcomer", err)
	}
	if st := srv.Stats(); st.Evicted != 1 || st.Active != MaxSessions {
		t.Fatalf("stats %+v: want 1 evicted, %d active", st, MaxSessions)
	}
}

// waitHolding waits until n of the table's sessions hold something.
func waitHolding(t *testing.T, tb *peerTable, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tb.mu.Lock()
		k := 0
		for a := range tb.live {
			if a.holds.Load() > 0 {
				k++
			}
		}
		tb.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions hold something, want %d", k, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The choice of whom to evict, on a table of four: only a session that
// is open, holds nothing and has been idle IdleAfter goes, the one idle
// the longest; with none such the newcomer is refused, naming the bound;
// disabling what it held makes a session idle again.
func TestEvictionChoosesIdle(t *testing.T) {
	const idleAfter = 500 * time.Millisecond
	tb := newPeerTable(4, idleAfter)
	var clock int64
	tb.now = func() int64 { return clock }
	tick := func(d time.Duration) { clock += int64(d) }
	var evicted []string
	admit := func(peer string) (*admitted, error) {
		a, err := tb.admit(peer)
		if err == nil {
			tb.opened(a, func(error) { evicted = append(evicted, peer); tb.leave(a) })
		}
		return a, err
	}
	holder, _ := admit("holder") // oldest, but holds an enable
	tb.command(holder, wire.CEnableAll, nil)
	tick(time.Millisecond)
	failed, _ := admit("failed") // its enable was refused: holds nothing
	tb.command(failed, wire.CEnable, errors.New("refused"))
	tick(time.Millisecond)
	admit("idle1")
	tick(time.Millisecond)
	admit("idle2")
	tick(idleAfter - 3*time.Millisecond) // failed, the first without holds, is not yet idle
	if _, err := tb.admit("early"); err == nil || !strings.Contains(err.Error(), "all 4 sessions are taken (MaxSessions) and none is idle") {
		t.Fatalf("newcomer before anyone is idle: %v", err)
	}
	tick(idleAfter)
	for _, peer := range []string{"n1", "n2", "n3"} {
		if _, err := admit(peer); err != nil {
			t.Fatalf("%s: %v", peer, err)
		}
		tick(time.Millisecond)
	}
	if want := "failed idle1 idle2"; strings.Join(evicted, " ") != want {
		t.Fatalf("evicted %v, want %s (never the holder)", evicted, want)
	}
	tick(idleAfter)
	tb.command(holder, wire.CDisableAll, nil) // holds nothing now, active just now
	if _, err := admit("n4"); err != nil || evicted[3] != "n1" {
		t.Fatalf("n4: %v, evicted %v; want n1 (idle longer than the holder)", err, evicted)
	}
}

// A connection carries at most MaxSessionsPerConn sessions at once: the
// next stream on it is not served until one ends.
func TestSessionsPerConnection(t *testing.T) {
	f := roomyFake()
	path := sockPath(t)
	lis, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, lis, f, ServerOptions{})
	cc, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}),
		grpc.WithAuthority("localhost"),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	// open starts a stream on cc; its Hello (or error) arrives on the
	// channel.
	open := func() (context.CancelFunc, <-chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		hello := make(chan error, 1)
		go func() {
			s, err := cc.NewStream(ctx, &serviceDesc.Streams[0], SessionMethod)
			if err == nil {
				var fr frame
				err = s.RecvMsg(&fr)
			}
			hello <- err
		}()
		return cancel, hello
	}
	wait := func(hello <-chan error, d time.Duration) error {
		select {
		case err := <-hello:
			return err
		case <-time.After(d):
			return errors.New("no hello")
		}
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range MaxSessionsPerConn {
		c, hello := open()
		cancels = append(cancels, c)
		if err := wait(hello, 10*time.Second); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	c, hello := open()
	cancels = append(cancels, c)
	if err := wait(hello, 500*time.Millisecond); err == nil {
		t.Fatalf("session %d on one connection served", MaxSessionsPerConn+1)
	}
	cancels[0]() // one ends: the waiting stream is served
	if err := wait(hello, 10*time.Second); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}

// A connection that does not authenticate within the handshake timeout
// is closed (counted as refused); an authenticated one stays.
func TestHandshakeTimeout(t *testing.T) {
	f := roomyFake()
	lis, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	srv, _ := serve(t, lis, f, ServerOptions{Token: "tok", HandshakeTimeout: timeout})
	addr := lis.Addr().String()
	authed := mustDial(t, func(ctx context.Context) (wire.Conn, error) { return Dial(ctx, addr, "tok") })
	sess := waitOpen(t, f)
	start := time.Now()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	var buf [256]byte
	for {
		if _, err := raw.Read(buf[:]); err != nil {
			if isTimeout(err) {
				t.Fatal("a silent connection was not closed in 10 s")
			}
			break
		}
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("closed after %v, before the timeout %v", d, timeout)
	}
	// Refused counts it when the guard's timer closed it; gRPC's own
	// connection timeout (the same) may have come first.
	if st := srv.Stats(); st.Refused > 1 {
		t.Fatalf("stats %+v: want Refused ≤ 1", st)
	}
	sess.batches <- &wire.Batch{Watermark: 1}
	if _, err := authed.Recv(); err != nil {
		t.Fatalf("authenticated session after the timeout: %v", err)
	}
}
