package rewrite_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// plans translates statements with α operators, optionally rewritten.
func plans(t testing.TB, cat *algebra.Catalog, stmts []*check.Retrieve, optimise bool) ([]plan.Node, []rewrite.Result) {
	var out []plan.Node
	var results []rewrite.Result
	for _, s := range stmts {
		p := plan.WithAlphas(plan.Translate(s), cat)
		if optimise {
			res, err := rewrite.Rewrite(&rewrite.Context{Catalog: cat}, p)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
			p = res.Final
		}
		out = append(out, p)
	}
	return out, results
}

func acquire(t testing.TB, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, ps []plan.Node, sweep int) ([]*algebra.Table, exec.AcquireStats) {
	t.Helper()
	net, err := exec.Build(cat, stmts, ps, exec.Options{SweepMin: sweep})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := net.RunAcquire(h)
	if err != nil {
		t.Fatal(err)
	}
	var out []*algebra.Table
	for _, s := range net.Stmts {
		out = append(out, s.Result.Table())
	}
	return out, stats
}

// TestAcquisitionalDifferential runs every query of the differential
// corpus and of the rule corpus acquisitionally — the naive plan and the
// rewritten one — over random histories (with referential integrity), and
// holds both to the reference evaluator on the complete history.
func TestAcquisitionalDifferential(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl"))
	corpus := append(testkit.ReadCorpus(t, filepath.Join(root, "queries.tq")), testkit.ReadCorpus(t, filepath.Join(root, "rules.tq"))...)
	// The fleet's corpus runs over the spec as three hosts a, b and c
	// announce it (histgen's strings are a, b and c).
	text := testkit.ReadFile(t, filepath.Join(root, "spec.sdl"))
	fleet, _, err := remote.FleetCatalog([]*wire.Hello{{Name: "a", SDL: text}, {Name: "b", SDL: text}, {Name: "c", SDL: text}}, true)
	if err != nil {
		t.Fatal(err)
	}
	type item struct {
		q   testkit.Query
		cat *algebra.Catalog
	}
	var items []item
	for _, q := range corpus {
		items = append(items, item{q, cat})
	}
	for _, q := range testkit.ReadCorpus(t, filepath.Join(root, "fleet.tq")) {
		q.Name = "fleet-" + q.Name
		items = append(items, item{q, fleet})
	}
	n := testkit.Histories()
	ruleUse := map[string]int{}
	for _, it := range items {
		q, cat := it.q, it.cat
		t.Run(q.Name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Edges = true // histories across the epoch and at the ends of time too
			cfg.Integrity = true
			stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
			naive, _ := plans(t, cat, stmts, false)
			opt, results := plans(t, cat, stmts, true)
			used := map[string]bool{}
			for _, r := range results {
				for _, s := range r.Steps {
					used[s.Rule] = true
					ruleUse[s.Rule]++
				}
			}
			for _, want := range q.Rules {
				if !used[want] {
					t.Errorf("rule %s not applied; plan: %s", want, plan.String(opt[len(opt)-1]))
				}
			}
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				want, err := ref.Eval(h, stmts)
				if errors.Is(err, expr.ErrOverflow) {
					continue // an overflow at the ends of time: algebra/exec's differential test compares those
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if len(want[i].Rows) > 0 {
						nonEmpty++
					}
				}
				for _, c := range []struct {
					name  string
					ps    []plan.Node
					sweep int
				}{{"optimised", opt, 1}, {"naive", naive, 0}} {
					got, _ := acquire(t, cat, h, stmts, c.ps, c.sweep)
					for i := range want {
						if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
							t.Fatalf("seed %d, statement %d, %s plan %s:\n--- acquired\n%s--- reference\n%s", seed, i+1, c.name, plan.String(c.ps[i]), g, w)
						}
					}
				}
			}
			if nonEmpty == 0 && !q.EmptyOK {
				t.Errorf("every result was empty over %d histories", n)
			}
		})
	}
	for _, r := range rewrite.Rules() {
		if ruleUse[r.Name] == 0 {
			t.Errorf("rule %s is exercised by no query of the corpus", r.Name)
		}
	}
}
