package remote_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
)

// perHostQueries are placed per host (rewrite.PlacePerHost): a by-Host
// aggregate, an aggregate by an entity, a join on an entity.
var perHostQueries = []query.Source{
	{Name: "sends-by-host", Text: `range of s is SendMessage retrieve (s.Host, N = count(s.Process by s.Host))`},
	{Name: "sends-by-process", Text: `range of s is SendMessage retrieve (s.Process, N = count(s.Mailbox by s.Process for each 10ms))`},
	{Name: "waits-of-states", Text: `range of w is Waiting range of p is Process retrieve (w.Process, p.State, w.Host) where w.Process = p.Process`},
}

// TestLiveFleetPerHost: of two demo hosts, a program placed per host
// runs at each (each asked with a CPlan naming it, FleetHostArg); only
// result packets cross, and the union of the hosts' answers equals the
// queries over the fleet's truth (each host's, host-qualified).
func TestLiveFleetPerHost(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	cat, prog := fleetProgram(t, hellos, perHostQueries)
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	var kinds kindCounter
	log := newElemLog(prog, len(hosts))
	rs, st, truths, err := runTwoDemos(t, prog, 300*time.Millisecond, remote.LiveOptions{OnElem: log.onElem}, func(i int, c wire.Conn) wire.Conn {
		return log.watch(&kindConn{Conn: host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]}, n: &kinds})
	})
	if err != nil {
		t.Fatal(err)
	}
	log.check(t, rs)
	want, _, err := prog.RunHistory(fleetTruth(cat, hosts, truths))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(rs), renderTables(want); g != w {
		t.Fatalf("per-host results differ from the hosts' truths:\n%s", diffLines(g, w))
	}
	if !st.Placed || kinds.other.Load() != 0 || kinds.results.Load() == 0 {
		t.Fatalf("placed %v; the monitor got %d packets that are not results, %d results", st.Placed, kinds.other.Load(), kinds.results.Load())
	}
	for i, h := range hosts {
		n := 0
		for _, c := range sent[i] {
			if c.Kind == wire.CPlan && c.Text != "" {
				n++
				if !slices.Contains(c.Args, remote.FleetHostArg+"="+h) {
					t.Errorf("%s's plan names no host: %q", h, c.Args)
				}
			}
			if c.Kind == wire.CEnable || c.Kind == wire.CEnableAll {
				t.Errorf("%s was asked to enable (%v): the fragment enables its own", h, c.Kind)
			}
		}
		if n != 1 {
			t.Errorf("%s got %d plans, want 1", h, n)
		}
	}
	for i, r := range rs {
		of := map[string]int{} // rows per host, named by Host or an identifier's
		for _, row := range r.Table.Rows {
			for _, v := range row.Vals {
				if h, _, _ := strings.Cut(v.S, "/"); slices.Contains(hosts, h) {
					of[h]++
					break
				}
			}
		}
		if of["h1"] == 0 || of["h2"] == 0 {
			t.Errorf("%s: a host with no rows (%v)", perHostQueries[i].Name, of)
		}
	}
	t.Logf("%d result packets, %d wire tuples", kinds.results.Load(), st.WireTuples)
}

// TestLiveFleetPerHostLost: h2's session is lost mid-run under a program
// placed per host. h1's answer equals its truth; h2's stops where it was
// lost (its tuples valid there end there); the run says so (h2's
// SessionLostError) and the observation says each host's span, h2's lost.
func TestLiveFleetPerHostLost(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	srcs := []query.Source{perHostQueries[0], perHostQueries[2]}
	cat, prog := fleetProgram(t, hellos, srcs)
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	at := time.Now().Add(150 * time.Millisecond)
	log := newElemLog(prog, len(hosts))
	rs, st, truths, err := runTwoDemos(t, prog, 400*time.Millisecond, remote.LiveOptions{OnElem: log.onElem}, func(i int, c wire.Conn) wire.Conn {
		h := host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]}
		if i == 1 {
			return log.watch(loses{h, at})
		}
		return log.watch(h)
	})
	var lost *remote.SessionLostError
	if !errors.As(err, &lost) || lost.Resident != "h2" {
		t.Fatalf("err = %v, want h2's session lost", err)
	}
	if !st.Placed {
		t.Fatal("not placed per host")
	}
	log.check(t, rs)
	want, _, err := prog.RunHistory(fleetTruth(cat, hosts, truths))
	if err != nil {
		t.Fatal(err)
	}
	cut := algebra.Next(lost.Since)
	for i := range rs {
		g, w := byHost(rs[i].Table), byHost(want[i].Table)
		if g["h1"] != w["h1"] {
			t.Errorf("%s: h1's rows differ from its truth (the run should go on without h2):\n--- live\n%s--- truth\n%s", srcs[i].Name, head(g["h1"]), head(w["h1"]))
		}
		for _, r := range rs[i].Table.Rows {
			if r.Vals[len(r.Vals)-1].S == "h2" && (r.To > cut || r.From >= cut) {
				t.Errorf("%s: h2's row %v runs past where h2 was lost (%d)", srcs[i].Name, r, cut)
			}
		}
	}
	if len(st.Observed) == 0 {
		t.Fatal("nothing observed")
	}
	for _, o := range st.Observed {
		if len(o.Hosts) != 2 || o.Hosts[0].Host != "h1" || o.Hosts[0].Lost || !o.Hosts[1].Lost || o.Hosts[1].To != cut {
			t.Errorf("observation of %s: hosts %+v, want h1 to the end and h2 lost at %d", o.Rel, o.Hosts, cut)
		}
	}
}

// elemLog records a run's OnElem: each statement's elements collected
// into a table, whether each statement's came in time order, and whether
// the first came while a host was still running (before every host's
// session had ended: watch).
type elemLog struct {
	hosts    int32
	ended    atomic.Int32 // sessions ended (Recv failed)
	cols     []*exec.Collector
	last     []algebra.Time
	disorder []string
	n        int
	early    bool
}

func newElemLog(prog *query.Program, hosts int) *elemLog {
	l := &elemLog{hosts: int32(hosts), last: make([]algebra.Time, len(prog.Stmts))}
	for _, r := range prog.Stmts {
		c := exec.NewCollector(r.Result)
		c.Observed = true
		l.cols = append(l.cols, c)
	}
	return l
}

func (l *elemLog) onElem(stmt int, e stream.Elem) {
	if l.n == 0 {
		l.early = l.ended.Load() < l.hosts
	}
	l.n++
	if e.T < l.last[stmt] {
		l.disorder = append(l.disorder, fmt.Sprintf("statement %d: %v at %d after %d", stmt, e.Kind, e.T, l.last[stmt]))
	}
	l.last[stmt] = e.T
	l.cols[stmt].Push(e)
}

// watch counts c's session's end in l.
func (l *elemLog) watch(c wire.Conn) wire.Conn { return endsConn{c, &l.ended} }

type endsConn struct {
	wire.Conn
	ended *atomic.Int32
}

func (c endsConn) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if err != nil {
		c.ended.Add(1)
	}
	return b, err
}

// check: the elements came as the hosts ran, each statement's in time
// order, and they are the run's tables.
func (l *elemLog) check(t *testing.T, rs []query.Result) {
	t.Helper()
	if l.n == 0 || !l.early {
		t.Errorf("%d elements, the first before the run's end: %v (want them as they settle)", l.n, l.early)
	}
	if len(l.disorder) > 0 {
		t.Errorf("elements out of time order:\n%s", strings.Join(l.disorder[:min(5, len(l.disorder))], "\n"))
	}
	got := make([]query.Result, len(rs))
	for i, r := range rs {
		tab := l.cols[i].Table()
		tab.SortRows()
		got[i] = query.Result{Stmt: r.Stmt, Table: tab}
	}
	if g, w := renderTables(got), renderTables(rs); g != w {
		t.Errorf("the elements differ from the tables:\n%s", diffLines(g, w))
	}
}

// durable is a host whose session is durable (a monitor that can
// resume, fleet.Dial's under --resume).
type durable struct{ host }

func (durable) Durable() bool { return true }

// TestLiveFleetDurableNotPlaced: over durable sessions a program the rule
// places per host runs at the monitor (a resumed monitor reads every
// frame again: a fragment started again would answer twice), and equals
// the truth.
func TestLiveFleetDurableNotPlaced(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	cat, prog := fleetProgram(t, hellos, perHostQueries[:1])
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	rs, st, truths, err := runTwoDemos(t, prog, 200*time.Millisecond, remote.LiveOptions{}, func(i int, c wire.Conn) wire.Conn {
		return durable{host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]}}
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Placed {
		t.Fatal("placed over durable sessions")
	}
	want, _, err := prog.RunHistory(fleetTruth(cat, hosts, truths))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(rs), renderTables(want); g != w {
		t.Fatalf("results differ from the hosts' truths:\n%s", diffLines(g, w))
	}
}

// TestLiveFleetPerHostWire: placed per host, the wire carries fewer
// tuples and bytes per result row than the monitor's own fleet run of
// the same program over the same kind of hosts (run one after the other;
// per result row, so the runs' lengths do not matter).
func TestLiveFleetPerHostWire(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	_, prog := fleetProgram(t, hellos, perHostQueries)
	per := map[bool][2]float64{}
	for _, plain := range []bool{false, true} {
		var mu sync.Mutex
		sent := make([][]wire.Command, 2)
		rs, st, _, err := runTwoDemos(t, prog, 300*time.Millisecond, remote.LiveOptions{WireBytes: true}, func(i int, c wire.Conn) wire.Conn {
			return host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i], plain: plain}
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Placed == plain {
			t.Fatalf("plain %v: placed %v", plain, st.Placed)
		}
		rows := 0
		for _, r := range rs {
			rows += len(r.Table.Rows)
		}
		if rows == 0 {
			t.Fatal("no rows")
		}
		per[plain] = [2]float64{float64(st.WireTuples) / float64(rows), float64(st.WireBytes) / float64(rows)}
	}
	t.Logf("per result row: per host %.2f tuples, %.1f bytes; at the monitor %.2f tuples, %.1f bytes", per[false][0], per[false][1], per[true][0], per[true][1])
	if per[false][0] >= per[true][0] || per[false][1] >= per[true][1] {
		t.Errorf("per host not cheaper on the wire: %v against %v", per[false], per[true])
	}
}

// TestLiveFleetPerHostNeverStarted: h2 is lost before its fragment
// starts. The run is ready once h1 has started (h2 does not hold it
// back: runTwoDemos waits for Ready), h1's answer equals its truth, and
// h2 is reported lost.
func TestLiveFleetPerHostNeverStarted(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	cat, prog := fleetProgram(t, hellos, perHostQueries[:1])
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	done := make(chan struct{})
	var (
		rs     []query.Result
		truths []*algebra.History
		err    error
	)
	go func() {
		defer close(done)
		rs, _, truths, err = runTwoDemos(t, prog, 200*time.Millisecond, remote.LiveOptions{}, func(i int, c wire.Conn) wire.Conn {
			h := host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]}
			if i == 1 {
				return loses{h, time.Now()}
			}
			return h
		})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run never became ready: h2, never started, held it back")
	}
	var lost *remote.SessionLostError
	if !errors.As(err, &lost) || lost.Resident != "h2" {
		t.Fatalf("err = %v, want h2's session lost", err)
	}
	want, _, err := prog.RunHistory(fleetTruth(cat, hosts, truths))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := byHost(rs[0].Table), byHost(want[0].Table); g["h1"] != w["h1"] || g["h2"] != "" {
		t.Errorf("h1's rows differ from its truth, or h2 has rows:\n--- live\n%s%s--- truth\n%s", head(g["h1"]), head(g["h2"]), head(w["h1"]))
	}
}

// TestLiveFleetPerHostDiscard: placed per host under Discard, the
// answer is streamed as the hosts run (OnElem, each statement's in time
// order) and no rows are kept.
func TestLiveFleetPerHostDiscard(t *testing.T) {
	hosts := []string{"h1", "h2"}
	hellos := []*wire.Hello{{Name: "h1", SDL: ossensors.SDL}, {Name: "h2", SDL: ossensors.SDL}}
	_, prog := fleetProgram(t, hellos, perHostQueries)
	var mu sync.Mutex
	sent := make([][]wire.Command, 2)
	log := newElemLog(prog, len(hosts))
	rs, st, _, err := runTwoDemos(t, prog, 300*time.Millisecond, remote.LiveOptions{OnElem: log.onElem, Discard: true}, func(i int, c wire.Conn) wire.Conn {
		return log.watch(host{Conn: c, name: hosts[i], mu: &mu, sent: &sent[i]})
	})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Placed {
		t.Fatal("not placed per host")
	}
	for _, r := range rs {
		if len(r.Table.Rows) != 0 {
			t.Errorf("%s: %d rows kept", r.Stmt.Name, len(r.Table.Rows))
		}
	}
	if log.n == 0 || !log.early || len(log.disorder) > 0 {
		t.Errorf("%d elements, the first before the run's end: %v; out of order: %q", log.n, log.early, log.disorder)
	}
}
