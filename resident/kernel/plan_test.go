package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/kernel/kerneltest"
	"github.com/tqmon/tqmon/resident/kernel/launch"
	"github.com/tqmon/tqmon/resident/plans"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
)

// planQuery is a program with an aggregate per process (`by`) and a join
// of Syscall with Process by command name, over the workload's getppid
// calls: placed whole at a kernel resident that runs plans.
const planQuery = `range of s is Syscall
range of p is Process
retrieve (s.Process, N = count(s.Name by s.Process where s.Process = $target and s.Name = "getppid" for ever)) where s.Process = $target and s.Name = "getppid"
retrieve (p.Command, s.Name) where s.Process = p.Process and p.Process = $target and s.Name = "getppid"`

// placedRun is one live run of prog over a kernel resident reached
// through the gRPC transport (as `tqmon query --connect` reaches `tqmon
// resident --kernel`), with the workload started paused and released
// once the monitor's commands are carried out; the run ends once the
// monitor has rows results of statement 1 (one per call, in the tests)
// or, short of them, 20 s after the workload's exit (rows 0: 1 s after
// it).
type placedRun struct {
	rs      []query.Result
	st      remote.LiveStats
	err     error
	results int64 // result packets received
	other   int64 // sensed packets received (events, intervals)
	// entity packets received: a session's opening snapshot of the live
	// processes, threads and processors (sent before its first command
	// is carried out), then the entities' changes unless placed
	entity int64
	pid    string // the workload's
}

// runOverTransport is a placedRun of text. The program is placed, when
// the resident runs plans, even if the rule "placement cost" would keep
// it at the monitor (LiveOptions.PlaceCostly): these runs compare the two
// places.
func runOverTransport(t testing.TB, opts kernel.Options, calls, want int, text string, limit int64) placedRun {
	t.Helper()
	res, err := kernel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	srv, err := transport.NewServer(res.Sessions(), transport.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "k.sock")
	lis, err := transport.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := transport.Dial(context.Background(), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	work := kerneltest.BuildC(t, "testdata/workload.c", true)
	cmd, err := launch.Start([]string{work, itoa(calls), "0", filepath.Join(t.TempDir(), "cpu")}, launch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Kill()
	prog, err := query.Compile(res.Catalog(), []query.Source{{Name: "plan", Text: text}}, check.Options{Params: map[string]string{"target": itoa(cmd.Pid)}})
	if err != nil {
		t.Fatal(err)
	}
	if limit > 0 {
		prog = prog.WithBudget(&exec.Budget{Limit: limit})
	}
	out := placedRun{pid: itoa(cmd.Pid)}
	lo := remote.LiveOptions{PlaceCostly: true}
	var rows atomic.Int64
	kc := &kindConn{Conn: conn, results: &out.results, other: &out.other, entity: &out.entity}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The workload is released once the monitor's commands are carried
	// out. Placed, that is when the fragment says its start (Ready:
	// its own session's commands are carried out in process). At the
	// monitor, over a network, Ready comes once the commands are sent:
	// the release waits for a batch saying they were applied.
	release := func() {
		if err := cmd.Release(); err != nil {
			t.Error(err)
		}
	}
	if opts.NoPlans {
		kc.applied = release
	}
	lo.Ready = func() {
		if !opts.NoPlans {
			release()
			return
		}
		kc.ready.Store(kc.sent.Load())
	}
	lo.OnElem = func(stmt int, e stream.Elem) {
		if stmt == 0 && e.Kind != stream.End {
			rows.Add(1)
		}
	}
	lo.WireBytes = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		out.rs, out.st, out.err = remote.RunLive(ctx, prog, []wire.Conn{kc}, lo)
	}()
	select {
	case <-cmd.Done():
	case <-done: // ended before the workload (its stop, maybe before Ready)
		cmd.Kill()
		t.Logf("the run ended before the workload: %v", out.err)
		return out
	case <-time.After(60 * time.Second):
		t.Fatal("the workload did not finish")
	}
	cmd.Wait()
	wait := 20 * time.Second
	if want <= 0 {
		want, wait = math.MaxInt, time.Second
	}
	for deadline := time.Now().Add(wait); rows.Load() < int64(want) && time.Now().Before(deadline); {
		select {
		case <-done: // (ended early: the caller judges its error)
			return out
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	t.Logf("placed %v: %d rows of statement 1 seen, %d sensed packets, %d entity, %d results; %v", out.st.Placed, rows.Load(), out.other, out.entity, out.results, out.err)
	return out
}

// kindConn counts the packets a monitor receives: results of a plan
// fragment, entity packets, and sensed packets.
type kindConn struct {
	wire.Conn
	results, other, entity *int64
	// applied, if set, is called once a batch says the commands sent
	// before Ready (ready of them) were carried out.
	applied     func()
	sent, ready atomic.Uint64
	done        bool
}

func (c *kindConn) Send(cmd *wire.Command) error {
	c.sent.Add(1)
	return c.Conn.Send(cmd)
}

func (c *kindConn) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if b != nil && c.applied != nil && !c.done {
		if n := c.ready.Load(); n > 0 && b.Applied >= n {
			c.done = true
			c.applied()
		}
	}
	if b != nil {
		for _, p := range b.Packets {
			switch {
			case p.Kind >= wire.PResultBegin:
				atomic.AddInt64(c.results, 1)
			case p.Kind == wire.PEntityBegin || p.Kind == wire.PEntityEnd:
				atomic.AddInt64(c.entity, 1)
			default:
				atomic.AddInt64(c.other, 1)
			}
		}
	}
	return b, err
}

// values is a table's rows without their times, sorted, the workload's
// process named TARGET.
func values(tab *algebra.Table, pid string) []string {
	var out []string
	for _, r := range tab.Rows {
		var vs []string
		for _, v := range r.Vals {
			if v.K == algebra.KindEntity && v.S == pid {
				v.S = "TARGET"
			}
			vs = append(vs, v.String())
		}
		out = append(out, strings.Join(vs, ","))
	}
	slices.Sort(out)
	return out
}

// TestKernelPlacedOverTransport: a program with a per-process count
// (`by`) and a join of Syscall with Process, over a kernel resident
// reached through the gRPC transport, runs placed at the resident (a
// plan fragment): its answer is the workload's known calls — a count
// reaching exactly N, N joined rows naming the workload's command — and
// equals the same program run at the monitor (a resident with NoPlans);
// only result packets cross the wire.
func TestKernelPlacedOverTransport(t *testing.T) {
	kerneltest.Need(t)
	const calls = 3000
	placed := runOverTransport(t, kernel.Options{}, calls, calls, planQuery, 0)
	if placed.err != nil {
		t.Fatal(placed.err)
	}
	unplaced := runOverTransport(t, kernel.Options{NoPlans: true}, calls, calls, planQuery, 0)
	if unplaced.err != nil {
		t.Fatal(unplaced.err)
	}
	if !placed.st.Placed || unplaced.st.Placed {
		t.Fatalf("placed: %v and %v, want true and false", placed.st.Placed, unplaced.st.Placed)
	}
	// No sensed packet crosses the wire; entity packets only as the
	// session's opening snapshot (what was alive when it opened, as
	// every session is sent), not the changes the run saw.
	if placed.other != 0 || placed.results == 0 {
		t.Fatalf("placed: %d sensed packets crossed the wire, %d results", placed.other, placed.results)
	}
	if unplaced.other < calls {
		t.Fatalf("at the monitor: %d sensed packets for %d calls", unplaced.other, calls)
	}
	for i, name := range []string{"count", "join"} {
		got, want := values(placed.rs[i].Table, placed.pid), values(unplaced.rs[i].Table, unplaced.pid)
		if len(got) != calls || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows placed, %d at the monitor, want %d each and equal (%q… against %q…)", name, len(got), len(want), calls, got[:min(3, len(got))], want[:min(3, len(want))])
		}
	}
	var max int64
	for _, r := range placed.rs[0].Table.Rows {
		max = maxOf(max, r.Vals[1].N)
	}
	if max != calls {
		t.Errorf("the count reached %d, want %d", max, calls)
	}
	for _, r := range placed.rs[1].Table.Rows {
		if r.Vals[0].S != "workload" {
			t.Fatalf("a joined row names %q, not the workload's command", r.Vals[0].S)
		}
	}
	t.Logf("wire: placed %d tuples, %d bytes (%d result packets, %d entity packets); at the monitor %d tuples, %d bytes (%d sensed, %d entity)",
		placed.st.WireTuples, placed.st.WireBytes, placed.results, placed.entity, unplaced.st.WireTuples, unplaced.st.WireBytes, unplaced.other, unplaced.entity)
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// TestKernelPlanStateBound: a plan fragment at a kernel resident whose
// operators outgrow its state bound stops, the run ends incomplete (an
// ErrIncomplete naming the bound), and every row it answered is one of
// the workload's — incomplete, not wrong.
func TestKernelPlanStateBound(t *testing.T) {
	kerneltest.Need(t)
	const calls = 100000
	// The first statement streams its rows; the second holds every
	// getppid call of the process until the process ends (it does not,
	// within the run): its state grows with every call.
	q := `range of s is Syscall
range of p is Process
retrieve (p.Command, s.Name) where s.Process = p.Process and p.Process = $target and s.Name = "getppid"
retrieve (p.Command, s.Name) where s.Process = p.Process and p.Process = $target and s.Name = "getppid" when s precede end of p`
	const limit = 1 << 20
	run := runOverTransport(t, kernel.Options{}, calls, calls, q, limit)
	if !errors.Is(run.err, remote.ErrIncomplete) || !strings.Contains(run.err.Error(), "state bound") {
		t.Fatalf("a fragment over its state bound of %d bytes: error %v, want one saying it stopped at its state bound", limit, run.err)
	}
	if !run.st.Placed || run.other != 0 {
		t.Fatalf("placed %v, %d sensed packets", run.st.Placed, run.other)
	}
	rows := append(run.rs[0].Table.Rows, run.rs[1].Table.Rows...)
	for _, r := range rows {
		if r.Vals[0].S != "workload" || r.Vals[1].S != "getppid" {
			t.Fatalf("a row that is not one of the workload's calls: %v", r.Vals)
		}
	}
	if len(run.rs[1].Table.Rows) >= calls {
		t.Errorf("%d rows of %d calls: the fragment stopped, yet answered every call", len(run.rs[1].Table.Rows), calls)
	}
	t.Logf("%v; %d and %d rows of %d calls answered", run.err, len(run.rs[0].Table.Rows), len(run.rs[1].Table.Rows), calls)
}

// TestKernelPlanSessions: the kernel resident's plan sessions are package
// plans' — equal programs share one fragment, at most plans.MaxPlans
// run, a plan must be a session's first command and a plan session takes
// no other — and NoPlans refuses them; an in-process connection offers
// no plans, a served one does.
func TestKernelPlanSessions(t *testing.T) {
	kerneltest.Need(t)
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if !res.Hello().Has(wire.CapPlans) || res.Local().Hello().Has(wire.CapPlans) {
		t.Fatalf("plans offered: served %v, in process %v; want true, false", res.Hello().Has(wire.CapPlans), res.Local().Hello().Has(wire.CapPlans))
	}
	sys := uint16(slices.Index(res.Hello().Sensors, "Syscall"))
	plan := func(i int) (*kernel.Session, error) {
		s := res.Open()
		text := fmt.Sprintf(`range of p is Process range of s is Syscall retrieve (s.Name, N = %d) where p.Process = s.Process and p.Process = "1"`, i)
		return s, s.Apply(&wire.Command{Kind: wire.CPlan, Text: text})
	}
	var first *kernel.Session
	for i := range plans.MaxPlans {
		s, err := plan(i)
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		defer s.Close()
		if i == 0 {
			first = s
		}
	}
	if s, err := plan(1); err != nil {
		t.Fatalf("an equal program: %v, want it shared", err)
	} else {
		defer s.Close()
	}
	if n := res.PlanFragments(); n != plans.MaxPlans {
		t.Fatalf("%d fragments run, want %d", n, plans.MaxPlans)
	}
	if _, err := plan(plans.MaxPlans); err == nil || !strings.Contains(err.Error(), "plan fragments") {
		t.Fatalf("one fragment more than the bound: %v, want refused", err)
	}
	if err := first.Apply(&wire.Command{Kind: wire.CEnableAll, Sensor: sys}); err == nil || !strings.Contains(err.Error(), "a plan session takes no") {
		t.Fatalf("an enable in a plan session: %v", err)
	}
	s := res.Open()
	defer s.Close()
	if err := s.Apply(&wire.Command{Kind: wire.CEnableAll, Sensor: sys}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&wire.Command{Kind: wire.CPlan, Text: "x"}); err == nil || !strings.Contains(err.Error(), "first command") {
		t.Fatalf("a plan after an enable: %v", err)
	}
	first.Close()
	for deadline := time.Now().Add(10 * time.Second); res.PlanFragments() == plans.MaxPlans && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if s, err := plan(plans.MaxPlans); err != nil {
		t.Fatalf("once one ended: %v", err)
	} else {
		s.Close()
	}
	no, err := kernel.New(kernel.Options{NoPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	defer no.Close()
	ns := no.Open()
	defer ns.Close()
	if no.Hello().Has(wire.CapPlans) || ns.Apply(&wire.Command{Kind: wire.CPlan, Text: "x"}) == nil {
		t.Fatal("a resident with NoPlans offers or runs plans")
	}
}

// placedByRule reports whether the rule "placement cost" (with "resident
// plans") places text at a kernel resident that runs plans.
func placedByRule(t testing.TB, text string) bool {
	t.Helper()
	res, err := kernel.New(kernel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	prog, err := query.Compile(res.Catalog(), []query.Source{{Name: "plan", Text: text}}, check.Options{Params: map[string]string{"target": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	return remote.Placeable(prog, remote.LiveOptions{})
}

// TestKernelPlacementCost: the rule "placement cost" keeps the running
// count and the join (a result per call, each larger than the call's
// packet: 20.1 against 10.3 bytes per result in
// BenchmarkKernelWirePlaced) at the monitor, and places min and max of
// the names called (3,101 against 104,269); forced, the count and join
// are still placeable (TestKernelPlacedOverTransport).
func TestKernelPlacementCost(t *testing.T) {
	kerneltest.Need(t)
	if placedByRule(t, planQuery) {
		t.Error("the running count and the join are placed")
	}
	if !placedByRule(t, minMaxQuery) {
		t.Error("min and max are not placed")
	}
}

// minMaxQuery: min and max of the names the target called, new only at a
// new extreme.
const minMaxQuery = `range of s is Syscall
retrieve (First = min(s.Name where s.Process = $target for ever), Last = max(s.Name where s.Process = $target for ever))`

// BenchmarkKernelWirePlaced: bytes on the wire per result, a program
// placed at a kernel resident (over the gRPC transport) against the same
// program at the monitor (a resident with NoPlans), over the workload's
// getppid calls: an aggregate whose answer changes a few times (min and
// max of the names called), and one that changes at every call (a
// running count per process, with a join of Syscall and Process). Both
// are run placed (forced); the benchmark fails if the rule "placement
// cost" places one whose placed bytes per result exceed the monitor's
// (placed-by-rule: 1 when it places it).
func BenchmarkKernelWirePlaced(b *testing.B) {
	kerneltest.Need(b)
	const calls = 20000
	for _, c := range []struct {
		name, text string
		rows       int
	}{
		{"minmax", minMaxQuery, 0},
		{"count+join", planQuery, calls},
	} {
		b.Run(c.name, func(b *testing.B) {
			byRule := placedByRule(b, c.text)
			for range b.N {
				perResult := map[string]float64{}
				for _, side := range []struct {
					name string
					opts kernel.Options
				}{{"placed", kernel.Options{}}, {"monitor", kernel.Options{NoPlans: true}}} {
					r := runOverTransport(b, side.opts, calls, c.rows, c.text, 0)
					if r.err != nil {
						b.Fatal(r.err)
					}
					n := 0
					for _, res := range r.rs {
						n += len(res.Table.Rows)
					}
					perResult[side.name] = float64(r.st.WireBytes) / float64(max(n, 1))
					b.ReportMetric(perResult[side.name], side.name+"-B/result")
					b.ReportMetric(float64(r.st.WireTuples)/float64(max(n, 1)), side.name+"-tuples/result")
				}
				// The rule "placement cost" places only what spares the
				// wire: measured, placed bytes per result are at most
				// the monitor's for what it places.
				if byRule && perResult["placed"] > perResult["monitor"] {
					b.Errorf("placed by the rule, but %.1f bytes per result placed against %.1f at the monitor", perResult["placed"], perResult["monitor"])
				}
				if byRule {
					b.ReportMetric(1, "placed-by-rule")
				} else {
					b.ReportMetric(0, "placed-by-rule")
				}
			}
		})
	}
}
