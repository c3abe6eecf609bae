package remote_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/truth"
)

// liveQueries are run live against the demo subject and over its ground
// truth: the paper's two queries and more, exercising every α variant and
// the resident-side enabling (whole types, constants, triggers, samplers).
var liveQueries = []struct{ name, text string }{
	{"ResumedbyP1", `range of S is SendMessage
range of W is Waiting
retrieve ResumedbyP1 (Process = W.Process)
valid at end of W
where S.Mailbox = W.Mailbox and S.Process = "P1"
when S precede end of W`},
	{"RunningOnEvery10Seconds", `range of RO is RunningOn
range of C is Clock[10]
retrieve RunningOnEvery10Seconds (Process = RO.Process, Processor = RO.Processor)
when C overlap RO`},
	{"process-states", `range of p is Process retrieve (p.Process, p.State)`},
	{"all-sends", `range of s is SendMessage retrieve (s.Process, s.Mailbox)`},
	{"waits", `range of w is Waiting retrieve (w.Process, w.Mailbox)`},
	{"sends-of-P2", `range of s is SendMessage retrieve (s.Mailbox) where s.Process = "P2"`},
	{"waits-on-M3", `range of w is Waiting retrieve (w.Process) valid at end of w where w.Mailbox = "M3"`},
	{"waiting-state-join", `range of w is Waiting
range of p is Process
retrieve (w.Process, p.State) where w.Process = p.Process`},
	{"sender-and-waiter", `range of s is SendMessage
range of w is Waiting
retrieve (Sender = s.Process, Waiter = w.Process) valid at end of w where s.Mailbox = w.Mailbox when s precede end of w`},
	{"P1-running-sampled", `range of r is RunningOn
range of c is Clock[5]
retrieve (r.Processor) valid at c where r.Process = "P1" when c overlap r`},
	{"waiting-at-ticks", `range of p is Process
range of c is Clock[20]
retrieve (p.Process) valid at c where p.State = "Waiting" when c overlap p`},
	{"queue-length", `range of m is Mailbox
range of w is Waiting
retrieve (m.Mailbox, Length = count(w.Process by m.Mailbox where w.Mailbox = m.Mailbox))`},
	{"send-to-unblock", `range of s is SendMessage
range of w is Waiting
retrieve (Sender = s.Process, Recipient = w.Process, Interval = end of w - begin of s) valid at end of w where s.Mailbox = w.Mailbox when s overlap w`},
	{"P1-send-rate", `range of p is Process
range of s is SendMessage
retrieve (p.Process, Rate = count(s.Mailbox by p.Process where s.Process = p.Process for each 10s)) where p.Process = "P1"`},
	{"sends-so-far-longest-wait", `range of s is SendMessage
range of w is Waiting
retrieve (Sends = count(s.Process for ever), Longest = max(end of w - begin of w for ever))`},
	{"sends-while-running", `range of p is Process
range of s is SendMessage
retrieve (s.Process, s.Mailbox) where p.Process = s.Process and p.State = "Running"`},
	{"two-phase-busy-mailboxes", `range of m is Mailbox
range of s is SendMessage
retrieve into Busy (m.Mailbox, N = count(s.Process by m.Mailbox where s.Mailbox = m.Mailbox for each 10s))
range of b is Busy
range of w is Waiting
retrieve (w.Process, w.Mailbox) where b.Mailbox = w.Mailbox and b.N > 3`},
	{"two-phase-ever", `range of m is Mailbox
range of s is SendMessage
retrieve into Sent (m.Mailbox, N = count(s.Process by m.Mailbox where s.Mailbox = m.Mailbox for ever))
range of b is Sent
range of w is Waiting
retrieve (w.Process, w.Mailbox, b.N) valid at end of w where b.Mailbox = w.Mailbox and b.N >= 20`},
	{"two-phase-by-sensed", `range of s is SendMessage
retrieve into Hot (s.Mailbox, N = count(s.Process by s.Mailbox for each 5s))
range of h is Hot
range of w is Waiting
retrieve (w.Mailbox, Longest = max(end of w - begin of w for ever)) where h.Mailbox = w.Mailbox and 2 < h.N`},
	{"sends-after-unblock", `range of w is Waiting
retrieve into Unblocked (P = w.Process) valid at end of w
range of u is Unblocked
range of s is SendMessage
retrieve (s.Process, s.Mailbox) valid at s where u.P = s.Process when u precede s`},
}

func demoCatalog(t testing.TB) *algebra.Catalog {
	return testkit.CompileSpec(t, "os.sdl", ossensors.SDL)
}

func renderTables(rs []query.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:\n", r.Stmt.Name)
		b.WriteString(testkit.Rows(r.Table))
	}
	return b.String()
}

// runDemo runs the demo subject with the program live, in one process, and
// returns the live results, stats and the ground truth.
func runDemo(t *testing.T, prog *query.Program, cfg demo.Config, d time.Duration) ([]query.Result, remote.LiveStats, *algebra.History) {
	return runDemoWith(t, prog, cfg, d, remote.LiveOptions{}, nil)
}

// runDemoWith is runDemo with live options and a wrapper around the
// resident's connection.
func runDemoWith(t testing.TB, prog *query.Program, cfg demo.Config, d time.Duration, opts remote.LiveOptions, wrap func(wire.Conn) wire.Conn) ([]query.Result, remote.LiveStats, *algebra.History) {
	t.Helper()
	rs, st, h, err := runDemoErr(t, prog, cfg, d, opts, wrap)
	if err != nil {
		t.Fatal(err)
	}
	return rs, st, h
}

// sameTables fails t when the results differ from the truth's (want),
// leaving both in files to diff.
func sameTables(t *testing.T, got, want []query.Result, what string) {
	t.Helper()
	if g, w := renderTables(got), renderTables(want); g != w {
		dir, _ := os.MkdirTemp("", "tqmon-live-")
		os.WriteFile(filepath.Join(dir, "live.txt"), []byte(g), 0o644)
		os.WriteFile(filepath.Join(dir, "truth.txt"), []byte(w), 0o644)
		t.Fatalf("%s results differ from the ground truth's (diff %s/live.txt %s/truth.txt)", what, dir, dir)
	}
}

// truthResident is the demo's resident, recording the ground truth, and
// its clock.
func truthResident(t testing.TB, cfg demo.Config) (*resident.Resident, *truth.Recorder, *demo.SubjectClock) {
	clock := demo.NewClock(cfg.Scale)
	rec := truth.New(demoCatalog(t), 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	h := res.Hello()
	rec.SetClock(h.MonoBase, h.WallBase)
	return res, rec, clock
}

// liveQuery compiles the live query named name alone.
func liveQuery(t testing.TB, name string) *query.Program {
	for _, q := range liveQueries {
		if q.name == name {
			prog, err := query.Compile(demoCatalog(t), []query.Source{{Name: name, Text: q.text}}, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return prog
		}
	}
	t.Fatalf("no live query %s", name)
	return nil
}

// notWrong fails t for each tuple of got that the truth (want) does not
// hold — one still open at the run's end (to forever) may have ended
// later in the truth — and returns how many of the truth's tuples ended
// before end are missing from got.
func notWrong(t *testing.T, got, want *algebra.Table, end algebra.Time) (missing int) {
	t.Helper()
	truthRows, begun, gotRows := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range want.Rows {
		truthRows[fmt.Sprint(r.Vals, r.From, r.To)] = true
		begun[fmt.Sprint(r.Vals, r.From)] = true
	}
	for _, r := range got.Rows {
		gotRows[fmt.Sprint(r.Vals, r.From, r.To)] = true
		if !truthRows[fmt.Sprint(r.Vals, r.From, r.To)] && !(r.To == algebra.Forever && begun[fmt.Sprint(r.Vals, r.From)]) {
			t.Errorf("answered %v [%d, %d), which the truth does not hold", r.Vals, r.From, r.To)
		}
	}
	for _, r := range want.Rows {
		if r.To < end && !gotRows[fmt.Sprint(r.Vals, r.From, r.To)] {
			missing++
		}
	}
	return missing
}

// liveOut is what a monitor's run returned.
type liveOut struct {
	rs  []query.Result
	st  remote.LiveStats
	err error
}

// startMonitor starts RunLive over conn and returns, once the residents
// have been told what to enable (opts.Ready), where its outcome will be.
func startMonitor(t testing.TB, ctx context.Context, prog *query.Program, conn wire.Conn, opts remote.LiveOptions) <-chan liveOut {
	t.Helper()
	ready := make(chan struct{})
	done := make(chan liveOut, 1)
	opts.Ready = func() { close(ready) }
	go func() {
		rs, st, err := remote.RunLive(ctx, prog, []wire.Conn{conn}, opts)
		done <- liveOut{rs, st, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("monitor ended before starting: %v", o.err)
	}
	return done
}

// runDemoErr is runDemoWith returning the run's error (its results, stats
// and truth beside it).
func runDemoErr(t testing.TB, prog *query.Program, cfg demo.Config, d time.Duration, opts remote.LiveOptions, wrap func(wire.Conn) wire.Conn) ([]query.Result, remote.LiveStats, *algebra.History, error) {
	t.Helper()
	res, rec, clock := truthResident(t, cfg)
	if wrap == nil {
		// The monitor's own network runs the plans (plan fragments have
		// tests of their own, TestLivePlaced*: asPlaced).
		wrap = noPlans
	}
	done := startMonitor(t, context.Background(), prog, wrap(res.Local()), opts)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	demo.New(ossensors.New(res), cfg).Run(ctx)
	stop := clock.Stop()
	res.Close()
	o := <-done
	truthH := rec.History(stop)
	// A loaded machine's samplers may skip ticks, reported as lost: the
	// answers are cut out of those gaps, and so are the truth's, given
	// them (the rule at gaps keeps a sampled relation's tuples).
	for _, ob := range o.st.Observed {
		for _, g := range ob.Gaps {
			t.Logf("%s: %s", ob.Rel, remote.Loss{Rel: ob.Rel, Gap: g}.Format(algebra.TimeClock))
			truthH.Table(algebra.LostName).Add([]algebra.Value{algebra.Str(ob.Rel), algebra.Int(int64(g.Lost))}, g.From, g.To)
		}
	}
	return o.rs, o.st, truthH, o.err
}

// TestLiveMatchesTruth: live results from the demo equal the same queries
// over the ground truth the demo recorded, for several seeds.
func TestLiveMatchesTruth(t *testing.T) {
	cat := demoCatalog(t)
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			var srcs []query.Source
			for _, q := range liveQueries {
				srcs = append(srcs, query.Source{Name: q.name, Text: q.text})
			}
			prog, err := query.Compile(cat, srcs, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := demo.DefaultConfig(seed)
			got, st, h := runDemo(t, prog, cfg, 400*time.Millisecond)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			sameTables(t, got, want, "live")
			rows := 0
			for _, r := range want {
				rows += len(r.Table.Rows)
			}
			if rows == 0 {
				t.Fatal("no results at all: the run was too short")
			}
			t.Logf("%d result rows; packets %v", rows, st.Packets)
		})
	}
}

// TestLiveResumedbyP1Packets: live, the residents deliver only P1's sends
// and the unblocks on mailboxes after P1's first send to them (counted
// from the ground truth), and the result equals the truth's.
func TestLiveResumedbyP1Packets(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: liveQueries[0].text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, st, h := runDemo(t, prog, demo.DefaultConfig(4), 400*time.Millisecond)
	want, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(got) != renderTables(want) {
		t.Fatal("live result differs from the ground truth's")
	}
	p1, first := 0, map[string]algebra.Time{}
	for _, s := range h.Table("SendMessage").Rows {
		if s.Vals[0].S == "P1" {
			p1++
			if t0, ok := first[s.Vals[1].S]; !ok || s.From < t0 {
				first[s.Vals[1].S] = s.From
			}
		}
	}
	unblocks := 0
	for _, w := range h.Table("Waiting").Rows {
		if s, ok := first[w.Vals[1].S]; ok && s < w.To {
			unblocks++
		}
	}
	if st.Packets["SendMessage"] != p1 || st.Packets["Waiting"] != unblocks || st.Packets["RunningOn"] != 0 {
		t.Errorf("packets %v; want SendMessage %d (P1's sends), Waiting %d (unblocks on mailboxes after P1 sent to them), nothing else",
			st.Packets, p1, unblocks)
	}
	if all := len(h.Table("SendMessage").Rows); p1 == all || p1 == 0 {
		t.Fatalf("P1 made %d of %d sends: the workload does not tell the plans apart", p1, all)
	}
	t.Logf("packets %v of %d sends and %d waits", st.Packets, len(h.Table("SendMessage").Rows), len(h.Table("Waiting").Rows))
}

// TestLiveTwoResidents: two subjects (two residents) monitored at once;
// their streams are merged in timestamp order by watermark, and the
// results equal the queries over the union of their ground truths.
func TestLiveTwoResidents(t *testing.T) {
	cat := demoCatalog(t)
	var srcs []query.Source
	for _, q := range liveQueries[:6] {
		srcs = append(srcs, query.Source{Name: q.name, Text: q.text})
	}
	prog, err := query.Compile(cat, srcs, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, _, truths, err := runTwoDemos(t, prog, 300*time.Millisecond, remote.LiveOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The union of the two truths, observed over both windows.
	merged := algebra.NewHistory(cat)
	merged.Window = &algebra.Window{From: 0}
	for _, h := range truths {
		for name, tab := range h.Tables {
			merged.Tables[name].Rows = append(merged.Tables[name].Rows, tab.Rows...)
		}
		merged.Window.To = max(merged.Window.To, h.Window.To)
	}
	want, _, err := prog.RunHistory(merged)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := renderTables(rs), renderTables(want); g != w {
		dir, _ := os.MkdirTemp("", "tqmon-live2-")
		os.WriteFile(filepath.Join(dir, "live.txt"), []byte(g), 0o644)
		os.WriteFile(filepath.Join(dir, "truth.txt"), []byte(w), 0o644)
		t.Fatalf("merged live results differ from the union of the truths (%s)", dir)
	}
}

// runTwoDemos runs two demo subjects (seeds 10 and 11, each on its own
// resident, wrapped by wrap when set) for d, monitored at once with the
// program live, and returns the live results, stats and error, and each
// subject's ground truth up to the later stop.
func runTwoDemos(t *testing.T, prog *query.Program, d time.Duration, opts remote.LiveOptions, wrap func(i int, c wire.Conn) wire.Conn) ([]query.Result, remote.LiveStats, []*algebra.History, error) {
	t.Helper()
	type subject struct {
		clock *demo.SubjectClock
		rec   *truth.Recorder
		res   *resident.Resident
	}
	var subs []subject
	var conns []wire.Conn
	tcat := prog.Catalog
	if tcat.Fleet {
		tcat = demoCatalog(t) // each host's truth is its own
	}
	for i := 0; i < 2; i++ {
		clock := demo.NewClock(1000)
		rec := truth.New(tcat, 0, 0)
		res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
		h := res.Hello()
		rec.SetClock(h.MonoBase, h.WallBase)
		subs = append(subs, subject{clock, rec, res})
		var c wire.Conn = res.Local()
		if wrap != nil {
			c = wrap(i, c)
		}
		conns = append(conns, c)
	}
	ready := make(chan struct{})
	type out struct {
		rs  []query.Result
		st  remote.LiveStats
		err error
	}
	done := make(chan out, 1)
	go func() {
		opts.Ready = func() { close(ready) }
		rs, st, err := remote.RunLive(context.Background(), prog, conns, opts)
		done <- out{rs, st, err}
	}()
	<-ready
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	finished := make(chan int64, 2)
	for i, s := range subs {
		go func() {
			demo.New(ossensors.New(s.res), demo.DefaultConfig(uint64(10+i))).Run(ctx)
			finished <- s.clock.Stop()
			s.res.Close()
		}()
	}
	stop := max(<-finished, <-finished)
	o := <-done
	var truths []*algebra.History
	for _, s := range subs {
		truths = append(truths, s.rec.History(stop))
	}
	return o.rs, o.st, truths, o.err
}

// noCaps hides a resident's optional capabilities (as a kernel resident
// has none).
type noCaps struct{ wire.Conn }

func (c noCaps) Hello() *wire.Hello {
	h := *c.Conn.Hello()
	h.Caps = nil
	return &h
}

// TestLiveWithoutTriggers: a resident that does not advertise triggers
// never gets one; the restricted sensor is widened and α keeps exactly
// what the plan needs, so the result is unchanged.
func TestLiveWithoutTriggers(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: liveQueries[0].text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, st, h := runDemoWith(t, prog, demo.DefaultConfig(4), 300*time.Millisecond, remote.LiveOptions{},
		func(c wire.Conn) wire.Conn { return noCaps{c} })
	want, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(got) != renderTables(want) {
		t.Fatal("live result differs from the ground truth's")
	}
	if !slices.Equal(st.Widened, []string{"W"}) {
		t.Errorf("widened %v, want [W]", st.Widened)
	}
	if n, all := st.Packets["Waiting"], len(h.Table("Waiting").Rows); n != all {
		t.Errorf("Waiting packets %d; widened, every one of the %d waits should arrive", n, all)
	}
}

// TestLiveTap: the tap sees the primitive relations exactly as the ground
// truth has them — what a recorder stores.
func TestLiveTap(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{
		{Name: "a", Text: `range of s is SendMessage retrieve (s.Process)`},
		{Name: "b", Text: `range of w is Waiting retrieve (w.Process)`},
		{Name: "c", Text: `range of r is RunningOn retrieve (r.Process)`},
	}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := algebra.NewHistory(cat)
	type openTuple struct {
		rel string
		row algebra.Tuple
	}
	open := map[uint64]openTuple{}
	last := algebra.Beginning
	var order error
	tap := func(in remote.Input) {
		if in.T < last && order == nil {
			order = fmt.Errorf("input at %d after %d", in.T, last)
		}
		last = in.T
		tab := rebuilt.Table(in.Rel)
		switch {
		case in.Entity && in.Begin, !in.Entity && in.Kind == stream.PacketBegin:
			open[in.Key] = openTuple{in.Rel, algebra.Tuple{Vals: slices.Clone(in.Vals), From: in.T}}
		case in.Kind == stream.PacketSample:
			if _, ok := open[in.Key]; !ok {
				open[in.Key] = openTuple{in.Rel, algebra.Tuple{Vals: slices.Clone(in.Vals), From: in.From}}
			}
		case in.Entity, in.Kind == stream.PacketEnd, in.Kind == stream.PacketSampleEnd:
			o, ok := open[in.Key]
			if !ok {
				o.row = algebra.Tuple{Vals: slices.Clone(in.Vals), From: in.From}
			}
			delete(open, in.Key)
			o.row.To = in.T
			tab.Rows = append(tab.Rows, o.row)
		case in.Kind == stream.PacketEvent:
			tab.AddEvent(slices.Clone(in.Vals), in.T)
		case in.Kind == stream.PacketWhole:
			tab.Add(slices.Clone(in.Vals), in.From, in.T)
		default:
			t.Errorf("unexpected input %+v", in)
		}
	}
	_, _, h := runDemoWith(t, prog, demo.DefaultConfig(7), 300*time.Millisecond, remote.LiveOptions{Tap: tap}, nil)
	if order != nil {
		t.Fatal(order)
	}
	for _, o := range open {
		rebuilt.Table(o.rel).Add(o.row.Vals, o.row.From, algebra.Forever)
	}
	for _, name := range []string{"SendMessage", "Waiting", "RunningOn", "Process", "Mailbox", "Processor"} {
		g, w := rebuilt.Table(name), h.Table(name)
		g.SortRows()
		w.SortRows()
		if gs, ws := fmt.Sprint(g.Rows), fmt.Sprint(w.Rows); gs != ws {
			t.Errorf("%s: tapped\n%s\nwant\n%s", name, gs, ws)
		} else if len(g.Rows) == 0 {
			t.Errorf("%s: no tuples", name)
		}
	}
}

// TestLiveAggregateEnablesOnlyTheGroup: a rate of P1's sends (a moving
// count over P1's lifetime) enables the send sensor for P1 alone — the
// query reads only P1's group, and the rewriter carries that into the
// aggregate — and still equals the query over the ground truth.
func TestLiveAggregateEnablesOnlyTheGroup(t *testing.T) {
	cat := demoCatalog(t)
	var text string
	for _, q := range liveQueries {
		if q.name == "P1-send-rate" {
			text = q.text
		}
	}
	prog, err := query.Compile(cat, []query.Source{{Name: "rate", Text: text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, st, h := runDemo(t, prog, demo.DefaultConfig(5), 300*time.Millisecond)
	want, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	if renderTables(got) != renderTables(want) {
		t.Fatal("live result differs from the ground truth's")
	}
	p1 := 0
	for _, s := range h.Table("SendMessage").Rows {
		if s.Vals[0].S == "P1" {
			p1++
		}
	}
	if all := len(h.Table("SendMessage").Rows); p1 == 0 || p1 == all {
		t.Fatalf("P1 made %d of %d sends: the workload does not tell the plans apart", p1, all)
	}
	if st.Packets["SendMessage"] != p1 || len(st.Widened) != 0 {
		t.Errorf("packets %v, widened %v; want SendMessage %d (P1's sends only), nothing widened", st.Packets, st.Widened, p1)
	}
}

// without hides one capability (an older resident), and plans (the
// newest: the tests that hide a capability test the monitor's network).
type without struct {
	wire.Conn
	cap string
}

func (c without) Hello() *wire.Hello {
	h := *c.Conn.Hello()
	h.Caps = slices.DeleteFunc(slices.Clone(h.Caps), func(s string) bool { return s == c.cap || s == wire.CapPlans })
	return &h
}

func noPlans(c wire.Conn) wire.Conn { return without{c, wire.CapPlans} }

// asPlaced leaves the resident as it is: it runs plan fragments.
func asPlaced(c wire.Conn) wire.Conn { return c }

func noWhile(c wire.Conn) wire.Conn     { return without{c, wire.CapWhile} }
func noFragments(c wire.Conn) wire.Conn { return without{c, wire.CapFragments} }

// TestLiveEntitySelectPackets: "the sends of processes in a state", live.
// The resident holds SendMessage enabled for a process exactly while it is
// in that state (a While trigger on the Process entity relation). In the
// demo a process sends only while Running: for Running every send must
// arrive (the enable is set before the process's first send after it
// starts running, or the result would miss it); for Ready none may (the
// enable is cleared before the process runs again). A resident without
// While widens the sensor and every send arrives. Every result equals the
// truth's.
func TestLiveEntitySelectPackets(t *testing.T) {
	cat := demoCatalog(t)
	query1 := func(state string) string {
		return `range of p is Process
range of s is SendMessage
retrieve (s.Process, s.Mailbox) where p.Process = s.Process and p.State = "` + state + `"`
	}
	for _, c := range []struct {
		name, state string
		wrap        func(wire.Conn) wire.Conn
	}{
		{"running", "Running", nil},
		{"ready", "Ready", nil},
		{"ready-no-while", "Ready", noWhile},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: query1(c.state)}}, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, st, h := runDemoWith(t, prog, demo.DefaultConfig(5), 300*time.Millisecond, remote.LiveOptions{}, c.wrap)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			if renderTables(got) != renderTables(want) {
				t.Fatal("live result differs from the ground truth's")
			}
			procs := h.Table("Process")
			in, all := 0, 0
			for _, s := range h.Table("SendMessage").Rows {
				all++
				for _, p := range procs.Rows {
					if p.Vals[0].S == s.Vals[0].S && p.Vals[1].S == c.state && p.From <= s.From && s.From < p.To {
						in++
						break
					}
				}
			}
			if all == 0 {
				t.Fatal("no sends: the run was too short")
			}
			wantN := in
			if c.wrap != nil {
				wantN = all
				if !slices.Equal(st.Widened, []string{"s"}) {
					t.Errorf("widened %v, want [s]", st.Widened)
				}
			} else if len(st.Widened) != 0 {
				t.Errorf("widened %v, want none", st.Widened)
			}
			if n := st.Packets["SendMessage"]; n != wantN {
				t.Errorf("SendMessage packets %d, want %d (%d of %d sends by a %s process)", n, wantN, in, all, c.state)
			}
			t.Logf("packets %v; %d of %d sends by a %s process", st.Packets, in, all, c.state)
		})
	}
}

// countingConn reports, for sensor 0, one more packet wanted with each
// batch: its cumulative count is the batches it delivered.
type countingConn struct {
	wire.Conn
	n *atomic.Uint64
}

func (c countingConn) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if b != nil {
		n := c.n.Add(1)
		b.Counts = append(slices.DeleteFunc(b.Counts, func(x wire.Count) bool { return x.Sensor == 0 }), wire.Count{Sensor: 0, Wanted: n})
	}
	return b, err
}

// With several residents, LiveStats' counts are their sum (each
// resident's are cumulative; they overwrote each other before).
func TestLiveStatsSumResidents(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: liveQueries[0].text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ns [2]atomic.Uint64
	_, st, _, err := runTwoDemos(t, prog, 200*time.Millisecond, remote.LiveOptions{}, func(i int, c wire.Conn) wire.Conn {
		return countingConn{c, &ns[i]}
	})
	if err != nil {
		t.Fatal(err)
	}
	name := ossensors.Spec().Sensors[0].Name
	if got, want := st.Wanted[name], ns[0].Load()+ns[1].Load(); got != want || ns[0].Load() == 0 || ns[1].Load() == 0 {
		t.Fatalf("Wanted[%s] = %d, want the sum %d + %d", name, got, ns[0].Load(), ns[1].Load())
	}
}

// TestLiveStatsAreTheRuns: a resident's counts are cumulative over its
// life, every session's; a session's batches count from its opening, so
// a run's Wanted and Dropped are what its resident produced while it ran. A second run on the same resident that
// does not read SendMessage reports none produced for it, though the
// first run's sends are in the resident's counts (before, they were
// reported as the second run's: "0 packets received, N produced while
// enabled").
func TestLiveStatsAreTheRuns(t *testing.T) {
	cat := demoCatalog(t)
	compile := func(text string) *query.Program {
		prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: text}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return prog
	}
	cfg := demo.DefaultConfig(3)
	clock := demo.NewClock(cfg.Scale)
	res := resident.New(ossensors.Spec(), demo.Options(clock, truth.New(cat, 0, 0)))
	defer res.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go demo.New(ossensors.New(res), cfg).Run(ctx)
	_, st1, err := remote.RunLive(context.Background(), compile(`range of s is SendMessage retrieve (s.Process, s.Mailbox)`),
		[]wire.Conn{res.Local()}, remote.LiveOptions{Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if st1.Packets["SendMessage"] == 0 || st1.Wanted["SendMessage"] == 0 {
		t.Fatalf("first run: %d sends received, %d wanted", st1.Packets["SendMessage"], st1.Wanted["SendMessage"])
	}
	_, st2, err := remote.RunLive(context.Background(), compile(`range of w is Waiting retrieve (w.Process, w.Mailbox)`),
		[]wire.Conn{res.Local()}, remote.LiveOptions{Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The counts are the resident's while the session was open: the
	// first session may still have had SendMessage enabled for a round or
	// two as the second opened — a few, not the first run's.
	if p, w := st2.Packets["SendMessage"], st2.Wanted["SendMessage"]; p != 0 || w > st1.Wanted["SendMessage"]/4 {
		t.Errorf("second run, which does not read SendMessage: %d received, %d produced while enabled (the first run: %d)",
			p, w, st1.Wanted["SendMessage"])
	}
}

func noCount(c wire.Conn) wire.Conn { return without{c, wire.CapCount} }

// TestLiveTwoPhasePackets: two-phase monitoring, live. Waiting is traced
// only on mailboxes whose send count in the last 10 s exceeds 3: the
// resident counts the sends itself (a counting trigger), enables Waiting
// on a mailbox in the send that makes its count and, with While, takes
// the enable back in its first drain round after the count falls, the
// waits in progress then still sent at their end. So the waits sent are
// bounded, counted here against the ground truth: at least every wait
// that overlaps a span where the resident's count (inclusive window) is
// over 3 — what the answer needs — and at most those overlapping such a
// span extended by the drain's lag (bounded by the time two drain rounds
// took, read from the batches' watermarks). A resident that holds the
// enable for the session (no wire.CapCountWhile) sends exactly the waits
// on a mailbox that end after its first busy instant; one without
// counting triggers widens Waiting to every mailbox. All equal the
// truth's results.
func TestLiveTwoPhasePackets(t *testing.T) {
	cat := demoCatalog(t)
	var text string
	for _, q := range liveQueries {
		if q.name == "two-phase-busy-mailboxes" {
			text = q.text
		}
	}
	prog, err := query.Compile(cat, []query.Source{{Name: "two-phase", Text: text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const window, over = 10 * algebra.Time(time.Second), 3
	// Eight mailboxes: few are busy, and busy ones seldom have a waiter
	// (sends pile up there), so the plans' packets differ most; three: most
	// are busy, and waits overlap busy spells (results).
	three := demo.DefaultConfig(7)
	three.Mailboxes = 3
	for _, c := range []struct {
		name    string
		cfg     demo.Config
		cap     string // the capability the resident is run without
		results bool   // the run must have results; else its plans' packets must differ
	}{
		{"count", demo.DefaultConfig(7), "", false},
		{"count-hold", demo.DefaultConfig(7), wire.CapCountWhile, false},
		{"no-count", demo.DefaultConfig(7), wire.CapCount, false},
		{"count-3-mailboxes", three, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The demo runs in real time: under load its 400 ms may hold
			// too few sends to make a mailbox busy (0 of 8 at a load of
			// 15). Such a run is checked against the truth all the same,
			// and the workload run again, twice as long, until it tells
			// the plans apart (three times at most).
			// A run whose workload was too busy (every mailbox busy, as on
			// a quiet machine, where the demo's 400 ms hold many sends)
			// runs again half as long instead.
			next := func(d time.Duration) time.Duration { return 2 * d }
			for run, d := 1, 400*time.Millisecond; ; run, d = run+1, next(d) {
				wm := &watermarks{}
				wrap := func(conn wire.Conn) wire.Conn {
					conn = noPlans(conn) // the monitor runs the plans: the resident's enabling is what is counted
					if c.cap != "" {
						conn = without{conn, c.cap}
					}
					wm.Conn = conn
					return wm
				}
				got, st, h := runDemoWith(t, prog, c.cfg, d, remote.LiveOptions{}, wrap)
				want, _, err := prog.RunHistory(h)
				if err != nil {
					t.Fatal(err)
				}
				if renderTables(got) != renderTables(want) {
					t.Fatalf("live result differs from the ground truth's:\n%s\nwant:\n%s", renderTables(got), renderTables(want))
				}
				// The spans each mailbox has more than 3 sends within the
				// resident's inclusive window [t − 10 s, t].
				sends := map[string][]algebra.Time{}
				for _, s := range h.Table("SendMessage").Rows {
					sends[s.Vals[1].S] = append(sends[s.Vals[1].S], s.From)
				}
				busy := map[string][]span{}
				for m, ts := range sends {
					busy[m] = busySpans(ts, over+1, window)
				}
				lag := wm.lag()
				waits, after, need, most := 0, 0, 0, 0
				for _, w := range h.Table("Waiting").Rows {
					waits++
					spans := busy[w.Vals[1].S]
					if len(spans) > 0 && w.To > spans[0].from {
						after++
					}
					if overlaps(spans, w.From, w.To, 0) {
						need++
					}
					if overlaps(spans, w.From, w.To, lag) {
						most++
					}
				}
				nbusy := 0
				for _, spans := range busy {
					if len(spans) > 0 {
						nbusy++
					}
				}
				var weak string
				switch {
				case c.results && len(got[1].Table.Rows) == 0:
					weak = "no results: the workload does not test the detail phase"
				case !c.results && (nbusy == 0 || nbusy == len(sends) || after == 0 || after == waits):
					weak = fmt.Sprintf("%d of %d mailboxes busy, %d of %d waits after: the workload does not tell the plans apart", nbusy, len(sends), after, waits)
				}
				if weak != "" && run < 3 {
					next = func(d time.Duration) time.Duration { return 2 * d }
					if nbusy == len(sends) || after == waits {
						next = func(d time.Duration) time.Duration { return d / 2 }
					}
					t.Logf("run %d (%v): %s; again", run, d, weak)
					continue
				}
				if weak != "" {
					t.Fatal(weak)
				}
				n := st.Packets["Waiting"]
				switch c.cap {
				case wire.CapCount:
					if n != waits || !slices.Equal(st.Widened, []string{"w"}) {
						t.Errorf("Waiting packets %d, widened %v; want %d, [w]", n, st.Widened, waits)
					}
				case wire.CapCountWhile:
					if n != after || len(st.Widened) != 0 {
						t.Errorf("Waiting packets %d, widened %v; want %d (the waits ending after their mailbox's first busy instant), none", n, st.Widened, after)
					}
				default:
					if n < need || n > most || len(st.Widened) != 0 {
						t.Errorf("Waiting packets %d, widened %v; want from %d (the waits overlapping busy spans) to %d (with the spans %v longer, the drain's lag), none",
							n, st.Widened, need, most, time.Duration(lag))
					}
				}
				t.Logf("Waiting packets %d of %d waits: %d overlap busy spans, %d with the lag (%v), %d end after the first busy instant; %d of %d mailboxes busy; %d results",
					n, waits, need, most, time.Duration(lag), after, nbusy, len(sends), len(got[1].Table.Rows))
				break
			}
		})
	}
}

// TestLivePlacedMatchesTruth: the live queries with joins and aggregates,
// each run as a plan fragment at the resident (rewrite.PlaceProgram), give
// the ground truth's answers, and the monitor receives nothing but
// derived tuples.
func TestLivePlacedMatchesTruth(t *testing.T) {
	cat := demoCatalog(t)
	placed := 0
	for _, q := range liveQueries {
		prog, err := query.Compile(cat, []query.Source{{Name: q.name, Text: q.text}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Costly ones too (the rule "placement cost" keeps them at the
		// monitor for the wire's sake, not exactness's).
		force := remote.LiveOptions{PlaceCostly: true}
		if !remote.Placeable(prog, force) {
			continue
		}
		placed++
		t.Run(q.name, func(t *testing.T) {
			var kinds kindCounter
			got, st, h := runDemoWith(t, prog, demo.DefaultConfig(uint64(placed)), 300*time.Millisecond, force,
				func(c wire.Conn) wire.Conn { return &kindConn{Conn: c, n: &kinds} })
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			sameTables(t, got, want, "placed live")
			if !st.Placed || kinds.other.Load() != 0 || kinds.results.Load() == 0 && allRows(want) > 0 {
				t.Fatalf("the monitor got %d packets that are not results, %d results", kinds.other.Load(), kinds.results.Load())
			}
			t.Logf("%d rows from %d result packets (%d wire tuples)", allRows(want), kinds.results.Load(), st.WireTuples)
		})
	}
	if placed < 5 {
		t.Fatalf("only %d live queries placed", placed)
	}
}

// kindCounter counts the packets a monitor receives: results of a plan
// fragment, and any other.
type kindCounter struct{ results, other atomic.Int64 }

type kindConn struct {
	wire.Conn
	n *kindCounter
}

func (c *kindConn) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if b != nil {
		for _, p := range b.Packets {
			if p.Kind >= wire.PResultBegin {
				c.n.results.Add(1)
			} else {
				c.n.other.Add(1)
			}
		}
	}
	return b, err
}

// TestLivePlacedStateBound: a plan fragment whose operators outgrow its
// state bound stops: the run ends incomplete (an ErrIncomplete naming the
// bound), and every result tuple it sent is one of the truth's — the
// answer is incomplete, not wrong.
func TestLivePlacedStateBound(t *testing.T) {
	cat := demoCatalog(t)
	// The first statement streams its results; the second holds every
	// send until its process ends (none does before the run's end), so
	// the operators' state grows until the bound stops the fragment.
	q := `range of p is Process
range of s is SendMessage
retrieve (s.Process, s.Mailbox) where p.Process = s.Process and p.State = "Running"
retrieve (s.Mailbox) where s.Process = p.Process when s precede end of p`
	prog, err := query.Compile(cat, []query.Source{{Name: "bound", Text: q}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The third statement sends a result per send: the rule "placement
	// cost" keeps the program at the monitor unless forced.
	force := remote.LiveOptions{PlaceCostly: true}
	if remote.Placeable(prog, remote.LiveOptions{}) || !remote.Placeable(prog, force) {
		t.Fatal("placed without forcing, or not placeable")
	}
	const limit = 24 << 10
	// A loaded machine runs the demo slower: longer runs until the state
	// outgrows the bound (it grows with every send).
	var got []query.Result
	var st remote.LiveStats
	var h *algebra.History
	var runErr error
	for _, d := range []time.Duration{300 * time.Millisecond, time.Second, 3 * time.Second} {
		got, st, h, runErr = runDemoErr(t, prog.WithBudget(&exec.Budget{Limit: limit}), demo.DefaultConfig(3), d, force, asPlaced)
		if runErr != nil {
			break
		}
	}
	if !errors.Is(runErr, remote.ErrIncomplete) || !strings.Contains(runErr.Error(), "state bound") {
		t.Fatalf("a fragment over its bound of %d bytes: error %v, want one saying it stopped at its state bound", limit, runErr)
	}
	want, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	sent, all := 0, 0
	for i := range want {
		notWrong(t, got[i].Table, want[i].Table, 0)
		sent += len(got[i].Table.Rows)
		all += len(want[i].Table.Rows)
	}
	t.Logf("%v; %d of the truth's %d rows sent; %d wire tuples", runErr, sent, all, st.WireTuples)
}

// TestLivePlacedOverTransport: a plan fragment over the gRPC transport
// (commands unanswered, a bye that would end the stream). The monitor's
// run ends first, finishing the fragment: its last results still arrive —
// every tuple of the truth's that ended within the observation is in the
// answer, and every tuple of the answer is the truth's (or, open at the
// end, begun as the truth's).
func TestLivePlacedOverTransport(t *testing.T) {
	prog := liveQuery(t, "waiting-state-join")
	cfg := demo.DefaultConfig(9)
	res, rec, clock := truthResident(t, cfg)
	srv, err := transport.NewServer(transport.Adapt(res.Hello, res.Open), transport.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "r.sock")
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
	var kinds kindCounter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := startMonitor(t, ctx, prog, &kindConn{Conn: conn, n: &kinds}, remote.LiveOptions{})
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	go demo.New(ossensors.New(res), cfg).Run(dctx)
	time.Sleep(200 * time.Millisecond)
	cancel() // the monitor's run ends while the subject runs: it finishes the fragment
	o := <-done
	<-dctx.Done()
	stop := clock.Stop()
	res.Close()
	if o.err != nil {
		t.Fatal(o.err)
	}
	want, _, err := prog.RunHistory(rec.History(stop))
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, r := range want[0].Table.Rows {
		if r.To < o.st.End {
			ended++
		}
	}
	if missing := notWrong(t, o.rs[0].Table, want[0].Table, o.st.End); missing > 0 {
		t.Errorf("%d of the truth's tuples that ended within the observation (to %d) are not in the answer", missing, o.st.End)
	}
	if ended == 0 || kinds.other.Load() != 0 {
		t.Fatalf("%d truth rows within the observation, %d packets that are not results crossed", ended, kinds.other.Load())
	}
	t.Logf("%d of the truth's %d rows ended within the observation; %d rows answered from %d result packets", ended, len(want[0].Table.Rows), len(o.rs[0].Table.Rows), kinds.results.Load())
}

// TestLivePlacedShared: monitors that run the same program share one plan
// fragment at the resident. Two that stay to the end both get the truth's
// answers; one that leaves while the others run ends incomplete (the
// fragment's unsettled results are missing for it), never with a wrong
// tuple; one that comes once the fragment has sent results gets a
// fragment of its own, and the truth restricted to its observation.
func TestLivePlacedShared(t *testing.T) {
	prog := liveQuery(t, "sends-while-running")
	cfg := demo.DefaultConfig(11)
	res, rec, clock := truthResident(t, cfg)
	run := func(ctx context.Context) <-chan liveOut {
		return startMonitor(t, ctx, prog, res.Local(), remote.LiveOptions{})
	}
	a, b := run(context.Background()), run(context.Background())
	cctx, leave := context.WithCancel(context.Background())
	c := run(cctx)
	if n := res.PlanFragments(); n != 1 {
		t.Fatalf("%d plan fragments run for three monitors of one program, want 1", n)
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer dcancel()
	// A monitor that comes once the fragment has sent results it would
	// miss gets a fragment of its own.
	late := make(chan (<-chan liveOut), 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		leave()
		late <- run(context.Background())
		if n := res.PlanFragments(); n != 2 {
			t.Errorf("%d plan fragments run once a late monitor came, want 2", n)
		}
	}()
	demo.New(ossensors.New(res), cfg).Run(dctx)
	stop := clock.Stop()
	d := <-late
	res.Close()
	truthH := rec.History(stop)
	want, _, err := prog.RunHistory(truthH)
	if err != nil {
		t.Fatal(err)
	}
	od := <-d
	if od.err != nil {
		t.Fatalf("the late monitor: %v", od.err)
	}
	lateWant, _, err := prog.RunHistory(remote.RestrictObserved(truthH, od.st))
	if err != nil {
		t.Fatal(err)
	}
	sameTables(t, od.rs, lateWant, "the late monitor's (the truth restricted to its observation)")
	for i, ch := range []<-chan liveOut{a, b} {
		o := <-ch
		if o.err != nil {
			t.Fatalf("monitor %d: %v", i, o.err)
		}
		if g, w := renderTables(o.rs), renderTables(want); g != w {
			t.Fatalf("monitor %d's answer differs from the truth's\n--- live\n%s--- truth\n%s", i, g, w)
		}
	}
	o := <-c
	if !errors.Is(o.err, remote.ErrIncomplete) || !strings.Contains(o.err.Error(), "share") {
		t.Fatalf("the monitor that left: %v, want incomplete (it left a shared fragment)", o.err)
	}
	notWrong(t, o.rs[0].Table, want[0].Table, 0)
	t.Logf("%d rows each; the one that left: %d rows, %v", allRows(want), len(o.rs[0].Table.Rows), o.err)
}

// A consumer that borrows its results (LiveOptions.Borrow: it copies
// what it keeps) gets the ground truth's answers too, while the run
// reuses the records (and values) it emits where they are forgotten
// (exec's forgets: here the αs' records, read by selections). A run
// that reused what was still read, or what the consumer keeps, answers
// otherwise.
func TestLiveBorrowedMatchesTruth(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{
		{Name: "sends", Text: `range of s is SendMessage retrieve (N = count(s.Mailbox for ever where s.Process = "P2")) where s.Process = "P2"`},
		{Name: "all-sends", Text: `range of s is SendMessage retrieve (s.Process, s.Mailbox)`},
	}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kept := make([]*exec.Collector, len(prog.Stmts))
	opts := remote.LiveOptions{Discard: true, Borrow: true, OnElem: func(i int, e stream.Elem) {
		if kept[i] == nil {
			kept[i] = exec.NewCollector(prog.Stmts[i].Result)
		}
		kept[i].Keep(e)
	}}
	for seed := uint64(1); seed <= 2; seed++ {
		clear(kept)
		got, _, h := runDemoWith(t, prog, demo.DefaultConfig(seed), 400*time.Millisecond, opts, nil)
		want, _, err := prog.RunHistory(h)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for i := range got {
			if len(got[i].Table.Rows) > 0 {
				t.Fatalf("statement %d: %d rows kept, want none (Discard)", i+1, len(got[i].Table.Rows))
			}
			got[i].Table = &algebra.Table{Rel: prog.Stmts[i].Result}
			if kept[i] != nil {
				got[i].Table = kept[i].Table()
			}
			rows += len(want[i].Table.Rows)
		}
		sameTables(t, got, want, "borrowed")
		if rows == 0 {
			t.Fatal("no results at all: the run was too short")
		}
	}
}
