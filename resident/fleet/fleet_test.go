package fleet

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// natsServer starts an embedded server on loopback and returns a
// connection maker.
func natsServer(t *testing.T) func() *nats.Conn {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return func() *nats.Conn {
		nc, err := Connect(s.URL(), "", "test")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
}

// fake is a resident whose sessions record commands and send the
// batches queued on out.
type fake struct {
	mu   sync.Mutex
	cmds []wire.Command
	out  chan *wire.Batch
	shut chan struct{}
}

func newFake() *fake { return &fake{out: make(chan *wire.Batch, 256), shut: make(chan struct{})} }

func (f *fake) Hello() *wire.Hello {
	return &wire.Hello{Version: wire.Version, Name: "fake", Sensors: []string{"S"}, Types: []string{"T"}}
}
func (f *fake) Open() transport.Session { return (*fakeSession)(f) }

type fakeSession fake

func (s *fakeSession) Apply(c *wire.Command) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds = append(s.cmds, *c)
	return nil
}
func (s *fakeSession) Recv(ctx context.Context) (*wire.Batch, error) {
	select {
	case b := <-s.out:
		return b, nil
	default:
	}
	select {
	case b := <-s.out:
		return b, nil
	case <-s.shut:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (s *fakeSession) Close() {}

func (f *fake) commands() []wire.CommandKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ks []wire.CommandKind
	for _, c := range f.cmds {
		ks = append(ks, c.Kind)
	}
	return ks
}

// Batches and commands cross intact, in order, past the window; the
// resident's end is the monitor's io.EOF.
func TestRoundTrip(t *testing.T) {
	connect := natsServer(t)
	f := newFake()
	srv, err := Join(connect(), "web-1", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := Dial(context.Background(), connect(), "web-1", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := c.Hello(); h.Name != "web-1" || !slices.Equal(h.Sensors, []string{"S"}) { // named by its host
		t.Fatalf("hello %+v", c.Hello())
	}
	if err := c.Send(&wire.Command{Kind: wire.CEnable, Sensor: 0, Entity: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(&wire.Command{Kind: wire.CLease, Period: int64(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := f.commands(); !slices.Equal(got, []wire.CommandKind{wire.CEnable, wire.CLease}) {
		t.Fatalf("commands %v", got)
	}
	const n = 3 * Window // more than a window: acknowledgements move it
	go func() {
		for i := 1; i <= n; i++ {
			f.out <- &wire.Batch{Watermark: int64(i), Packets: []wire.Packet{{TS: int64(i), Kind: wire.PEvent, Vals: []wire.Value{{Kind: wire.VString, S: strconv.Itoa(i)}}}}}
		}
		close(f.shut)
	}()
	for i := 1; i <= n; i++ {
		b, err := c.Recv()
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if b.Watermark != int64(i) || len(b.Packets) != 1 || b.Packets[0].Vals[0].S != strconv.Itoa(i) {
			t.Fatalf("batch %d: %+v", i, b)
		}
	}
	if _, err := c.Recv(); err != io.EOF {
		t.Fatalf("after the last batch: %v, want io.EOF", err)
	}
}

// The window: a monitor that takes nothing holds at most Window frames
// unacknowledged; the resident's pump waits (its session's mailbox would
// drop), never the subject.
func TestWindowBound(t *testing.T) {
	connect := natsServer(t)
	f := newFake()
	srv, err := Join(connect(), "h", f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := Dial(context.Background(), connect(), "h", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 200; i++ {
		select {
		case f.out <- &wire.Batch{Watermark: int64(i + 1)}:
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(300 * time.Millisecond)
	srv.mu.Lock()
	var s *session
	for _, x := range srv.live {
		s = x
	}
	srv.mu.Unlock()
	s.sendMu.Lock()
	sent, acked := s.seq, s.acked.Load()
	s.sendMu.Unlock()
	if sent-acked > Window {
		t.Fatalf("%d frames unacknowledged, bound %d", sent-acked, Window)
	}
	// Taken: queue (recvAhead) + the callback's one + the window.
	if sent > Window+recvAhead+1 || len(f.out) < 200-(Window+recvAhead+1)-1 {
		t.Fatalf("%d frames sent with none received, %d left in the session", sent, len(f.out))
	}
}

// A monitor that dies (its connection cut, no CBye) stops renewing its
// lease; the resident clears what its session enabled.
func TestDeadMonitorClears(t *testing.T) {
	connect := natsServer(t)
	res := resident.New(ossensors.Spec(), resident.Options{Name: "dead"})
	defer res.Close()
	sens := ossensors.New(res)
	sens.NewProcess("P1", ossensors.ProcessState(0))
	srv, err := Join(connect(), "h", transport.Adapt(res.Hello, res.Open), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	mon := connect()
	c, err := Dial(context.Background(), mon, "h", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hello()
	sid, tid := slices.Index(h.Sensors, "SendMessage"), slices.Index(h.Types, "Process")
	for _, cmd := range []wire.Command{{Kind: wire.CLease, Period: int64(300 * time.Millisecond)},
		{Kind: wire.CEnable, Sensor: uint16(sid), Type: uint16(tid), Entity: "P1"}} {
		if err := c.Send(&cmd); err != nil {
			t.Fatal(err)
		}
	}
	if got := res.Flags()["SendMessage"]; !slices.Equal(got, []string{"P1"}) {
		t.Fatalf("enabled: %v", res.Flags())
	}
	mon.Close() // the monitor dies
	deadline := time.Now().Add(10 * time.Second)
	for len(res.Flags()["SendMessage"]) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still enabled 10 s after the monitor died: %v", res.Flags())
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Drain(5 * time.Second)
	if n := srv.Active(); n != 0 {
		t.Fatalf("%d sessions still open", n)
	}
}

// fakeOpen answers host's open requests with a Hello, and gives the
// test the session's frame subject.
func fakeOpen(t *testing.T, nc *nats.Conn, host string) <-chan string {
	t.Helper()
	ids := make(chan string, 1)
	hello, _ := (&wire.Hello{Version: wire.Version, Name: "silent"}).MarshalBinary()
	if _, err := nc.Subscribe(subj(host, "open"), func(m *nats.Msg) {
		m.Respond(hello)
		ids <- subj(host, "s", string(m.Data), "b")
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return ids
}

// A resident that says nothing — no frame, no heartbeat — for Silence is
// lost: Recv fails, not with io.EOF; one that beats is not.
func TestSilentResidentIsLost(t *testing.T) {
	connect := natsServer(t)
	fakeOpen(t, connect(), "quiet")
	const silence = 300 * time.Millisecond
	c, err := Dial(context.Background(), connect(), "quiet", DialOptions{Silence: silence})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, err = c.Recv()
	var lost *LostError
	if !errors.As(err, &lost) || !strings.Contains(err.Error(), "nothing heard") {
		t.Fatalf("Recv: %v, want a lost session", err)
	}
	if took := time.Since(start); took < silence {
		t.Fatalf("lost after %v, before the silence bound %v", took, silence)
	}

	// Heartbeats keep a session with nothing to send alive (a wider
	// bound here: a loaded machine may delay a beat a few hundred ms).
	const wide = time.Second
	f := newFake()
	srv, err := Join(connect(), "beating", f, Options{Beat: wide / 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c2, err := Dial(context.Background(), connect(), "beating", DialOptions{Silence: wide})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go func() {
		time.Sleep(3 * wide)
		f.out <- &wire.Batch{Watermark: 7}
	}()
	if b, err := c2.Recv(); err != nil || b.Watermark != 7 {
		t.Fatalf("a beating resident: %v, %v", b, err)
	}
}

// A missing frame number (a frame NATS dropped) loses the session.
func TestMissingFrameIsLost(t *testing.T) {
	connect := natsServer(t)
	res := connect()
	ids := fakeOpen(t, res, "gappy")
	c, err := Dial(context.Background(), connect(), "gappy", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frames := <-ids
	for _, n := range []int{1, 3} {
		m := nats.NewMsg(frames)
		m.Data, _ = (&wire.Batch{Watermark: int64(n)}).MarshalBinary()
		m.Header.Set(hSeq, strconv.Itoa(n))
		if err := res.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := c.Recv(); err != nil || b.Watermark != 1 {
		t.Fatalf("frame 1: %v %v", b, err)
	}
	_, err = c.Recv()
	var lost *LostError
	if !errors.As(err, &lost) || !strings.Contains(err.Error(), "frames missing") {
		t.Fatalf("after a gap: %v", err)
	}
}

// A frame NATS lost is asked for again and sent again: the monitor takes
// frames in order, once each, duplicates dropped.
func TestMissingFrameSentAgain(t *testing.T) {
	connect := natsServer(t)
	res := connect()
	ids := fakeOpen(t, res, "resends")
	c, err := Dial(context.Background(), connect(), "resends", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	frames := <-ids
	pub := func(n int) {
		m := nats.NewMsg(frames)
		m.Data, _ = (&wire.Batch{Watermark: int64(n)}).MarshalBinary()
		m.Header.Set(hSeq, strconv.Itoa(n))
		if err := res.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	asked := make(chan string, 4)
	if _, err := res.Subscribe(strings.TrimSuffix(frames, ".b")+".r", func(m *nats.Msg) { asked <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	res.Flush()
	pub(1)
	pub(3) // 2 lost on the way
	if after := <-asked; after != "1" {
		t.Fatalf("asked to send again after %s, want 1", after)
	}
	pub(2)
	pub(3)
	pub(3) // a duplicate
	pub(4)
	for want := int64(1); want <= 4; want++ {
		b, err := c.Recv()
		if err != nil || b.Watermark != want {
			t.Fatalf("frame %d: %v %v", want, b, err)
		}
	}
}

// Dialling what is not there says what is missing.
func TestDialErrors(t *testing.T) {
	connect := natsServer(t)
	nc := connect()
	ctx := context.Background()
	for _, tc := range []struct{ host, want string }{
		{"nobody", "no resident serves this host"},
		{"a.b", "want 1 to 64 letters"},
		{"", "want 1 to 64 letters"},
		{"web-*", "want 1 to 64 letters"},
	} {
		if _, err := Dial(ctx, nc, tc.host, DialOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Dial %q: %v, want %q", tc.host, err, tc.want)
		}
	}
	if _, err := Connect("nats://127.0.0.1:1", "", "t"); err == nil || !strings.Contains(err.Error(), "connecting to nats://127.0.0.1:1") {
		t.Errorf("Connect to a closed port: %v", err)
	}
	if _, err := Hosts(ctx, nc, "web-*"); err == nil || !strings.Contains(err.Error(), "no host is served") {
		t.Errorf("Hosts with none: %v", err)
	}
	srv, err := Join(connect(), "db-1", newFake(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if _, err := Hosts(ctx, nc, "web-*"); err == nil || !strings.Contains(err.Error(), "matches \"web-*\" (hosts: [db-1])") {
		t.Errorf("Hosts matching none: %v", err)
	}
	if _, err := Hosts(ctx, nc, "[web"); err == nil || !strings.Contains(err.Error(), "syntax") {
		t.Errorf("a bad glob: %v", err)
	}
}

// Host names are unique on a server; discovery finds them by glob; a
// stopped resident's name is free again.
func TestHostTaken(t *testing.T) {
	connect := natsServer(t)
	var srvs []*Server
	for _, h := range []string{"web-1", "web-2", "db-1"} {
		srv, err := Join(connect(), h, newFake(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		srvs = append(srvs, srv)
	}
	if _, err := Join(connect(), "web-2", newFake(), Options{}); !errors.Is(err, ErrHostTaken) {
		t.Fatalf("a second web-2: %v", err)
	}
	got, err := Hosts(context.Background(), connect(), "web-*")
	if err != nil || !slices.Equal(got, []string{"web-1", "web-2"}) {
		t.Fatalf("web-*: %v %v", got, err)
	}
	srvs[1].Stop()
	srv, err := Join(connect(), "web-2", newFake(), Options{})
	if err != nil {
		t.Fatalf("web-2 after it stopped: %v", err)
	}
	srv.Stop()
	srvs[0].Stop()
	srvs[2].Stop()
}

// TestClockSkew: a host whose clock runs 300 ms ahead of the monitor's is
// given a skew bound that covers it (measured from round trips to
// tqmon.H.clock: the bound is never below the true offset), and a stated
// bound replaces the measurement.
func TestClockSkew(t *testing.T) {
	conn := natsServer(t)
	const ahead = 300 * time.Millisecond
	srv, err := Join(conn(), "skewed", newFake(), Options{Clock: func() int64 { return time.Now().Add(ahead).UnixNano() }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := Dial(context.Background(), conn(), "skewed", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The bound covers the offset; it exceeds it by half the shortest
	// round trip (under a second even on a loaded machine).
	if sk := c.(wire.Skewed).Skew(); sk < ahead || sk > ahead+time.Second {
		t.Errorf("skew bound %s for a clock %s ahead", sk, ahead)
	}
	d, err := Dial(context.Background(), conn(), "skewed", DialOptions{Skew: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if sk := d.(wire.Skewed).Skew(); sk != 2*time.Second {
		t.Errorf("stated bound 2s, Skew %s", sk)
	}
}

// TestDialHostsLate: a host the glob matches that was not found when
// DialHosts dialed (it joined after; in a cluster, its subscriptions had
// not reached the monitor's node yet) is not watched, and is reported
// late while the sessions are open rather than left out in silence; a
// host the glob does not match is not.
func TestDialHostsLate(t *testing.T) {
	connect := natsServer(t)
	srv, err := Join(connect(), "web-1", newFake(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	u := connect().ConnectedUrl()
	conns, err := DialHosts(context.Background(), u, "", "web-*", DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 1 || conns[0].Hello().Name != "web-1" {
		t.Fatalf("dialed %d hosts, want web-1 only", len(conns))
	}
	late := conns[0].(interface{ LateHosts() []string })
	if l := late.LateHosts(); l != nil {
		t.Fatalf("late hosts before any joined: %v", l)
	}
	for _, h := range []string{"web-2", "db-1"} {
		s, err := Join(connect(), h, newFake(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Stop()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(late.LateHosts(), []string{"web-2"}) {
		if time.Now().After(deadline) {
			t.Fatalf("late hosts %v 10 s after web-2 joined, want [web-2]", late.LateHosts())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conns[0].Close()
	if l := late.LateHosts(); !slices.Equal(l, []string{"web-2"}) {
		t.Errorf("late hosts after Close: %v, want [web-2]", l)
	}
}
