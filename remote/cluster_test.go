package remote_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/fleet/embedded"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/truth"
)

// startCluster starts a NATS cluster of n nodes in this process
// (embedded.StartCluster: routes on loopback, each node's JetStream store
// in a temporary directory). It returns once a client of the last node
// reaches a subscriber of the first (the routes are up).
func startCluster(t *testing.T, n int) []*embedded.Server {
	t.Helper()
	nodes, err := embedded.StartCluster(n, func(int) string { return t.TempDir() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range nodes {
			s.Shutdown()
		}
	})
	first, last := connectTo(t, nodes[0].URL()), connectTo(t, nodes[n-1].URL())
	sub, err := first.Subscribe("routes.up", func(m *nats.Msg) { m.Respond(nil) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	first.Flush()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := last.Request("routes.up", nil, 200*time.Millisecond); err == nil {
			return nodes
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster's routes did not come up in 10 s")
		}
	}
}

func connectTo(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := fleet.Connect(url, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// withExtra is a demo resident that declares Disk besides (its sensor
// never fires; commands for it are carried out as lease renewals, so the
// resident still counts them applied).
func withExtra(res *resident.Resident) transport.Sessions {
	return transport.Adapt(func() *wire.Hello {
		h := res.Hello()
		h.SDL += "\nevent relation " + extraRel + "(Process: Process initiator, Bytes: int) traced on initiator\n"
		h.Sensors = append(h.Sensors, extraRel)
		return h
	}, func() extraSession { return extraSession{res.Open(), uint16(len(res.Hello().Sensors))} })
}

type extraSession struct {
	*resident.Session
	disk uint16
}

func (s extraSession) Apply(c *wire.Command) error {
	if c.Kind != wire.CLease && c.Sensor == s.disk {
		return s.Session.Apply(&wire.Command{Kind: wire.CLease, Period: int64(3 * time.Second)})
	}
	return s.Session.Apply(c)
}

// clusterQueries are the paper's queries over a fleet, a by-Host
// aggregate and a query of the relation only h3 declares.
var clusterQueries = []query.Source{
	{Name: "ResumedbyP1", Text: `range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process, W.Host)
valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "h1/P1"
when S precede end of W`},
	{Name: "QueueLength", Text: `range of m is Mailbox
range of w is Waiting
retrieve QueueLength (m.Mailbox, Length = count(w.Process by m.Mailbox where w.Mailbox = m.Mailbox))`},
	{Name: "SendToUnblock", Text: `range of s is SendMessage
range of w is Waiting
retrieve SendToUnblock (Sender = s.Process, Recipient = w.Process, s.Mailbox, Interval = end of w - begin of s)
    valid at end of w
    where s.Mailbox = w.Mailbox
    when s overlap w`},
	{Name: "Sent", Text: `range of s is SendMessage retrieve Sent (s.Host, N = count(s.Process by s.Host))`},
	{Name: "Disk", Text: `range of d is Disk retrieve DiskWrites (d.Process, d.Bytes, d.Host)`},
}

// TestFleetCluster is issue 18's acceptance over a three-node NATS
// cluster in process: three demo subjects as hosts h1, h2 and h3
// (seeds 20, 21, 22; h3 also declares Disk), each on its own node, and a
// monitor on the first running the paper's queries, a by-Host aggregate
// and a query of Disk: the results equal the hosts' truths, host-
// qualified. In "node killed", the node h2 is connected to is shut down
// mid-run: h2 reconnects to another node and the frames lost in flight
// are sent again — the results still equal the truths.
func TestFleetCluster(t *testing.T) {
	for _, kill := range []bool{false, true} {
		name := "all up"
		if kill {
			name = "node killed"
		}
		t.Run(name, func(t *testing.T) { clusterRun(t, kill, false) })
	}
}

// TestFleetClusterDiscovered is TestFleetCluster's "all up" with the
// hosts found by glob (fleet.DialHosts, as `query --nats URL --hosts
// 'h*'` finds them) as soon as they joined, the monitor not waiting for
// each to be reachable from its node. Under load a host's subscriptions
// may not have reached the monitor's node yet (about 1 run in 10 with
// three test processes on 2 cores, 2026-11): it is not found, and was
// then left out in silence — its tuples missing, no gap, no drop, exit 0.
// Now it is found later and reported late (remote.LateHostsError,
// ErrIncomplete): the answer equals the truth of the hosts watched, and
// every host is either watched or reported.
func TestFleetClusterDiscovered(t *testing.T) { clusterRun(t, false, true) }

func clusterRun(t *testing.T, kill, discover bool) {
	nodes := startCluster(t, 3)
	hosts := []string{"h1", "h2", "h3"}
	type host struct {
		clock *demo.SubjectClock
		rec   *truth.Recorder
		res   *resident.Resident
		srv   *fleet.Server
		nc    *nats.Conn
	}
	var hs []host
	for i, h := range hosts {
		clock := demo.NewClock(1000)
		rec := truth.New(demoCatalog(t), 0, 0)
		res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
		hello := res.Hello()
		rec.SetClock(hello.MonoBase, hello.WallBase)
		var ss transport.Sessions = transport.Adapt(res.Hello, res.Open)
		if h == "h3" {
			ss = withExtra(res)
		}
		// Each host on its own node; the others it learns from it (the
		// cluster's gossip) and falls back to.
		nc := connectTo(t, nodes[i].URL())
		srv, err := fleet.Join(nc, h, ss, fleet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		hs = append(hs, host{clock, rec, res, srv, nc})
	}
	ctx := context.Background()
	// Each host by name (discovery by glob keeps the answers of a moment:
	// on a loaded machine a host may answer late).
	mon := connectTo(t, nodes[0].URL())
	queries := clusterQueries
	var conns []wire.Conn
	if discover {
		// (h3, the one host declaring Disk, may be the one not found.)
		queries = clusterQueries[:len(clusterQueries)-1]
		var err error
		if conns, err = fleet.DialHosts(ctx, nodes[0].URL(), "", "h*", fleet.DialOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range conns {
			defer c.Close()
		}
	}
	for _, h := range hosts {
		if discover {
			break
		}
		// (A host's subscriptions reach the other nodes over the routes a
		// moment after it joined its own.)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := mon.Request("tqmon."+h+".ping", nil, 200*time.Millisecond); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("host %s not reachable from the monitor's node in 10 s", h)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c, err := fleet.Dial(ctx, mon, h, fleet.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	var hellos []*wire.Hello
	for _, c := range conns {
		hellos = append(hellos, c.Hello())
	}
	cat, prog := fleetProgram(t, hellos, queries)
	ready := make(chan struct{})
	type out struct {
		rs  []query.Result
		st  remote.LiveStats
		err error
	}
	done := make(chan out, 1)
	go func() {
		rs, st, err := remote.RunLive(ctx, prog, conns, remote.LiveOptions{Ready: func() { close(ready) }})
		done <- out{rs, st, err}
	}()
	<-ready
	const run = 600 * time.Millisecond
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	end := time.Now().Add(run)
	finished := make(chan int64, len(hs))
	for i, h := range hs {
		go func() {
			demo.New(ossensors.New(h.res), demo.DefaultConfig(uint64(20+i))).Run(rctx)
			finished <- h.clock.Stop()
			h.res.Close()
		}()
	}
	if kill {
		time.Sleep(run / 3)
		nodes[1].Shutdown() // h2's node: h2 reconnects to another
		// The hosts end after the kill, a third of the run at least:
		// their last frames go after it, so h2 must reconnect for the
		// run to end. (The run used to end on a timer of its own, which
		// under load the sleep above could outlast: the node then went
		// down with nothing left to send, and h2 had not reconnected by
		// the check below — 2 runs of 13 at load 15, both with the
		// demos' answers nearly empty; 20 of 20 pass now.)
		if t := time.Now().Add(run / 3); t.After(end) {
			end = t
		}
	}
	time.Sleep(time.Until(end))
	// Under load the demos may have done too little in the run for every
	// statement to have a row (the check below): go on, up to 10 s more,
	// until the hosts' truths so far give each one some.
	enough := func() bool {
		watched, truths := hs2truth(hellos, hosts, func(i int) *algebra.History { return hs[i].rec.History(hs[i].clock.Now()) })
		return truthHasRows(cat, prog, watched, truths, queries)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !enough(); {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	var stop int64
	for range hs {
		stop = max(stop, <-finished)
	}
	o := <-done
	var late *remote.LateHostsError
	if discover && errors.As(o.err, &late) {
		o.err = nil
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	// The hosts watched, and their truths: all of them, unless some
	// were reported late.
	if n := hs[1].nc.Stats().Reconnects; kill && n == 0 {
		t.Error("h2 did not reconnect: its node was not the one shut down")
	}
	watched, truths := hs2truth(hellos, hosts, func(i int) *algebra.History { return hs[i].rec.History(stop) })
	if all := slices.Sorted(slices.Values(append(slices.Clone(watched), o.st.Late...))); !slices.Equal(all, hosts) {
		t.Fatalf("hosts watched %v, reported late %v: want every one of %v either", watched, o.st.Late, hosts)
	}
	if late != nil {
		t.Logf("found late (reported, not observed): %v", late.Hosts)
	}
	want, _, err := prog.RunHistory(fleetTruth(cat, watched, truths))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(o.rs), renderTables(want); g != w {
		t.Fatalf("fleet results differ from the hosts' truths (%v; dropped %v):\n%s", o.st.Err(), o.st.Dropped, diffLines(g, w))
	}
	if len(watched) < len(hosts) {
		return
	}
	for i, r := range o.rs {
		if len(r.Table.Rows) == 0 && queries[i].Name != "Disk" {
			t.Errorf("%s: no rows (the run was too short)", queries[i].Name)
		}
	}
	if discover {
		return
	}
	i := slices.IndexFunc(o.st.Observed, func(o remote.Observation) bool { return o.Rel == extraRel })
	if i < 0 || !slices.Equal(o.st.Observed[i].Undeclared, []string{"h1", "h2"}) {
		t.Errorf("Disk's observation: %+v, want it undeclared on h1 and h2", o.st.Observed)
	}
}

// hs2truth is the fleet's truth from each watched host's history (at).
func hs2truth(hellos []*wire.Hello, hosts []string, at func(i int) *algebra.History) (watched []string, truths []*algebra.History) {
	for _, hello := range hellos {
		i := slices.Index(hosts, hello.Name)
		watched = append(watched, hosts[i])
		truths = append(truths, at(i))
	}
	return watched, truths
}

// truthHasRows says whether every statement but Disk has a row over the
// hosts' truths.
func truthHasRows(cat *algebra.Catalog, prog *query.Program, watched []string, truths []*algebra.History, queries []query.Source) bool {
	want, _, err := prog.RunHistory(fleetTruth(cat, watched, truths))
	if err != nil {
		return true // (the test's own run reports it)
	}
	for i, r := range want {
		if len(r.Table.Rows) == 0 && queries[i].Name != "Disk" {
			return false
		}
	}
	return true
}
