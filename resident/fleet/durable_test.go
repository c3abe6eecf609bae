package fleet

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

func natsURL(t *testing.T) string {
	t.Helper()
	s, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s.URL()
}

// join serves ss as host on the server at url until the test ends.
func join(t *testing.T, url, host string, ss transport.Sessions) *Server {
	t.Helper()
	return joinWith(t, url, "", host, ss)
}

// joinWith is join presenting token, its connection secured by sec.
func joinWith(t *testing.T, url, token, host string, ss transport.Sessions, sec ...transport.Security) *Server {
	t.Helper()
	nc, err := Connect(url, token, "resident", sec...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	srv, err := Join(nc, host, ss, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

func batch(i int, pad int) *wire.Batch {
	return &wire.Batch{Watermark: int64(i), Packets: []wire.Packet{{TS: int64(i), Kind: wire.PEvent,
		Vals: []wire.Value{{Kind: wire.VString, S: strconv.Itoa(i) + strings.Repeat(" ", pad)}}}}}
}

func recvN(t *testing.T, c wire.Conn, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		b, err := c.Recv()
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if b.Watermark != int64(i) || strings.TrimSpace(b.Packets[0].Vals[0].S) != strconv.Itoa(i) {
			t.Fatalf("batch %d: got watermark %d", i, b.Watermark)
		}
	}
}

// kill stops a monitor's connections as a killed process would: its NATS
// connection goes, no CBye, nothing more.
func kill(conns []wire.Conn, r *Resume) {
	conns[0].(*conn).nc.Close()
	r.Close()
}

// TestDurableResume: a monitor killed (no CBye) and started again with
// its name resumes each host's durable session: it reads every frame
// again from the first, in order, those sent while it was away too; the
// commands it sends again, in the same order, are not applied twice,
// and a new one is.
func TestDurableResume(t *testing.T) {
	url := natsURL(t)
	durableResume(t, url, url, "", transport.Security{})
}

// durableResume is TestDurableResume's run: a host joins the server at
// hostURL, the monitor, killed and resumed, reaches it at monURL; both
// present token, secured by sec.
func durableResume(t *testing.T, hostURL, monURL, token string, sec transport.Security) {
	t.Helper()
	ctx := context.Background()
	f := newFake()
	joinWith(t, hostURL, token, "h1", f, sec)
	r1, err := OpenResume(ctx, monURL, token, "mon", StreamOptions{}, sec)
	if err != nil || r1.Found {
		t.Fatalf("a new name: found %v, %v", r1 != nil && r1.Found, err)
	}
	conns, err := DialHosts(ctx, monURL, token, "*", DialOptions{Resume: r1, Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	send := func(c wire.Conn, cmds ...wire.Command) {
		for _, cmd := range cmds {
			if err := c.Send(&cmd); err != nil {
				t.Fatal(err)
			}
		}
	}
	lease := wire.Command{Kind: wire.CLease, Period: int64(time.Minute)}
	enable := wire.Command{Kind: wire.CEnable, Entity: "x"}
	send(conns[0], lease, enable)
	for i := 1; i <= 10; i++ {
		f.out <- batch(i, 0)
	}
	recvN(t, conns[0], 1, 5)
	kill(conns, r1)
	for i := 11; i <= 20; i++ {
		f.out <- batch(i, 0) // while the monitor is away
	}
	r2, err := OpenResume(ctx, monURL, token, "mon", StreamOptions{}, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if !r2.Found || len(r2.State.Hosts) != 1 {
		t.Fatalf("resuming: found %v, state %+v", r2.Found, r2.State)
	}
	conns, err = DialHosts(ctx, monURL, token, "*", DialOptions{Resume: r2, Security: sec})
	if err != nil {
		t.Fatal(err)
	}
	defer conns[0].Close()
	send(conns[0], lease, enable, wire.Command{Kind: wire.CEnable, Entity: "y"})
	recvN(t, conns[0], 1, 20)
	close(f.shut)
	if _, err := conns[0].Recv(); err != io.EOF {
		t.Fatalf("after the last batch: %v, want io.EOF", err)
	}
	want := []wire.CommandKind{wire.CLease, wire.CEnable, wire.CLease, wire.CEnable}
	if got := f.commands(); !slices.Equal(got, want) {
		t.Fatalf("commands applied %v, want %v (the enable sent again not applied twice)", got, want)
	}
	if last := f.cmds[3].Entity; last != "y" {
		t.Fatalf("the new enable: %q", last)
	}
}

// TestResumeGone: the stream keeps at most MaxBytes; a monitor resuming
// a session whose first frames it dropped is refused with a GoneError
// (exit 3 in tqmon query), not answered from the frames left.
func TestResumeGone(t *testing.T) {
	url := natsURL(t)
	ctx := context.Background()
	f := newFake()
	join(t, url, "h1", f)
	so := StreamOptions{MaxBytes: 64 << 10}
	r1, err := OpenResume(ctx, url, "", "small", so)
	if err != nil {
		t.Fatal(err)
	}
	conns, err := DialHosts(ctx, url, "", "h1", DialOptions{Resume: r1, Silence: 2 * Beat})
	if err != nil {
		t.Fatal(err)
	}
	conns[0].Send(&wire.Command{Kind: wire.CLease, Period: int64(time.Minute)})
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			if _, err := conns[0].Recv(); err != nil {
				return
			}
		}
	}()
	kill(conns, r1)
	<-recvDone
	for i := 1; i <= 40; i++ {
		f.out <- batch(i, 4<<10) // 160 KiB in all: the first frames go
	}
	r2, err := OpenResume(ctx, url, "", "small", so)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	js := r2.js
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := js.Stream(ctx, Stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.FirstSeq > 1 && info.State.LastSeq >= 41 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stream: %+v", info.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = DialHosts(ctx, url, "", "h1", DialOptions{Resume: r2})
	var gone *GoneError
	if !errors.As(err, &gone) || gone.Host != "h1" || !strings.Contains(err.Error(), "no longer holds") {
		t.Fatalf("resuming past the retention: %v, want a GoneError naming h1", err)
	}
}

// TestDeadMonitorClearsDurable: a durable session outlives its monitor
// only for its lease: a monitor killed and not started again stops
// renewing it, the resident clears what the session enabled, and the
// session's end (why it ended) is in the stream, where a monitor
// resuming later reads it as a lost session.
func TestDeadMonitorClearsDurable(t *testing.T) {
	url := natsURL(t)
	ctx := context.Background()
	res := resident.New(ossensors.Spec(), resident.Options{Name: "dead"})
	defer res.Close()
	sens := ossensors.New(res)
	sens.NewProcess("P1", ossensors.ProcessState(0))
	srv := join(t, url, "h", transport.Adapt(res.Hello, res.Open))
	r1, err := OpenResume(ctx, url, "", "dead", StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	conns, err := DialHosts(ctx, url, "", "h", DialOptions{Resume: r1})
	if err != nil {
		t.Fatal(err)
	}
	h := conns[0].Hello()
	sid, tid := slices.Index(h.Sensors, "SendMessage"), slices.Index(h.Types, "Process")
	for _, cmd := range []wire.Command{{Kind: wire.CLease, Period: int64(300 * time.Millisecond)},
		{Kind: wire.CEnable, Sensor: uint16(sid), Type: uint16(tid), Entity: "P1"}} {
		if err := conns[0].Send(&cmd); err != nil {
			t.Fatal(err)
		}
	}
	if got := res.Flags()["SendMessage"]; !slices.Equal(got, []string{"P1"}) {
		t.Fatalf("enabled: %v", res.Flags())
	}
	kill(conns, r1)
	deadline := time.Now().Add(20 * time.Second)
	for len(res.Flags()["SendMessage"]) > 0 || srv.Active() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the monitor died: enabled %v, %d sessions open", res.Flags(), srv.Active())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r2, err := OpenResume(ctx, url, "", "dead", StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	conns, err = DialHosts(ctx, url, "", "h", DialOptions{Resume: r2})
	if err != nil {
		t.Fatal(err)
	}
	defer conns[0].Close()
	for {
		_, err := conns[0].Recv()
		if err == nil {
			continue
		}
		if err == io.EOF || !strings.Contains(err.Error(), "lease") {
			t.Fatalf("the resumed session ended with %v, want the lease's lapse", err)
		}
		break
	}
}

// TestStreamReplicas: on a three-node cluster, --replicas 3 (and the
// journal's) makes the stream and the monitors' bucket kept by three
// nodes.
func TestStreamReplicas(t *testing.T) {
	nodes, err := embedded.StartCluster(3, func(int) string { return t.TempDir() })
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	}()
	ctx := context.Background()
	r, err := OpenResume(ctx, nodes[2].URL(), "", "r3", StreamOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{Stream, "KV_" + Monitors} {
		st, err := r.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Replicas != 3 {
			t.Errorf("%s: %d replicas, want 3", name, info.Config.Replicas)
		}
	}
}

// TestDurableReaderNodeDies: the node a durable session's reader consumes
// the stream on dies (the monitor's own node does not), and then the
// resident ends its session (no more heartbeats; its last frames and end
// frame wait in the replicated stream). The monitor reads on, every
// frame and the end, within a Silence of 6 s: its consumer is made again
// on a live node after two missed heartbeats (consumeBeat, 2 s). With
// nats.go's default heartbeat it took 10 s, and the session was lost.
func TestDurableReaderNodeDies(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node cluster and a node's death")
	}
	nodes, err := embedded.StartCluster(3, func(int) string { return t.TempDir() })
	if err != nil {
		t.Fatal(err)
	}
	dead := -1
	t.Cleanup(func() { // after the host's (cleanups run last first)
		for i, s := range nodes {
			if i != dead {
				s.Shutdown()
			}
		}
	})
	ctx := context.Background()
	f := newFake()
	srv := join(t, nodes[1].URL()+","+nodes[2].URL(), "h1", f)
	r, err := OpenResume(ctx, nodes[0].URL(), "", "mon", StreamOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The reader's consumer goes on a node picked at random: a session
	// whose consumer is on the monitor's own node (which the test does not
	// kill) is closed and another opened.
	const silence = 6 * time.Second
	var c wire.Conn
	for try := 0; ; try++ {
		if c, err = Dial(ctx, r.nc, "h1", DialOptions{Resume: r, Silence: silence}); err != nil {
			t.Fatal(err)
		}
		if dead = consumerNode(t, r, c.(*conn)); dead != 0 {
			break
		}
		c.Close()
		if try == 20 {
			t.Fatal("the reader's consumer was on the monitor's node 21 times")
		}
	}
	defer c.Close()
	for srv.Active() != 1 {
		time.Sleep(10 * time.Millisecond) // the sessions closed have ended
	}
	if err := c.Send(&wire.Command{Kind: wire.CLease, Period: int64(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		f.out <- batch(i, 0)
	}
	recvN(t, c, 1, 5)
	killed := time.Now()
	nodes[dead].Shutdown()
	for i := 6; i <= 10; i++ {
		f.out <- batch(i, 0)
	}
	close(f.shut)
	recvN(t, c, 6, 10)
	if _, err := c.Recv(); err != io.EOF {
		t.Fatalf("after the last batch: %v, want io.EOF", err)
	}
	t.Logf("the reader's node n%d killed: the session read to its end %v later", dead+1, time.Since(killed).Round(time.Millisecond))
}

// consumerNode is the index of the node c's reader consumes the stream
// on (nodes are named n1, n2, … by embedded.StartNodes).
func consumerNode(t *testing.T, r *Resume, c *conn) int {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		infos := r.st.ListConsumers(ctx)
		for ci := range infos.Info() {
			if ci.Config.FilterSubject != journalSubject(c.host, c.id) && !slices.Contains(ci.Config.FilterSubjects, journalSubject(c.host, c.id)) {
				continue
			}
			if ci.Cluster != nil && strings.HasPrefix(ci.Cluster.Leader, "n") {
				if n, err := strconv.Atoi(ci.Cluster.Leader[1:]); err == nil {
					return n - 1
				}
			}
		}
	}
	t.Fatal("the reader's consumer was not found in 10 s")
	return -1
}
