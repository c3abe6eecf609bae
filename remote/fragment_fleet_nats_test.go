package remote_test

import (
	"context"
	"slices"
	"testing"
	"time"

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

// TestFleetPerHostNATS: three demo hosts on an embedded NATS server,
// a monitor running a by-Host aggregate, an aggregate by process and a
// per-host join: the program is placed at each host (every CPlan names
// its host), only result tuples cross NATS, and the answers equal the
// queries over the hosts' truths, host-qualified.
func TestFleetPerHostNATS(t *testing.T) {
	srv0, err := embedded.Start(embedded.Options{Addr: "127.0.0.1:0", Data: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv0.Shutdown()
	url := srv0.URL()
	hosts := []string{"h1", "h2", "h3"}
	type host struct {
		clock *demo.SubjectClock
		rec   *truth.Recorder
		res   *resident.Resident
	}
	var hs []host
	for _, h := range hosts {
		clock := demo.NewClock(1000)
		rec := truth.New(demoCatalog(t), 0, 0)
		res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
		hello := res.Hello()
		rec.SetClock(hello.MonoBase, hello.WallBase)
		srv, err := fleet.Join(connectTo(t, url), h, transport.Adapt(res.Hello, res.Open), fleet.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop()
		hs = append(hs, host{clock, rec, res})
	}
	ctx := context.Background()
	mon := connectTo(t, url)
	var kinds kindCounter
	var conns []wire.Conn
	var hellos []*wire.Hello
	for _, h := range hosts {
		c, err := fleet.Dial(ctx, mon, h, fleet.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, &kindConn{Conn: c, n: &kinds})
		hellos = append(hellos, c.Hello())
	}
	cat, prog := fleetProgram(t, hellos, perHostQueries)
	type out struct {
		rs  []query.Result
		st  remote.LiveStats
		err error
	}
	ready, done := make(chan struct{}), make(chan out, 1)
	go func() {
		rs, st, err := remote.RunLive(ctx, prog, conns, remote.LiveOptions{Ready: func() { close(ready) }})
		done <- out{rs, st, err}
	}()
	<-ready
	rctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
	defer cancel()
	finished := make(chan int64, len(hs))
	for i, h := range hs {
		go func() {
			demo.New(ossensors.New(h.res), demo.DefaultConfig(uint64(30+i))).Run(rctx)
			finished <- h.clock.Stop()
			h.res.Close()
		}()
	}
	var stop int64
	for range hs {
		stop = max(stop, <-finished)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	var truths []*algebra.History
	for _, h := range hs {
		truths = append(truths, h.rec.History(stop))
	}
	want, _, err := prog.RunHistory(fleetTruth(cat, hosts, truths))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(o.rs), renderTables(want); g != w {
		t.Fatalf("per-host results differ from the hosts' truths:\n%s", diffLines(g, w))
	}
	if !o.st.Placed || kinds.other.Load() != 0 || kinds.results.Load() == 0 {
		t.Fatalf("placed %v; %d packets that are not results crossed NATS, %d results", o.st.Placed, kinds.other.Load(), kinds.results.Load())
	}
	for _, r := range o.rs {
		if len(r.Table.Rows) == 0 {
			t.Errorf("no rows (the run was too short)")
		}
	}
	for _, ob := range o.st.Observed {
		var on []string
		for _, s := range ob.Hosts {
			on = append(on, s.Host)
		}
		if !slices.Equal(on, hosts) {
			t.Errorf("%s observed on %v, want %v", ob.Rel, on, hosts)
		}
	}
	t.Logf("%d result packets, %d wire tuples, %d bytes", kinds.results.Load(), o.st.WireTuples, o.st.WireBytes)
}
