package rewrite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// fleetHosts are the hosts of the per-host differential test.
var fleetHosts = []string{"a", "b", "c"}

// TestPerHostPlacementAcquisitional: the rule "per-host plans"
// (PlacePerHost) is exact — every query of the fleet and placement corpora
// it places per host, run acquisitionally at each host over that host's
// part of a random fleet history (each host's tuples with its Host, its
// entity identifiers qualified HOST/ID, as the monitor sees them), the
// hosts' answers concatenated at the monitor, gives the reference
// evaluator's results over the whole fleet's history. The queries
// fleet-plans.tq says it refuses are run the same way, and some must
// differ (a refusal the rule could drop is counted, not failed: the rule
// is conservative).
func TestPerHostPlacementAcquisitional(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	text := testkit.ReadFile(t, filepath.Join(root, "spec.sdl"))
	var hellos []*wire.Hello
	for _, h := range fleetHosts {
		hellos = append(hellos, &wire.Hello{Name: h, SDL: text})
	}
	cat, _, err := remote.FleetCatalog(hellos, true)
	if err != nil {
		t.Fatal(err)
	}
	var corpus []testkit.Query
	for _, f := range []string{"fleet-plans.tq", "fleet.tq", "fragments.tq", "queries.tq", "rules.tq"} {
		corpus = append(corpus, testkit.ReadCorpus(t, filepath.Join(root, f))...)
	}
	placed, joins, aggs, refusedDiffer := 0, 0, 0, 0
	n := max(testkit.Histories()/5, 10)
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg, stmts, opt := placementPlans(t, cat, q)
			pl := rewrite.PlaceProgram(cat, opt...)
			// fleet-plans.tq says what the rule decides ("-- rules:
			// per-host" or "at-monitor").
			refused := false
			for _, want := range q.Rules {
				switch {
				case want != "per-host" && want != "at-monitor":
				case (want == "per-host") != pl.PerHost:
					t.Fatalf("placement %s, want %s", pl, want)
				case want == "at-monitor":
					refused = true
				}
			}
			if !pl.PerHost && !refused {
				return // refused, and not one whose refusal is checked
			}
			differs := false
			for seed := range n {
				whole, parts := fleetHistory(cat, cfg, uint64(seed))
				want, err := ref.Eval(whole, stmts)
				if errors.Is(err, expr.ErrOverflow) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				got := make([]*algebra.Table, len(stmts))
				for _, part := range parts {
					res, _ := acquire(t, cat, part, stmts, opt, 1)
					for i, r := range res {
						if got[i] == nil {
							got[i] = &algebra.Table{Rel: r.Rel}
						}
						got[i].Rows = append(got[i].Rows, r.Rows...)
					}
				}
				for i := range want {
					got[i].SortRows()
					if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
						if pl.PerHost {
							t.Fatalf("seed %d, statement %d, plan %s:\n--- the hosts' union\n%s--- reference\n%s", seed, i+1, plan.String(opt[i]), g, w)
						}
						differs = true
					}
				}
			}
			switch {
			case pl.PerHost:
				placed++
				joins += min(pl.Joins, 1)
				aggs += min(pl.Aggregates, 1)
			case differs:
				refusedDiffer++
			}
		})
	}
	t.Logf("%d of %d queries placed per host (%d with a join, %d with an aggregate); %d refused whose union differs", placed, len(corpus), joins, aggs, refusedDiffer)
	if joins == 0 || aggs == 0 || refusedDiffer == 0 {
		t.Error("no placed query with a join, none with an aggregate, or no refused query whose union differs")
	}
}

// fleetHistory is a random history of the fleet cat (hosts fleetHosts,
// one random history of the spec each, seeds apart): each host's tuples
// with its Host and its entity identifiers qualified (HOST/ID, as the
// monitor qualifies them): the whole fleet's and each host's part.
func fleetHistory(cat *algebra.Catalog, cfg histgen.Config, seed uint64) (*algebra.History, []*algebra.History) {
	whole := algebra.NewHistory(cat)
	var parts []*algebra.History
	for i, host := range fleetHosts {
		cfg.Seed = seed*uint64(len(fleetHosts)) + uint64(i)
		h := histgen.Random(cat, cfg)
		part := algebra.NewHistory(cat)
		for name, tab := range h.Tables {
			attrs := tab.Rel.Attrs
			if len(attrs) == 0 || attrs[len(attrs)-1].Name != algebra.HostAttr {
				continue // the built-in relations: the monitor's
			}
			for _, row := range tab.Rows {
				vals := make([]algebra.Value, len(row.Vals))
				for j, v := range row.Vals {
					switch {
					case j == len(vals)-1:
						v = algebra.Str(host)
					case v.K == algebra.KindEntity:
						v = algebra.Entity(fmt.Sprintf("%s/%s", host, v.S))
					}
					vals[j] = v
				}
				row.Vals = vals
				part.Tables[name].Rows = append(part.Tables[name].Rows, row)
				whole.Tables[name].Rows = append(whole.Tables[name].Rows, row)
			}
		}
		parts = append(parts, part)
	}
	return whole, parts
}
