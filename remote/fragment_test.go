package remote_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// TestLiveFragmentM3: `where s.Mailbox = "M3"` over a live resident runs
// the selection at the resident (the Mailbox is not SendMessage's flag
// holder, so α enables every process): exactly M3's sends cross the wire,
// counted against the ground truth, and the result equals the truth's. A
// resident without fragments sends every send.
func TestLiveFragmentM3(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: `range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		wrap func(wire.Conn) wire.Conn
	}{{"fragment", nil}, {"no-fragments", noFragments}} {
		t.Run(c.name, func(t *testing.T) {
			got, st, h := runDemoWith(t, prog, demo.DefaultConfig(6), 300*time.Millisecond, remote.LiveOptions{}, c.wrap)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			if renderTables(got) != renderTables(want) {
				t.Fatal("live result differs from the ground truth's")
			}
			m3, all := 0, len(h.Table("SendMessage").Rows)
			for _, s := range h.Table("SendMessage").Rows {
				if s.Vals[1].S == "M3" {
					m3++
				}
			}
			if m3 == 0 || m3 == all {
				t.Fatalf("%d of %d sends to M3: the workload does not tell the plans apart", m3, all)
			}
			wantN := m3
			if c.wrap != nil {
				wantN = all
			}
			if n := st.Packets["SendMessage"]; n != wantN {
				t.Errorf("SendMessage packets %d, want %d (%d of %d sends to M3)", n, wantN, m3, all)
			}
			if w, d := st.Wanted["SendMessage"], st.Dropped["SendMessage"]; uint64(st.Packets["SendMessage"])+d != w {
				t.Errorf("delivered %d + dropped %d ≠ wanted %d", st.Packets["SendMessage"], d, w)
			}
			t.Logf("packets %v; %d of %d sends to M3; wire: %d tuples, %d bytes", st.Packets, m3, all, st.WireTuples, st.WireBytes)
		})
	}
}

// fragmentQueries place selections at the resident: on a traced event's
// target, a D interval's initiator, a sampled relation's target, in a
// join, twice over one sensor with and without a selection.
var fragmentQueries = []struct{ name, text string }{
	{"sends-to-M3", `range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`},
	{"sends-not-M1-M2", `range of s is SendMessage retrieve (s.Process, s.Mailbox) where s.Mailbox != "M1" and s.Mailbox != "M2"`},
	{"waits-not-P1", `range of w is Waiting retrieve (w.Mailbox) where w.Process != "P1"`},
	{"P2-running", `range of r is RunningOn retrieve (r.Processor) where r.Process = "P2"`},
	{"send-then-wait", `range of s is SendMessage
range of w is Waiting
retrieve (s.Process, W = w.Process) where s.Mailbox = w.Mailbox and s.Mailbox = "M2" and w.Process != "P3" when s precede end of w`},
	{"twice", `range of a is SendMessage
range of b is SendMessage
retrieve (a.Process, B = b.Process) where a.Mailbox = b.Mailbox and a.Mailbox = "M1" when a equal b`},
}

// TestLiveFragmentsMatchTruth: queries whose selections run at the
// resident give the ground truth's results, for several seeds.
func TestLiveFragmentsMatchTruth(t *testing.T) {
	cat := demoCatalog(t)
	var srcs []query.Source
	for _, q := range fragmentQueries {
		srcs = append(srcs, query.Source{Name: q.name, Text: q.text})
	}
	prog, err := query.Compile(cat, srcs, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			got, st, h := runDemo(t, prog, demo.DefaultConfig(seed), 400*time.Millisecond)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := renderTables(got), renderTables(want); g != w {
				t.Fatalf("live results differ from the ground truth's:\n--- live\n%s--- truth\n%s", g, w)
			}
			t.Logf("packets %v; wire %d tuples, %d bytes", st.Packets, st.WireTuples, st.WireBytes)
		})
	}
}

// BenchmarkWireM3: what crosses the wire per result for `where s.Mailbox =
// "M3"`, with the selection at the resident and without (a resident that
// does not announce fragments): SendMessage packets and wire bytes per
// result row. The bytes include the entity relations' tuples and the
// empty batches that carry watermarks, which no fragment spares.
//
//	go test -run '^$' -bench BenchmarkWireM3 -benchtime 3x -count 5 ./remote
func BenchmarkWireM3(b *testing.B) {
	cat := demoCatalog(b)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: `range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`}}, check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		wrap func(wire.Conn) wire.Conn
	}{{"fragment", nil}, {"no-fragment", noFragments}} {
		b.Run(c.name, func(b *testing.B) {
			var sends, bytes, rows float64
			for i := range b.N {
				got, st, _ := runDemoWith(b, prog, demo.DefaultConfig(uint64(7+i)), 200*time.Millisecond, remote.LiveOptions{WireBytes: true}, c.wrap)
				sends += float64(st.Packets["SendMessage"])
				bytes += float64(st.WireBytes)
				rows += float64(len(got[0].Table.Rows))
			}
			if rows == 0 {
				b.Fatal("no results")
			}
			b.ReportMetric(sends/rows, "sends/result")
			b.ReportMetric(bytes/rows, "bytes/result")
		})
	}
}

// TestProbe: the live cost --explain shows: a probe of the demo for
// `where s.Mailbox = "M3"` sees SendMessage's packets with every process
// enabled, and fewer passing the resident's selection.
func TestProbe(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: `range of s is SendMessage retrieve (s.Process) where s.Mailbox = "M3"`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := prog.Rewritten(false)
	if err != nil {
		t.Fatal(err)
	}
	frags := rewrite.Place(rw[0].Final)
	a := rewrite.Alphas(rw[0].Final)[0]
	probe := func(d time.Duration) (remote.ProbeRate, map[string]remote.ProbeRate) {
		clock := demo.NewClock(demo.DefaultConfig(3).Scale)
		res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
		defer res.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{})
		go func() {
			<-started
			demo.New(ossensors.New(res), demo.DefaultConfig(3)).Run(ctx)
		}()
		conn := res.Local()
		defer conn.Close()
		rates, err := remote.Probe(ctx, []wire.Conn{conn}, cat, []plan.Node{rw[0].Final}, d, func() { close(started) })
		if err != nil {
			t.Fatal(err)
		}
		return rates[remote.ProbeKey(a, frags[a])], rates
	}
	// The demo runs in real time: a loaded machine may give its 300 ms
	// few sends, and a sample of a few may have none to M3, or only
	// those. A probe of fewer than 100 sends is run again, twice as long
	// (three times at most; the demo makes about 250 in 300 ms).
	var r remote.ProbeRate
	var rates map[string]remote.ProbeRate
	for run, d := 1, 300*time.Millisecond; ; run, d = run+1, 2*d {
		if r, rates = probe(d); r.All*d.Seconds() >= 100 || run == 3 {
			break
		}
		t.Logf("run %d (%v): rates %v: few sends; again", run, d, rates)
	}
	if r.All == 0 || r.Passed == 0 || r.Passed >= r.All {
		t.Fatalf("rates %v: want SendMessage's, fewer passing the selection", rates)
	}
	t.Logf("rates %v", rates)
}

// beginCounter notes the entity tuples a connection delivers, per
// relation: their begin times (an entity tuple crosses the wire as a
// begin and an end).
type beginCounter struct {
	wire.Conn
	at map[string][]algebra.Time
}

// within counts the tuples of rel that began in [from, to].
func (c *beginCounter) within(rel string, from, to algebra.Time) int {
	n := 0
	for _, b := range c.at[rel] {
		if b >= from && b <= to {
			n++
		}
	}
	return n
}

func (c *beginCounter) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if err == nil {
		for _, p := range b.Packets {
			if h := c.Hello(); p.Kind == wire.PEntityBegin {
				name := h.Sensors[p.Sensor]
				c.at[name] = append(c.at[name], algebra.Time(h.WallBase+p.TS-h.MonoBase))

			}
		}
	}
	return b, err
}

// entityFragmentQueries read the Process entity relation only through
// selections on its State (a scan, a sampled join, an entity-selection
// argument), so the resident sends only Waiting and Running tuples.
var entityFragmentQueries = []query.Source{
	{Name: "waiting", Text: `range of p is Process retrieve (p.Process) where p.State = "Waiting"`},
	{Name: "waiting-at-ticks", Text: `range of p is Process
range of c is Clock[20]
retrieve (p.Process) valid at c where p.State = "Waiting" when c overlap p`},
	{Name: "sends-while-running", Text: `range of p is Process
range of s is SendMessage
retrieve (s.Process, s.Mailbox) where p.Process = s.Process and p.State = "Running"`},
}

// TestLiveEntityFragments: selections on an entity relation's attributes
// run at the resident (rewrite.PlaceEntities): exactly the Process tuples
// in the states the queries select cross the wire, counted against the
// ground truth, and every result equals the truth's. A resident that does
// not filter entity relations sends every Process tuple.
func TestLiveEntityFragments(t *testing.T) {
	cat := demoCatalog(t)
	prog, err := query.Compile(cat, entityFragmentQueries, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		hide   bool
		filter bool
	}{{"entity-fragments", false, true}, {"no-entity-fragments", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			bc := &beginCounter{at: map[string][]algebra.Time{}}
			wrap := func(conn wire.Conn) wire.Conn {
				if c.hide {
					conn = without{conn, wire.CapEntityFragments}
				}
				bc.Conn = noPlans(conn)
				return bc
			}
			got, st, h := runDemoWith(t, prog, demo.DefaultConfig(8), 300*time.Millisecond, remote.LiveOptions{WireBytes: true}, wrap)
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			if renderTables(got) != renderTables(want) {
				t.Fatalf("live results differ from the ground truth's:\n%s\nwant:\n%s", renderTables(got), renderTables(want))
			}
			// (Tuples that began before the run's commands took effect —
			// the observation's start — or after its end, as the resident
			// closed, are not the run's.)
			selected, all := 0, 0
			for _, p := range h.Table("Process").Rows {
				if p.From < st.Start || p.From > st.End {
					continue
				}
				all++
				if s := p.Vals[1].S; s == "Waiting" || s == "Running" {
					selected++
				}
			}
			if selected == 0 || selected == all {
				t.Fatalf("%d of %d Process tuples selected: the workload does not tell the plans apart", selected, all)
			}
			wantN := all
			if c.filter {
				wantN = selected
			}
			if n := bc.within("Process", st.Start, st.End); n != wantN {
				t.Errorf("Process tuples sent %d, want %d (%d of %d Waiting or Running)", n, wantN, selected, all)
			}
			t.Logf("Process tuples sent %d (%d of %d selected); wire: %d tuples, %d bytes", bc.within("Process", st.Start, st.End), selected, all, st.WireTuples, st.WireBytes)
		})
	}
}

// TestPlaceEntities: a relation gets a fragment only when every read of
// it is a selected range variable.
func TestPlaceEntities(t *testing.T) {
	cat := demoCatalog(t)
	for _, c := range []struct {
		name string
		srcs []query.Source
		want string // the relations with a fragment, and how many disjuncts
	}{
		{"selected", entityFragmentQueries, "Process:2"}, // Waiting twice, Running twice: alike reads, one disjunct
		{"one-whole", append(slices.Clone(entityFragmentQueries), query.Source{Name: "all", Text: `range of p is Process retrieve (p.Process, p.State)`}), ""},
		{"entity-source", []query.Source{{Name: "q", Text: `range of p is Process range of s is SendMessage retrieve (s.Mailbox) where p.State = "Ready"`}}, ""},
		{"not-placeable", []query.Source{{Name: "q", Text: `range of p is Process retrieve (p.Process) where p.State = "Ready" or p.Process = p.Process`}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, plans := finalPlans(t, cat, c.srcs)
			var got []string
			for name, f := range rewrite.PlaceEntities(plans...) {
				got = append(got, fmt.Sprintf("%s:%d", name, len(f.Preds)))
			}
			slices.Sort(got)
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("fragments %q, want %q", g, c.want)
			}
		})
	}
}

// BenchmarkWireResident: bytes across the wire per result, with what
// runs at the resident and without it, the twins interleaved in one run
// on the same seeds — the two-phase query (counting trigger against
// Waiting widened to every mailbox) and the entity-relation selections
// (entityFragmentQueries: Process filtered at the resident against sent
// whole). Bytes count everything the program needs (the first phase's
// sends too). The two-phase runs have three mailboxes, so that waits
// overlap busy spells (results).
func BenchmarkWireResident(b *testing.B) {
	cat := demoCatalog(b)
	var twoPhase string
	for _, q := range liveQueries {
		if q.name == "two-phase-busy-mailboxes" {
			twoPhase = q.text
		}
	}
	tp, err := query.Compile(cat, []query.Source{{Name: "two-phase", Text: twoPhase}}, check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ef, err := query.Compile(cat, entityFragmentQueries, check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	noEntityFragments := func(c wire.Conn) wire.Conn { return without{c, wire.CapEntityFragments} }
	three := func(seed uint64) demo.Config { c := demo.DefaultConfig(seed); c.Mailboxes = 3; return c }
	cases := []struct {
		metric string
		prog   *query.Program
		wrap   func(wire.Conn) wire.Conn
		rows   func([]query.Result) int
		cfg    func(seed uint64) demo.Config
	}{
		{"two-phase", tp, nil, lastRows, three},
		{"two-phase-widened", tp, noCount, lastRows, three},
		{"entity", ef, nil, allRows, demo.DefaultConfig},
		{"entity-whole", ef, noEntityFragments, allRows, demo.DefaultConfig},
	}
	bytes := make([]float64, len(cases))
	tuples := make([]float64, len(cases))
	rows := make([]float64, len(cases))
	for i := range b.N {
		for j, c := range cases {
			got, st, _ := runDemoWith(b, c.prog, c.cfg(uint64(7+i)), 400*time.Millisecond, remote.LiveOptions{WireBytes: true}, c.wrap)
			bytes[j] += float64(st.WireBytes)
			tuples[j] += float64(st.WireTuples)
			rows[j] += float64(c.rows(got))
		}
	}
	for j, c := range cases {
		if rows[j] == 0 {
			b.Fatalf("%s: no results", c.metric)
		}
		b.ReportMetric(bytes[j]/rows[j], c.metric+"-B/result")
		b.ReportMetric(tuples[j]/rows[j], c.metric+"-tuples/result")
	}
}

func lastRows(rs []query.Result) int { return len(rs[len(rs)-1].Table.Rows) }

func allRows(rs []query.Result) int {
	n := 0
	for _, r := range rs {
		n += len(r.Table.Rows)
	}
	return n
}

// finalPlans compiles a program and returns its rewritten plans.
func finalPlans(t *testing.T, cat *algebra.Catalog, srcs []query.Source) (*query.Program, []plan.Node) {
	t.Helper()
	prog, err := query.Compile(cat, srcs, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := prog.Rewritten(false)
	if err != nil {
		t.Fatal(err)
	}
	var plans []plan.Node
	for _, r := range rw {
		plans = append(plans, r.Final)
	}
	return prog, plans
}

// BenchmarkWirePlaced: bytes and wire tuples per result row of a join
// (sends of running processes) and an aggregate (queue lengths), run as a
// plan fragment at the resident (derived tuples cross the wire) and at the
// monitor (packets and entity tuples cross it), interleaved in one run;
// it fails if the rule "placement cost" places one whose placed bytes per
// result exceed the monitor's.
//
//	go test -run '^$' -bench BenchmarkWirePlaced -benchtime 5x ./remote
func BenchmarkWirePlaced(b *testing.B) {
	cat := demoCatalog(b)
	var progs []*query.Program
	var names []string
	for _, q := range liveQueries {
		if q.name != "sends-while-running" && q.name != "queue-length" {
			continue
		}
		p, err := query.Compile(cat, []query.Source{{Name: q.name, Text: q.text}}, check.Options{})
		if err != nil {
			b.Fatal(err)
		}
		progs, names = append(progs, p), append(names, q.name)
	}
	type acc struct{ bytes, tuples, rows float64 }
	res := map[string]*acc{}
	for i := range b.N {
		for j, p := range progs {
			for _, c := range []struct {
				name string
				wrap func(wire.Conn) wire.Conn
			}{{"placed", asPlaced}, {"monitor", noPlans}} {
				got, st, _ := runDemoWith(b, p, demo.DefaultConfig(uint64(7+i)), 300*time.Millisecond, remote.LiveOptions{WireBytes: true}, c.wrap)
				k := names[j] + "-" + c.name
				if res[k] == nil {
					res[k] = &acc{}
				}
				res[k].bytes += float64(st.WireBytes)
				res[k].tuples += float64(st.WireTuples)
				res[k].rows += float64(allRows(got))
			}
		}
	}
	for k, a := range res {
		if a.rows == 0 {
			b.Fatalf("%s: no results", k)
		}
		b.ReportMetric(a.bytes/a.rows, k+"-B/result")
		b.ReportMetric(a.tuples/a.rows, k+"-tuples/result")
	}
	// The rule "placement cost" places only what spares the wire:
	// measured, placed bytes per result are at most the monitor's for
	// every query it places.
	for j, p := range progs {
		pl, mon := res[names[j]+"-placed"], res[names[j]+"-monitor"]
		if remote.Placeable(p, remote.LiveOptions{}) && pl.bytes/pl.rows > mon.bytes/mon.rows {
			b.Errorf("%s: placed by the rule, but %.1f bytes per result placed against %.1f at the monitor", names[j], pl.bytes/pl.rows, mon.bytes/mon.rows)
		}
	}
}
