package exec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/rewrite"
)

// interpret runs statements through the incremental interpreter.
func interpret(cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, opts exec.Options) ([]*algebra.Table, *exec.Network, error) {
	plans := make([]plan.Node, len(stmts))
	for i, s := range stmts {
		plans[i] = plan.Translate(s)
	}
	return interpretPlans(cat, h, stmts, plans, opts)
}

// storedPlans rewrites the statements' plans with the Stored rule set (its
// semi-join rule makes existential variables semi-joins) and reports
// whether any plan has a semi-join.
func storedPlans(t testing.TB, cat *algebra.Catalog, stmts []*check.Retrieve) ([]plan.Node, bool) {
	t.Helper()
	plans := make([]plan.Node, len(stmts))
	semi := false
	for i, s := range stmts {
		res, err := rewrite.RewriteStored(&rewrite.Context{Catalog: cat}, plan.Translate(s))
		if err != nil {
			t.Fatal(err)
		}
		plans[i] = res.Final
		semi = semi || hasSemi(res.Final)
	}
	return plans, semi
}

func hasSemi(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Product:
		if n.Semi {
			return true
		}
	case *plan.Join:
		if n.Semi {
			return true
		}
	}
	for _, k := range n.Children() {
		if hasSemi(k) {
			return true
		}
	}
	return false
}

// interpretPlans runs statements, compiled to plans, through the
// incremental interpreter.
func interpretPlans(cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, plans []plan.Node, opts exec.Options) ([]*algebra.Table, *exec.Network, error) {
	net, err := exec.Build(cat, stmts, plans, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := net.RunHistory(h); err != nil {
		return nil, net, err
	}
	out := make([]*algebra.Table, len(net.Stmts))
	for i, s := range net.Stmts {
		if !s.Result.Done {
			return nil, net, fmt.Errorf("statement %d: result stream not finished", i)
		}
		out[i] = s.Result.Table()
	}
	return out, net, nil
}

// render prints a table as CSV with ns times, the form expected files use.
func render(t *algebra.Table) string {
	var b strings.Builder
	var head []string
	for _, a := range t.Rel.Attrs {
		head = append(head, a.Name)
	}
	if t.Rel.IsEvent() {
		head = append(head, "at")
	} else {
		head = append(head, "from", "to")
	}
	b.WriteString(strings.Join(head, ",") + "\n")
	for _, row := range t.Rows {
		var cells []string
		for _, v := range row.Vals {
			cells = append(cells, v.Format(algebra.TimeNS))
		}
		cells = append(cells, algebra.FormatTime(row.From, algebra.TimeNS))
		if !t.Rel.IsEvent() {
			cells = append(cells, algebra.FormatTime(row.To, algebra.TimeNS))
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	return b.String()
}

// dumpHistory prints a history compactly, for failure reports.
func dumpHistory(h *algebra.History) string {
	var b strings.Builder
	for _, r := range h.Catalog.Relations {
		t := h.Table(r.Name)
		fmt.Fprintf(&b, "%s:\n", r.Name)
		for _, row := range t.Rows {
			var vals []string
			for _, v := range row.Vals {
				vals = append(vals, v.Format(algebra.TimeNS))
			}
			if r.IsEvent() {
				fmt.Fprintf(&b, "  (%s) @%s\n", strings.Join(vals, ", "), algebra.FormatTime(row.From, algebra.TimeNS))
			} else {
				fmt.Fprintf(&b, "  (%s) [%s, %s)\n", strings.Join(vals, ", "), algebra.FormatTime(row.From, algebra.TimeNS), algebra.FormatTime(row.To, algebra.TimeNS))
			}
		}
	}
	return b.String()
}
