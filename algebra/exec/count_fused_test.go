package exec_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
)

// fusedQueries have the shape a FusedAgg takes (count, sum, avg or any
// aggregates, ungrouped or by groups, over an event relation at its own
// events, with one α for all: each block keeps the same attributes and
// enables the same processes); the last ones do not (αs keeping other
// attributes or enabling others, an aggregate over another relation),
// and run on the general operators.
var fusedQueries = []struct {
	text  string
	fused bool
}{
	{`range of s is SendMessage retrieve (N = count(s.Size for ever where s.Process = "P1")) where s.Process = "P1" and s.Size >= 0`, true},
	{`range of s is SendMessage retrieve (s.Size, N = count(s.Size for ever))`, true},
	{`range of s is SendMessage retrieve (s.Size, N = count(s.Size where s.Size > 2))`, true},
	{`range of s is SendMessage retrieve (s.Process, S = sum(s.Size for each 5ns)) where s.Size > 1`, true},
	{`range of s is SendMessage retrieve (A = avg(s.Size for each 3ns where s.Process != "P2"), s.Size) where s.Process != "P2"`, true},
	{`range of s is SendMessage retrieve (s.Size, B = any(s.Size for each 2ns where s.Size > 5))`, true},
	{`range of s is SendMessage retrieve (s.Mailbox, N = count(s.Mailbox for ever where s.Mailbox = "M1"))`, true},
	{`range of i is Interrupt retrieve (i.Cpu, S = sum(i.Level for ever where i.Level > 1), L = i.Level * 2)`, true},
	{`range of s is SendMessage retrieve (s.Size, N = count(s.Size for ever)) where count(s.Size for ever) > 3`, true},
	{`range of s is SendMessage retrieve (s.Mailbox, s.Size, N = count(s.Size by s.Mailbox for ever))`, true},
	{`range of s is SendMessage retrieve (s.Process, S = sum(s.Size by s.Process, s.Mailbox for each 4ns), s.Mailbox, s.Size) where s.Size != 2`, true},
	{`range of s is SendMessage retrieve (s.Mailbox, N = count(s.Size by s.Mailbox), M = any(s.Size by s.Mailbox for each 3ns where s.Size > 4), s.Size)`, true},
	{`range of s is SendMessage retrieve (s.Size, N = count(s.Size by s.Mailbox for ever where s.Size > 3)) where count(s.Size by s.Mailbox for ever where s.Size > 3) > 2`, true},
	{`range of s is SendMessage retrieve (N = count(s.Size for ever where s.Process = "P1")) where s.Process = "P1"`, false},
	{`range of s is SendMessage retrieve (A = avg(s.Size for each 3ns where s.Process = "P2"), s.Size)`, false},
	{`range of s is SendMessage retrieve (s.Mailbox, N = count(s.Size by s.Mailbox for ever))`, false},
	{`range of s is SendMessage range of i is Interrupt retrieve (s.Mailbox, N = count(i.Level for ever))`, false},
}

// TestFusedAggDifferential runs each query live over random histories
// (every event and entity a fully enabled resident would report, with
// watermarks now and then), its αs shared as the kernel consumer shares
// them, once through a FusedAgg and once forced onto the general
// operators (Options.NoFused): the result elements must be the same, in
// the same order, and the result equal to the reference evaluator's.
func TestFusedAggDifferential(t *testing.T) {
	eachFusedQuery(t, func(t *testing.T, cat *algebra.Catalog, qi int, prog *query.Program, cfg histgen.Config) {
		q := fusedQueries[qi]
		rw, err := prog.Rewritten(false)
		if err != nil {
			t.Fatal(err)
		}
		plans := []plan.Node{rw[0].Final}
		fusedAgainstGeneral(t, cat, prog.Stmts, cfg, map[bool]int{true: 1, false: 0}[q.fused], func(h *algebra.History, general bool) (string, string, int, error) {
			// What no sensor reports is not in the history (the
			// reference evaluates it after the runs, as cleared).
			for _, r := range cat.Relations {
				if r.Class != algebra.ClassEntity && r.Strategy.Kind == algebra.NotSensed {
					h.Table(r.Name).Rows = nil
				}
			}
			return runFusedLive(t, cat, h, prog.Stmts, plans, general)
		})
	})
}

// eachFusedQuery runs f on each of fusedQueries in a subtest, compiled
// over the differential catalog (fusedProgram).
func eachFusedQuery(t *testing.T, f func(t *testing.T, cat *algebra.Catalog, qi int, prog *query.Program, cfg histgen.Config)) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	for qi, q := range fusedQueries {
		t.Run(fmt.Sprint(qi), func(t *testing.T) {
			prog, cfg := fusedProgram(t, cat, q.text)
			f(t, cat, qi, prog, cfg)
		})
	}
}

// fusedProgram compiles a query of fusedQueries, and the histories'
// configuration it is tried over: integrity kept, across the epoch and at
// the ends of time too.
func fusedProgram(t *testing.T, cat *algebra.Catalog, text string) (*query.Program, histgen.Config) {
	t.Helper()
	cfg := histgen.DefaultConfig(0)
	cfg.Integrity = true
	cfg.Edges = true
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: text}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return prog, cfg
}

// fusedAgainstGeneral runs stmts over random histories of cat (cfg, a
// seed each) by run, through a FusedAgg and forced onto the general
// operators: the result elements must be the same, in the same order,
// wantFused aggregates fused (none when forced), and the result equal to
// the reference evaluator's over the history as the runs left it — or all must fail with one error (a sum's
// overflow at the ends of time is a result too). It fails if every
// result was empty. run returns the first statement's result elements,
// its rows, the number of fused aggregates and the run's error.
func fusedAgainstGeneral(t *testing.T, cat *algebra.Catalog, stmts []*check.Retrieve, cfg histgen.Config, wantFused int,
	run func(h *algebra.History, general bool) (elems, rows string, nFused int, err error)) {
	t.Helper()
	n := testkit.Histories()
	nonEmpty, errs := 0, 0
	for seed := 0; seed < n; seed++ {
		cfg.Seed = uint64(seed)
		h := histgen.Random(cat, cfg)
		fused, fRows, nf, ferr := run(h, false)
		general, gRows, ng, gerr := run(h, true)
		want, err := ref.Eval(h, stmts)
		if err != nil || ferr != nil || gerr != nil {
			if fmt.Sprint(ferr) != fmt.Sprint(err) || fmt.Sprint(gerr) != fmt.Sprint(err) {
				t.Fatalf("seed %d: reference fails with %v, fused with %v, general with %v", seed, err, ferr, gerr)
			}
			errs++
			continue
		}
		if nf != wantFused || ng != 0 {
			t.Fatalf("%d fused aggregates (want %d), %d when forced general", nf, wantFused, ng)
		}
		if fused != general {
			t.Fatalf("seed %d: elements differ\n--- fused\n%s--- general\n%s", seed, fused, general)
		}
		if w := testkit.Rows(want[0]); fRows != w || gRows != w {
			t.Fatalf("seed %d: run and reference differ\n--- fused\n%s--- general\n%s--- reference\n%s", seed, fRows, gRows, w)
		}
		if len(want[0].Rows) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty == 0 {
		t.Errorf("every result was empty over %d histories (%d failed alike)", n, errs)
	}
}

// runFusedLive runs plans live over h's events and entities, αs shared
// (general: forced onto the general operators), and returns the first
// statement's result elements, its rows, the number of fused aggregates
// and the run's error.
func runFusedLive(t *testing.T, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, plans []plan.Node, general bool) (string, string, int, error) {
	t.Helper()
	net, err := exec.Build(cat, stmts, plans, exec.Options{ShareAlphas: true, NoFused: general})
	if err != nil {
		t.Fatal(err)
	}
	var elems strings.Builder
	net.Stmts[0].Result.OnElem = func(e stream.Elem) { fmt.Fprintf(&elems, "%v %d %v\n", e.Kind, e.T, e.Rec.Vals) }
	type item struct {
		t      algebra.Time
		phase  int
		entity bool
		begin  bool
		rel    string
		key    uint64
		vals   []algebra.Value
	}
	var feed []item
	key := uint64(0)
	for _, r := range cat.Relations {
		for _, row := range h.Table(r.Name).Rows {
			key++
			switch {
			case r.Class == algebra.ClassEntity:
				feed = append(feed, item{t: row.From, phase: 1, entity: true, begin: true, rel: r.Name, key: key, vals: row.Vals})
				if row.To != algebra.Forever {
					feed = append(feed, item{t: row.To, entity: true, rel: r.Name, key: key, vals: row.Vals})
				}
			case r.IsEvent() && r.Strategy.Kind != algebra.NotSensed:
				feed = append(feed, item{t: row.From, phase: 1, rel: r.Name, key: key, vals: row.Vals})
			}
		}
	}
	slices.SortStableFunc(feed, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.phase, b.phase))
	})
	start, end, _ := h.Extent()
	live := net.Live(start)
	for i, f := range feed {
		if f.entity {
			err = live.Entity(f.rel, f.begin, f.key, f.vals, f.t)
		} else {
			err = live.Packet(f.rel, stream.PacketEvent, f.key, 0, f.vals, f.t)
		}
		if err == nil && i%5 == 0 && f.t != algebra.Beginning {
			err = live.Advance(algebra.Prev(f.t))
		}
		if err != nil {
			return "", "", net.Fused, err
		}
	}
	if _, err := live.Finish(end); err != nil {
		return "", "", net.Fused, err
	}
	return elems.String(), testkit.Rows(net.Stmts[0].Result.Table()), net.Fused, nil
}

// feedSends builds the network of the kernel consumer's count (its αs
// shared; general: forced onto the general operators) over SendMessage,
// its result counted and not kept, and returns a function feeding it k
// sends, one an instant, with a watermark every 1,024 (as batches bring
// them), and the count of result elements. borrow: the count borrows
// them (Collector.Borrow).
func feedSends(tb testing.TB, general, borrow bool) (feed func(k int), results *int) {
	cat := testkit.LoadCatalog(tb, filepath.Join(testkit.Root(tb), "testdata/differential/spec.sdl"))
	const text = `range of s is SendMessage retrieve (N = count(s.Size for ever where s.Process = "P1" and s.Size = 3)) where s.Process = "P1" and s.Size = 3`
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: text}}, check.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	rw, err := prog.Rewritten(false)
	if err != nil {
		tb.Fatal(err)
	}
	net, err := exec.Build(cat, prog.Stmts, []plan.Node{rw[0].Final}, exec.Options{ShareAlphas: true, NoFused: general})
	if err != nil {
		tb.Fatal(err)
	}
	if want := map[bool]int{false: 1, true: 0}[general]; net.Fused != want {
		tb.Fatalf("%d fused aggregates, want %d", net.Fused, want)
	}
	results = new(int)
	res := net.Stmts[0].Result
	res.Discard, res.Borrow, res.OnElem = true, borrow, func(stream.Elem) { *results++ }
	live := net.Live(0)
	if err := live.Entity("Process", true, 1, []algebra.Value{algebra.Entity("P1"), algebra.Int(1), algebra.Int(0)}, 0); err != nil {
		tb.Fatal(err)
	}
	vals := []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1"), algebra.Int(3)}
	at := algebra.Time(1)
	return func(k int) {
		for range k {
			if err := live.Packet("SendMessage", stream.PacketEvent, 0, 0, vals, at); err != nil {
				tb.Fatal(err)
			}
			if at%1024 == 0 {
				if err := live.Advance(at); err != nil {
					tb.Fatal(err)
				}
			}
			at++
		}
	}, results
}

// BenchmarkFusedAgg is the kernel consumer's count of a process's calls
// (BenchmarkConsumer/count-bare's query, over SendMessage) in the
// network alone, fed packets as the live driver is, through the general
// operators (Select, Coalesce, Apply, Coalesce) and through a FusedAgg,
// alternated, by thread CPU time (cpuPairs): each of b.N rounds feeds
// each network 65,536 events.
func BenchmarkFusedAgg(b *testing.B) {
	const k = 1 << 16
	general, gn := feedSends(b, true, false)
	fused, fn := feedSends(b, false, false)
	general(k) // warm: the blocks and buffers in use
	fused(k)
	mg, mf := cpuPairs(b, func() { general(k) }, func() { fused(k) })
	if *gn != *fn {
		b.Fatalf("%d results through the general operators, %d fused", *gn, *fn)
	}
	b.ReportMetric(float64(mg.Nanoseconds())/k, "general-cpu-ns/event")
	b.ReportMetric(float64(mf.Nanoseconds())/k, "fused-cpu-ns/event")
	b.ReportMetric(mf.Seconds()/mg.Seconds(), "fused-vs-general")
}

// The fused count allocates nothing per event in steady state: only its
// blocks of result records and values (one per 256 results) and the
// driver's, far below one allocation an event (the general operators
// made about one).
func TestFusedAggAllocations(t *testing.T) {
	feed, _ := feedSends(t, false, false)
	feed(1 << 14)
	const k = 1 << 12
	if a := testing.AllocsPerRun(5, func() { feed(k) }) / k; a > 0.05 {
		t.Errorf("%.3f allocations an event, want ≤ 0.05", a)
	}
}

// Whose results are borrowed (Collector.Borrow), the live count
// allocates nothing at all in steady state: the α's records, the
// results' records and values come from arenas reused once the output
// advanced (forgets), the driver's queues are reused. (Lent, each
// result took a record and a value from blocks: 2 allocations per 256
// events.)
func TestFusedAggBorrowedAllocatesNothing(t *testing.T) {
	feed, n := feedSends(t, false, true)
	feed(1 << 14)
	const k = 1 << 12
	if a := testing.AllocsPerRun(5, func() { feed(k) }); a != 0 {
		t.Errorf("%.1f allocations per %d events, want none", a, k)
	}
	if *n != 1<<14+6*k {
		t.Errorf("%d results, want one an event (%d)", *n, 1<<14+6*k)
	}
}

// TestFusedAggHistory runs each of fusedQueries over random recorded
// histories (RunHistory, the stored plans a --history command runs, whose
// leaves are scans, not αs) once through a FusedAgg and once forced onto
// the general operators (Options.NoFused): the result elements must be
// the same, in the same order, and the result equal to the reference
// evaluator's. Over scans every one fuses but the aggregate over another
// relation (there is no α to differ in what it keeps or enables).
func TestFusedAggHistory(t *testing.T) {
	eachFusedQuery(t, func(t *testing.T, cat *algebra.Catalog, qi int, prog *query.Program, cfg histgen.Config) {
		plans, err := prog.StoredPlans()
		if err != nil {
			t.Fatal(err)
		}
		wantFused := 1
		if qi == len(fusedQueries)-1 {
			wantFused = 0 // an aggregate over another relation
		}
		fusedAgainstGeneral(t, cat, prog.Stmts, cfg, wantFused, func(h *algebra.History, general bool) (string, string, int, error) {
			net, err := exec.Build(cat, prog.Stmts, plans, exec.Options{NoFused: general})
			if err != nil {
				t.Fatal(err)
			}
			var elems strings.Builder
			net.Stmts[0].Result.OnElem = func(e stream.Elem) { fmt.Fprintf(&elems, "%v %d %v\n", e.Kind, e.T, e.Rec.Vals) }
			err = net.RunHistory(h)
			return elems.String(), testkit.Rows(net.Stmts[0].Result.Table()), net.Fused, err
		})
	})
}
