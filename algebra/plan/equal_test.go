package plan_test

import (
	"reflect"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/internal/testkit"
)

// equalQueries cover every operator translation and WithAlphas make.
var equalQueries = []string{
	resumedByP1,
	`range of p is Process range of r is RunningOn retrieve (p.Process, r.Processor) where p.Process = r.Process`,
	`range of c is Clock[10] range of r is RunningOn retrieve (r.Processor) valid at begin of c when c overlap r`,
	`range of w is Waiting retrieve (w.Mailbox, Length = count(w.Process by w.Mailbox))`,
	`range of w is Waiting retrieve (w.Mailbox, Length = count(w.Process by w.Mailbox for ever))`,
	`retrieve (X = 1)`,
}

// TestEqualTranslations holds Equal to plans built twice: a plan equals
// its own second translation (distinct nodes, the same tree), no other
// query's, and not itself with α operators.
func TestEqualTranslations(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	for i, qi := range equalQueries {
		a := translateIn(t, cat, qi)[0]
		// The same text further down a file: other positions, same plan.
		b := translateIn(t, cat, "\n\n   "+qi)[0]
		if !plan.Equal(a, b) || !plan.Equal(a, clone(a)) {
			t.Errorf("%s: not equal to its second translation or its copy", plan.String(a))
		}
		wa, wb := plan.WithAlphas(a, cat), plan.WithAlphas(b, cat)
		if !plan.Equal(wa, wb) {
			t.Errorf("%s: not equal to its second translation", plan.String(wa))
		}
		if wa != a && plan.Equal(a, wa) {
			t.Errorf("%s: equal to %s", plan.String(a), plan.String(wa))
		}
		for j, qj := range equalQueries {
			if j != i && plan.Equal(a, translateIn(t, cat, qj)[0]) {
				t.Errorf("query %d equals query %d", i, j)
			}
		}
	}
	// Relations are compared by identity: the same query over another
	// compilation of the catalog is another plan.
	if plan.Equal(translateIn(t, cat, resumedByP1)[0], translateIn(t, testkit.PaperCatalog(t), resumedByP1)[0]) {
		t.Error("plans over different catalogs are equal")
	}
}

// TestEqualParameters changes one parameter of one operator at a time:
// each change makes a plan that is not Equal to the original.
func TestEqualParameters(t *testing.T) {
	cat := testkit.PaperCatalog(t)
	process := cat.Lookup("Process").Attrs[0].Type
	p1 := algebra.Entity("P1")
	pred := func(txt string) expr.Expr {
		return &expr.Binary{Op: expr.OpEq, T: algebra.TypeBool,
			X: &expr.Col{T: process, AttrName: "1"}, Y: &expr.Const{V: p1, T: process, Txt: txt}}
	}
	entities := &plan.SetOp{
		L: &plan.SelectEntity{Pred: pred(`"P1"`), In: &plan.EntitySource{Rel: cat.Lookup("Process")}},
		R: &plan.SetOp{Union: true, L: &plan.Const{Type: process, Vals: []algebra.Value{p1}}, R: &plan.Empty{Type: process}},
	}
	window := &algebra.Window{From: 0, To: 9}
	cases := []struct {
		name   string
		query  string // "" for entities
		change func(plan.Node) plan.Node
	}{
		{"product overlap", resumedByP1, func(n plan.Node) plan.Node {
			if p, ok := n.(*plan.Product); ok {
				return &plan.Product{L: p.L, R: p.R, Overlap: true}
			}
			return nil
		}},
		{"scan window", equalQueries[2], func(n plan.Node) plan.Node {
			if s, ok := n.(*plan.Scan); ok {
				c := *s
				c.Window = window
				return &c
			}
			return nil
		}},
		{"select predicate", resumedByP1, func(n plan.Node) plan.Node {
			if s, ok := n.(*plan.Select); ok {
				return &plan.Select{Pred: expr.Conjuncts(s.Pred)[0], In: s.In}
			}
			return nil
		}},
		{"valid clause", resumedByP1, func(n plan.Node) plan.Node {
			if p, ok := n.(*plan.ProjectT); ok {
				return &plan.ProjectT{Valid: &expr.Valid{At: &expr.TBeginEnd{X: p.Valid.At.(*expr.TBeginEnd).X}}, In: p.In}
			}
			return nil
		}},
		{"bag", resumedByP1, func(n plan.Node) plan.Node {
			if p, ok := n.(*plan.Project); ok {
				return &plan.Project{Targets: p.Targets, In: p.In, Bag: true}
			}
			return nil
		}},
		{"alpha keep", resumedByP1, func(n plan.Node) plan.Node {
			if a, ok := n.(*plan.Alpha); ok {
				c := *a
				c.Keep = []int{0, 1} // every attribute, but a list: printed as one
				return &c
			}
			return nil
		}},
		{"alpha restricted", resumedByP1, func(n plan.Node) plan.Node {
			if a, ok := n.(*plan.Alpha); ok {
				c := *a
				c.Restricted = []string{"S: S.Mailbox = W.Mailbox when S precede end of W"}
				return &c
			}
			return nil
		}},
		{"alpha sampling", equalQueries[2], func(n plan.Node) plan.Node {
			if a, ok := n.(*plan.Alpha); ok && a.When != nil {
				c := *a
				c.When = &plan.ClockSrc{N: 10}
				return &c
			}
			return nil
		}},
		{"aggregate window", equalQueries[3], func(n plan.Node) plan.Node {
			if g, ok := n.(*plan.Aggregate); ok {
				c := *g
				c.Window = expr.Window{Kind: expr.WindowEver}
				return &c
			}
			return nil
		}},
		{"apply groups", equalQueries[3], func(n plan.Node) plan.Node {
			if ap, ok := n.(*plan.Apply); ok {
				c := *ap
				c.Groups = [][]int{{}}
				return &c
			}
			return nil
		}},
		{"entity predicate", "", func(n plan.Node) plan.Node {
			if s, ok := n.(*plan.SelectEntity); ok {
				return &plan.SelectEntity{Pred: pred("P1"), In: s.In}
			}
			return nil
		}},
		{"set operation", "", func(n plan.Node) plan.Node {
			if s, ok := n.(*plan.SetOp); ok && s.Union {
				return &plan.SetOp{L: s.L, R: s.R}
			}
			return nil
		}},
		{"constants", "", func(n plan.Node) plan.Node {
			if c, ok := n.(*plan.Const); ok {
				return &plan.Const{Type: c.Type, Vals: []algebra.Value{p1, algebra.Entity("P2")}}
			}
			return nil
		}},
		{"empty type", "", func(n plan.Node) plan.Node {
			if _, ok := n.(*plan.Empty); ok {
				return &plan.Empty{Type: cat.Lookup("Mailbox").Attrs[0].Type}
			}
			return nil
		}},
	}
	for _, c := range cases {
		var orig plan.Node = entities
		if c.query != "" {
			orig = plan.WithAlphas(translateIn(t, cat, c.query)[0], cat)
		}
		changed := false
		got := plan.Map(orig, func(n plan.Node) plan.Node {
			if changed {
				return n
			}
			if m := c.change(n); m != nil {
				changed = true
				return m
			}
			return n
		})
		if !changed {
			t.Fatalf("%s: nothing to change in %s", c.name, plan.String(orig))
		}
		if plan.Equal(orig, got) || plan.Equal(got, orig) {
			t.Errorf("%s: %s equals %s", c.name, plan.String(got), plan.String(orig))
		}
		if !plan.Equal(got, clone(got)) {
			t.Errorf("%s: %s does not equal its copy", c.name, plan.String(got))
		}
	}
}

// clone copies a plan: the same tree, every node new.
func clone(p plan.Node) plan.Node {
	return plan.Map(p, func(n plan.Node) plan.Node {
		if len(n.Children()) > 0 {
			return n // new already, as its children are
		}
		v := reflect.ValueOf(n).Elem()
		c := reflect.New(v.Type())
		c.Elem().Set(v)
		return c.Interface().(plan.Node)
	})
}
