package rewrite_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/rewrite"
)

// fragmented is the history as residents running the fragments deliver
// it: of each relation an α reads, the tuples no α on it passes are gone
// (a session's fragments on a sensor combine by union; an α without a
// fragment passes every tuple), and the attributes no α keeps are zero
// values. Its window is h's, so the observation is the same.
func fragmented(t testing.TB, h *algebra.History, ps []plan.Node, frags map[*plan.Alpha]*rewrite.Fragment) (*algebra.History, int) {
	byRel := map[string][]*plan.Alpha{}
	for _, p := range ps {
		plan.Walk(p, func(n plan.Node) {
			if a, ok := n.(*plan.Alpha); ok {
				byRel[a.Rel.Name] = append(byRel[a.Rel.Name], a)
			}
		})
	}
	start, end, _ := h.Extent()
	out := &algebra.History{Catalog: h.Catalog, Tables: map[string]*algebra.Table{}, Window: &algebra.Window{From: start, To: end}}
	removed := 0
	for name, tab := range h.Tables {
		as := byRel[name]
		if len(as) == 0 {
			out.Tables[name] = tab
			continue
		}
		keep := make([]bool, len(tab.Rel.Attrs))
		for _, a := range as {
			f := frags[a]
			if f == nil || f.Keep == nil {
				for i := range keep {
					keep[i] = true
				}
				continue
			}
			for _, i := range f.Keep {
				keep[i] = true
			}
		}
		nt := &algebra.Table{Rel: tab.Rel}
		for _, r := range tab.Rows {
			pass := false
			for _, a := range as {
				f := frags[a]
				if f == nil || f.Pred == nil {
					pass = true
					break
				}
				b := make(expr.Binding, f.Var+1)
				b[f.Var] = r.Vals
				v, err := expr.Eval(f.Pred, b)
				if err != nil {
					t.Fatalf("fragment of %s: %v", a.VarName, err)
				}
				if v.B() {
					pass = true
					break
				}
			}
			if !pass {
				removed++
				continue
			}
			vals := make([]algebra.Value, len(r.Vals))
			for i, v := range r.Vals {
				if keep[i] {
					vals[i] = v
				} else {
					vals[i] = algebra.Value{K: v.K}
				}
			}
			nt.Rows = append(nt.Rows, algebra.Tuple{Vals: vals, From: r.From, To: r.To})
		}
		out.Tables[name] = nt
	}
	return out, removed
}

// TestPlacementAcquisitional runs every query of the differential and
// rule corpora acquisitionally with the fragments rewrite.Place decides
// running at the resident (the history each α's sensor sees filtered and
// projected as a resident would send it) and holds the results to the
// reference evaluator on the complete history.
func TestPlacementAcquisitional(t *testing.T) {
	cat, corpus := placementCorpus(t)
	placed, filtered := 0, 0
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg, stmts, opt := placementPlans(t, cat, q)
			frags := rewrite.Place(opt...)
			hasPred := false
			for _, f := range frags {
				hasPred = hasPred || f.Pred != nil
			}
			if !hasPred {
				if strings.HasPrefix(q.Name, "frag-") {
					t.Errorf("nothing placed: %s", describeFrags(frags))
				}
				return
			}
			placed++
			filtered += placedExact(t, cat, cfg, stmts, opt, describeFrags(frags), func(h *algebra.History) (*algebra.History, int) {
				return fragmented(t, h, opt, frags)
			})
		})
	}
	t.Logf("%d of %d queries place a selection; %d tuples filtered at the resident", placed, len(corpus), filtered)
	if placed == 0 || filtered == 0 {
		t.Error("no query placed a selection that filtered anything")
	}
}

// placementCorpus is the differential catalog and the queries the
// placement tests run.
func placementCorpus(t *testing.T) (*algebra.Catalog, []testkit.Query) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl"))
	var corpus []testkit.Query
	for _, f := range []string{"fragments.tq", "queries.tq", "rules.tq"} {
		corpus = append(corpus, testkit.ReadCorpus(t, filepath.Join(root, f))...)
	}
	return cat, corpus
}

// placementPlans compiles q and rewrites it; cfg generates the histories
// to run it over (seed to be set).
func placementPlans(t *testing.T, cat *algebra.Catalog, q testkit.Query) (histgen.Config, []*check.Retrieve, []plan.Node) {
	cfg := histgen.DefaultConfig(0)
	cfg.Edges = true
	cfg.Integrity = true
	stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
	opt, _ := plans(t, cat, stmts, true)
	return cfg, stmts, opt
}

func describeFrags(frags map[*plan.Alpha]*rewrite.Fragment) string {
	s := ""
	for a, f := range frags {
		s += a.VarName + ": "
		if f.Pred != nil {
			s += f.Pred.String()
		}
		s += "; "
	}
	return s
}

// TestEntityPlacementAcquisitional: the entity-relation fragments
// PlaceEntities decides are exact — the optimised plans, run
// acquisitionally over the random histories with each fragmented entity
// relation cut down to the tuples its fragment passes (what a resident
// sends), give the reference evaluator's results over the complete
// histories.
func TestEntityPlacementAcquisitional(t *testing.T) {
	cat, corpus := placementCorpus(t)
	placed, filtered := 0, 0
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg, stmts, opt := placementPlans(t, cat, q)
			frags := rewrite.PlaceEntities(opt...)
			if len(frags) == 0 {
				return
			}
			placed++
			filtered += placedExact(t, cat, cfg, stmts, opt, "", func(h *algebra.History) (*algebra.History, int) {
				return entityFragmented(t, h, frags)
			})
		})
	}
	t.Logf("%d of %d queries place an entity selection; %d entity tuples filtered", placed, len(corpus), filtered)
	if placed == 0 || filtered == 0 {
		t.Error("no query placed an entity selection that filtered anything")
	}
}

// placedExact runs the plans acquisitionally over each random history cut
// as the residents' fragments would (cut: the history sent, and how many
// tuples it left out) against the reference over the whole, failing on a
// difference; it returns the tuples left out.
func placedExact(t *testing.T, cat *algebra.Catalog, cfg histgen.Config, stmts []*check.Retrieve, opt []plan.Node, frags string, cut func(*algebra.History) (*algebra.History, int)) int {
	t.Helper()
	filtered := 0
	eachHistory(t, cat, cfg, stmts, testkit.Histories(), func(seed int, h *algebra.History, want []*algebra.Table) {
		fh, removed := cut(h)
		filtered += removed
		got, _ := acquire(t, cat, fh, stmts, opt, 1)
		for i := range want {
			if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
				t.Fatalf("seed %d, statement %d, plan %s, fragments %s:\n--- acquired\n%s--- reference\n%s", seed, i+1, plan.String(opt[i]), frags, g, w)
			}
		}
	})
	return filtered
}

// eachHistory calls fn with each of n random histories (cfg, its seed set
// to 0, 1, … in turn) and the reference evaluator's results over it
// (histories whose evaluation overflows at the ends of time are skipped).
func eachHistory(t *testing.T, cat *algebra.Catalog, cfg histgen.Config, stmts []*check.Retrieve, n int, fn func(seed int, h *algebra.History, want []*algebra.Table)) {
	t.Helper()
	for seed := 0; seed < n; seed++ {
		cfg.Seed = uint64(seed)
		h := histgen.Random(cat, cfg)
		want, err := ref.Eval(h, stmts)
		if errors.Is(err, expr.ErrOverflow) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(seed, h, want)
	}
}

// entityFragmented is h with each entity relation that has a fragment cut
// down to the tuples the fragment passes, and how many it left out.
func entityFragmented(t *testing.T, h *algebra.History, frags map[string]*rewrite.EntityFragment) (*algebra.History, int) {
	start, end, _ := h.Extent()
	out := &algebra.History{Catalog: h.Catalog, Tables: map[string]*algebra.Table{}, Window: &algebra.Window{From: start, To: end}}
	removed := 0
	for name, tab := range h.Tables {
		f := frags[name]
		if f == nil {
			out.Tables[name] = tab
			continue
		}
		nt := &algebra.Table{Rel: tab.Rel}
		for _, r := range tab.Rows {
			pass := false
			for i, p := range f.Preds {
				b := make(expr.Binding, f.Vars[i]+1)
				b[f.Vars[i]] = r.Vals
				v, err := expr.Eval(p, b)
				if err != nil {
					t.Fatal(err)
				}
				pass = pass || v.B()
			}
			if pass {
				nt.Rows = append(nt.Rows, r)
			} else {
				removed++
			}
		}
		out.Tables[name] = nt
	}
	return out, removed
}
