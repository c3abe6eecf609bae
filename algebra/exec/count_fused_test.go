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

// fusedQueries have the shape a FusedAgg takes (an ungrouped count, sum,
// avg or any over an event relation at its own events, with one α for
// both: each block keeps the same attributes and enables the same
// processes); the last ones do not (αs keeping other attributes or
// enabling others, two aggregates, a by list, an aggregate over another
// relation), and run on the general operators.
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
	{`range of s is SendMessage retrieve (N = count(s.Size for ever where s.Process = "P1")) where s.Process = "P1"`, false},
	{`range of s is SendMessage retrieve (A = avg(s.Size for each 3ns where s.Process = "P2"), s.Size)`, false},
	{`range of s is SendMessage retrieve (s.Size, N = count(s.Size for ever)) where count(s.Size for ever) > 3`, false},
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
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	n := testkit.Histories()
	for qi, q := range fusedQueries {
		t.Run(fmt.Sprint(qi), func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Integrity = true
			prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: q.text}}, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rw, err := prog.Rewritten(false)
			if err != nil {
				t.Fatal(err)
			}
			plans := []plan.Node{rw[0].Final}
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				for _, r := range cat.Relations {
					if r.Class != algebra.ClassEntity && r.Strategy.Kind == algebra.NotSensed {
						h.Table(r.Name).Rows = nil
					}
				}
				want, err := ref.Eval(h, prog.Stmts)
				if err != nil {
					t.Fatal(err)
				}
				fused, fRows, nf := runFusedLive(t, cat, h, prog.Stmts, plans, false)
				general, gRows, ng := runFusedLive(t, cat, h, prog.Stmts, plans, true)
				if nf != map[bool]int{true: 1, false: 0}[q.fused] || ng != 0 {
					t.Fatalf("%d fused aggregates (want %v), %d when forced general", nf, q.fused, ng)
				}
				if fused != general {
					t.Fatalf("seed %d: elements differ\n--- fused\n%s--- general\n%s", seed, fused, general)
				}
				if w := testkit.Rows(want[0]); fRows != w || gRows != w {
					t.Fatalf("seed %d: live and reference differ\n--- fused\n%s--- general\n%s--- reference\n%s", seed, fRows, gRows, w)
				}
				if len(want[0].Rows) > 0 {
					nonEmpty++
				}
			}
			if nonEmpty == 0 {
				t.Errorf("every result was empty over %d histories", n)
			}
		})
	}
}

// runFusedLive runs plans live over h's events and entities, αs shared
// (general: forced onto the general operators), and returns the first
// statement's result elements, its rows and the number of fused
// aggregates.
func runFusedLive(t *testing.T, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, plans []plan.Node, general bool) (string, string, int) {
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
			t.Fatal(err)
		}
	}
	if _, err := live.Finish(end); err != nil {
		t.Fatal(err)
	}
	return elems.String(), testkit.Rows(net.Stmts[0].Result.Table()), net.Fused
}
