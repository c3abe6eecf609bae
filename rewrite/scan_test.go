package rewrite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/rewrite"
)

// storePlans is the datadriven "store" command: each statement's plan over
// stored relations, every scan rule applied, the final tree and what is
// read.
func storePlans(t *testing.T, cat *algebra.Catalog, stmts []*check.Retrieve) string {
	var b strings.Builder
	var finals []plan.Node
	for i, s := range stmts {
		if i > 0 {
			b.WriteString("\n")
		}
		res, err := rewrite.RewriteStored(&rewrite.Context{Catalog: cat}, plan.Translate(s))
		if err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "initial: %s\n", plan.String(res.Initial))
		for _, st := range res.Steps {
			fmt.Fprintf(&b, "%s: %s\n", st.Rule, plan.String(st.After))
		}
		b.WriteString("final:\n" + plan.Tree(res.Final))
		finals = append(finals, res.Final)
	}
	reads := plan.ReadsOf(finals)
	for _, r := range reads.Rels {
		w := "whole"
		if r.Window != nil {
			w = plan.WindowLabel(*r.Window)
		}
		fmt.Fprintf(&b, "reads %s %s\n", r.Rel.Name, w)
	}
	if reads.Clock != nil {
		fmt.Fprintf(&b, "clock ticks %s\n", plan.WindowLabel(*reads.Clock))
	}
	return b.String()
}

// runWindowed runs plans as a store that honours their windows would:
// each relation only where its window says, Clock ticks only in the
// clock window.
func runWindowed(t *testing.T, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, ps []plan.Node) []*algebra.Table {
	t.Helper()
	reads := plan.ReadsOf(ps)
	kept := algebra.NewHistory(cat)
	for _, r := range reads.Rels {
		for _, row := range h.Table(r.Rel.Name).Rows {
			if w := r.Window; w == nil || row.From <= w.To && row.To > w.From {
				kept.Table(r.Rel.Name).Rows = append(kept.Table(r.Rel.Name).Rows, row)
			}
		}
	}
	var window *algebra.Window
	if start, end, ok := h.Extent(); ok {
		window = &algebra.Window{From: start, To: end}
		if reads.Clock != nil {
			w := plan.Intersect(*window, *reads.Clock)
			window = &w
		}
	}
	net, err := exec.Build(cat, stmts, ps, exec.Options{SweepMin: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := net.RunSource(stream.TableSource(kept), window); err != nil {
		t.Fatal(err)
	}
	var out []*algebra.Table
	for _, s := range net.Stmts {
		out = append(out, s.Result.Table())
	}
	return out
}

// TestScanWindowDifferential: plans rewritten by the scan rules, read as
// their windows allow, give the reference evaluator's results on the
// complete history — for the differential and rule corpora and the
// timeslice corpus written for these rules — over random histories.
func TestScanWindowDifferential(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(t, filepath.Join(root, "spec.sdl"))
	var corpus []testkit.Query
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		corpus = append(corpus, testkit.ReadCorpus(t, filepath.Join(root, f))...)
	}
	n := testkit.Histories()
	windowed := 0
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Edges = true // histories across the epoch and at the ends of time too
			stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
			var ps []plan.Node
			used := map[string]bool{}
			for _, s := range stmts {
				res, err := rewrite.RewriteStored(&rewrite.Context{Catalog: cat}, plan.Translate(s))
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range res.Steps {
					used[st.Rule] = true
				}
				ps = append(ps, res.Final)
			}
			for _, want := range q.Rules {
				if want == "scan-window" && !used[want] {
					t.Errorf("rule %s not applied; plan: %s", want, plan.String(ps[len(ps)-1]))
				}
			}
			if used["scan-window"] {
				windowed++
			}
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				cfg.Integrity = seed%2 == 0
				h := histgen.Random(cat, cfg)
				want, err := ref.Eval(h, stmts)
				if errors.Is(err, expr.ErrOverflow) {
					continue // an overflow at the ends of time: algebra/exec's differential test compares those
				}
				if err != nil {
					t.Fatal(err)
				}
				got := runWindowed(t, cat, h, stmts, ps)
				for i := range want {
					if len(want[i].Rows) > 0 {
						nonEmpty++
					}
					if g, w := testkit.Rows(got[i]), testkit.Rows(want[i]); g != w {
						t.Fatalf("seed %d, statement %d, plan %s:\n--- windowed\n%s--- reference\n%s", seed, i+1, plan.String(ps[i]), g, w)
					}
				}
			}
			if nonEmpty == 0 && !q.EmptyOK {
				t.Errorf("every result was empty over %d histories", n)
			}
		})
	}
	if windowed < 10 {
		t.Errorf("only %d queries of the corpora got a scan window", windowed)
	}
}
