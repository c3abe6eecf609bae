package rewrite_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/rewrite"
)

// TestRuleSets holds the rule sets to what the rule classes are for: the
// α, entity-source, clock and variant classes are live only, the scan
// class stored only, the traditional class both; every rule belongs to a
// set, and names are unique.
func TestRuleSets(t *testing.T) {
	live, stored := rewrite.Rules(), rewrite.StoredRules()
	sets := map[string]rewrite.Set{}
	for _, r := range append(live, stored...) {
		if old, seen := sets[r.Name]; seen && old != r.Sets {
			t.Errorf("two rules named %s", r.Name)
		}
		sets[r.Name] = r.Sets
		want := rewrite.Live
		switch r.Class {
		case rewrite.Traditional:
			want = rewrite.Live | rewrite.Stored
		case rewrite.Scans:
			want = rewrite.Stored
		}
		if r.Sets != want {
			t.Errorf("rule %s (%s) is in sets %b, want %b", r.Name, r.Class, r.Sets, want)
		}
	}
	for _, c := range []struct {
		name  string
		rules []rewrite.Rule
		set   rewrite.Set
	}{{"Rules", live, rewrite.Live}, {"StoredRules", stored, rewrite.Stored}} {
		for i, r := range c.rules {
			if r.Sets&c.set == 0 {
				t.Errorf("%s holds %s, not of its set", c.name, r.Name)
			}
			if i > 0 && r.Class < c.rules[i-1].Class {
				t.Errorf("%s: %s (%s) after %s (%s): not in class order", c.name, r.Name, r.Class, c.rules[i-1].Name, c.rules[i-1].Class)
			}
		}
	}
}

// BenchmarkRewrite times the rewriter's fixpoint over every query of the
// differential corpora: live (plans with α operators, Rewrite) and stored
// (plans over stored relations, RewriteStored).
func BenchmarkRewrite(b *testing.B) {
	root := filepath.Join("..", "testdata", "differential")
	cat := testkit.LoadCatalog(b, filepath.Join(root, "spec.sdl"))
	var stmts []*check.Retrieve
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		for _, q := range testkit.ReadCorpus(b, filepath.Join(root, f)) {
			stmts = append(stmts, testkit.Compile(b, cat, q.Name, q.Text, 0)...)
		}
	}
	ctx := &rewrite.Context{Catalog: cat}
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			for _, s := range stmts {
				if _, err := rewrite.Rewrite(ctx, plan.WithAlphas(plan.Translate(s), cat)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("stored", func(b *testing.B) {
		for b.Loop() {
			for _, s := range stmts {
				if _, err := rewrite.RewriteStored(ctx, plan.Translate(s)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestSemiJoinReadsMarks: the semi-join rule takes the existential
// variables from the marks the checker put on the leaves, not from the
// block: as checked, ResumedbyP1's S goes right of a ⋉; with the marks
// cleared (or with W marked too, when no variable is left to bind) the
// same plan gets no semi-join.
func TestSemiJoinReadsMarks(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	q := testkit.ReadFile(t, filepath.Join(testkit.Root(t), "testdata", "paper", "resumed_by_p1.tq"))
	initial := plan.Translate(testkit.Compile(t, cat, "q.tq", q, 0)[0])
	mark := func(marks map[string]bool) plan.Node {
		return plan.Map(initial, func(n plan.Node) plan.Node {
			if s, ok := n.(*plan.Scan); ok {
				c := *s
				c.Exists = marks[s.VarName]
				return &c
			}
			return n
		})
	}
	for _, tt := range []struct {
		name  string
		plan  plan.Node
		right string // the scan right of the ⋉, "" for none
	}{
		{"as checked", initial, "S"},
		{"cleared", mark(nil), ""},
		{"every variable", mark(map[string]bool{"S": true, "W": true}), ""},
	} {
		for _, live := range []bool{false, true} {
			p, rw := tt.plan, rewrite.RewriteStored
			if live {
				p, rw = plan.WithAlphas(p, cat), rewrite.Rewrite
			}
			res, err := rw(&rewrite.Context{Catalog: cat}, p)
			if err != nil {
				t.Fatal(err)
			}
			right := ""
			for _, st := range res.Steps {
				if st.Rule != "semi-join" {
					continue
				}
				plan.Walk(st.After, func(n plan.Node) {
					if j, ok := n.(*plan.Join); ok && j.Semi {
						plan.Walk(j.R, func(n plan.Node) {
							switch l := n.(type) {
							case *plan.Scan:
								right = l.VarName
							case *plan.Alpha:
								right = l.VarName
							}
						})
					}
				})
			}
			if right != tt.right {
				t.Errorf("%s (live %v): the semi-join's right is %q, want %q\n%s", tt.name, live, right, tt.right, plan.String(res.Final))
			}
		}
	}
}
