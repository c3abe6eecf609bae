package exec_test

import (
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
	"github.com/tqmon/tqmon/internal/testkit"
)

// withJoin rewrites σ[where](L × R) into σ[rest](L ⋈[equalities] R): the
// equi-join variant of the product.
func withJoin(t *testing.T, p plan.Node) plan.Node {
	pr := p.(*plan.Project)
	pt := pr.In.(*plan.ProjectT)
	var sel *plan.Select
	var parent *plan.SelectT
	switch n := pt.In.(type) {
	case *plan.SelectT:
		parent, sel = n, n.In.(*plan.Select)
	case *plan.Select:
		sel = n
	}
	prod := sel.In.(*plan.Product)
	var on, rest []expr.Expr
	for _, c := range expr.Conjuncts(sel.Pred) {
		if b, ok := c.(*expr.Binary); ok && b.Op == expr.OpEq {
			if _, l := b.X.(*expr.Col); l {
				if _, r := b.Y.(*expr.Col); r && expr.Vars(b.X) != expr.Vars(b.Y) {
					on = append(on, c)
					continue
				}
			}
		}
		rest = append(rest, c)
	}
	if len(on) == 0 {
		t.Fatal("no equality to join on")
	}
	var n plan.Node = &plan.Join{L: prod.L, R: prod.R, On: on}
	if len(rest) > 0 {
		n = &plan.Select{Pred: expr.And(rest), In: n}
	}
	if parent != nil {
		n = &plan.SelectT{Pred: parent.Pred, In: n}
	}
	return &plan.Project{Targets: pr.Targets, In: &plan.ProjectT{Valid: pt.Valid, In: n}}
}

// TestJoinOperator runs plans using ⋈ against the reference evaluator.
func TestJoinOperator(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata/differential/spec.sdl"))
	queries := []string{
		`range of p is Process range of r is RunningOn retrieve (p.Process, r.Cpu) where p.Process = r.Process and p.State = "Running"`,
		`range of s is SendMessage range of w is Waiting retrieve (W = w.Process) valid at end of w where s.Mailbox = w.Mailbox and s.Process = "P1" when s precede end of w`,
	}
	for _, q := range queries {
		stmts := testkit.Compile(t, cat, "q", q, 30)
		p := withJoin(t, plan.Translate(stmts[0]))
		if got := plan.String(p); !strings.Contains(got, "⋈[") {
			t.Fatalf("plan has no join: %s", got)
		}
		for seed := uint64(0); seed < 100; seed++ {
			h := histgen.Random(cat, histgen.DefaultConfig(seed))
			want, err := ref.Eval(h, stmts)
			if err != nil {
				t.Fatal(err)
			}
			got := runPlan(t, cat, h, stmts, []plan.Node{p})
			if g, w := render(got), render(want[0]); g != w {
				t.Fatalf("seed %d: %s\n--- join plan\n%s--- reference\n%s", seed, plan.String(p), g, w)
			}
		}
	}
}

func runPlan(t *testing.T, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, plans []plan.Node) *algebra.Table {
	t.Helper()
	net, err := exec.Build(cat, stmts, plans, exec.Options{SweepMin: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := net.RunHistory(h); err != nil {
		t.Fatal(err)
	}
	return net.Stmts[0].Result.Table()
}
