package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// Explain renders a rewrite for people: the initial algebra, each rule
// applied (name, class, the plan before and after), the final plan as a
// tree, and for each α what it will enable and how many packets it is
// expected to receive. h, when not nil, supplies the statistics for the
// estimates.
func Explain(res Result, h *algebra.History) string {
	var b strings.Builder
	b.WriteString("initial algebra:\n")
	indent(&b, plan.Tree(res.Initial))
	if len(res.Steps) == 0 {
		b.WriteString("rules applied: none\n")
	} else {
		b.WriteString("rules applied:\n")
		for i, s := range res.Steps {
			fmt.Fprintf(&b, "  %d. %s (%s)\n", i+1, s.Rule, s.Class)
			fmt.Fprintf(&b, "     before: %s\n", plan.String(s.Before))
			fmt.Fprintf(&b, "     after:  %s\n", plan.String(s.After))
		}
	}
	b.WriteString("final plan:\n")
	indent(&b, plan.Tree(res.Final))
	if ef := PlaceEntities(res.Final); len(ef) > 0 {
		b.WriteString("entity relations at the resident, live (if every read of each in the program is selected: then the disjunction of the reads):\n")
		names := make([]string, 0, len(ef))
		for name := range ef {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			var ps []string
			for _, p := range ef[name].Preds {
				ps = append(ps, p.String())
			}
			fmt.Fprintf(&b, "  %s: σ[%s] (the monitor runs it again)\n", name, strings.Join(ps, " or "))
		}
	}
	alphas := Alphas(res.Final)
	if len(alphas) == 0 {
		b.WriteString("sensors: none (nothing is enabled)\n")
		return b.String()
	}
	b.WriteString("sensors:\n")
	frags := Place(res.Final)
	initial := map[string]*plan.Alpha{}
	for _, a := range Alphas(res.Initial) {
		if _, ok := initial[a.VarName]; !ok {
			initial[a.VarName] = a
		}
	}
	for _, a := range alphas {
		flag := a.Rel.Attrs[a.Rel.FlagHolder]
		fmt.Fprintf(&b, "  %s on %s (%s, flag in the %s %s)\n", a.Label(), a.Rel.Name, a.Rel.Strategy.Kind, flag.Role, flag.Name)
		fmt.Fprintf(&b, "    enables: %s\n", Describe(a.Enable))
		if a.When != nil {
			fmt.Fprintf(&b, "    samples at: %s\n", Describe(a.When))
		}
		if a.Who != nil {
			fmt.Fprintf(&b, "    asks: %s\n", Describe(a.Who))
		}
		f := frags[a]
		if f != nil {
			fmt.Fprintf(&b, "    at the resident: %s\n", describeFragment(f))
		}
		if h != nil {
			rate := perSecond(h)
			n, exact := Estimate(a, h)
			fmt.Fprintf(&b, "    estimated packets: %s%s\n", bound(exact), rate(n))
			if i := initial[a.VarName]; i != nil && i.Rel == a.Rel {
				n, exact := Estimate(i, h)
				fmt.Fprintf(&b, "      before rewriting: %s%s\n", bound(exact), rate(n))
			}
			if f != nil && f.Pred != nil {
				n, exact := estimate(a, h, f)
				fmt.Fprintf(&b, "      across the wire (the resident's selection): %s%s\n", bound(exact), rate(n))
			}
		}
	}
	return b.String()
}

func bound(exact bool) string {
	if exact {
		return ""
	}
	return "at most "
}

// perSecond renders a packet count with its rate over h's extent.
func perSecond(h *algebra.History) func(n int) string {
	start, end, ok := h.Extent()
	return func(n int) string {
		if !ok || end <= start || end == algebra.Forever {
			return fmt.Sprint(n)
		}
		return fmt.Sprintf("%d (%.3g/s)", n, float64(n)/(float64(end-start)/1e9))
	}
}

// describeFragment says what a resident runs for an α (Place).
func describeFragment(f *Fragment) string {
	var parts []string
	if f.Pred != nil {
		parts = append(parts, "σ["+f.Pred.String()+"]")
	}
	if f.Keep != nil {
		names := make([]string, len(f.Keep))
		for i, k := range f.Keep {
			names[i] = f.Alpha.Rel.Attrs[k].Name
		}
		parts = append(parts, "sends only "+strings.Join(names, ", "))
	}
	return strings.Join(parts, ", ") + " (the monitor runs it again)"
}

func indent(b *strings.Builder, text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString("  " + l + "\n")
	}
}

// Alphas lists the α operators of a plan, arguments before the α that
// reads them.
func Alphas(n plan.Node) []*plan.Alpha {
	var out []*plan.Alpha
	var walk func(n plan.Node)
	walk = func(n plan.Node) {
		for _, k := range n.Children() {
			walk(k)
		}
		if a, ok := n.(*plan.Alpha); ok {
			out = append(out, a)
		}
	}
	walk(n)
	return out
}

// Describe says in words which entities (or instants) an argument holds.
func Describe(n plan.Node) string {
	switch x := n.(type) {
	case *plan.EntitySource:
		return fmt.Sprintf("every %s while it exists (entity source)", x.Rel.Attrs[0].Type)
	case *plan.AllOf:
		return fmt.Sprintf("every %s", x.Type)
	case *plan.Const:
		return x.Label() + " (constant)"
	case *plan.Empty:
		return "nothing"
	case *plan.ClockSrc:
		return x.Label() + " ticks"
	case *plan.SelectEntity:
		return fmt.Sprintf("those of [%s] with %s", Describe(x.In), x.Pred)
	case *plan.SetOp:
		op := "in both"
		if x.Union {
			op = "in either"
		}
		return fmt.Sprintf("those %s of [%s] and [%s]", op, Describe(x.L), Describe(x.R))
	case *plan.Project:
		if d, ok := describeSpans(x); ok {
			return d
		}
		if len(x.Targets) == 1 {
			from := ""
			if pt, ok := x.In.(*plan.ProjectT); ok {
				from = " " + strings.TrimPrefix(pt.Valid.String(), "valid ")
			}
			return fmt.Sprintf("each %s%s, derived by %s", x.Targets[0].Expr, from, plan.String(x))
		}
	}
	return plan.String(n)
}

// Estimate bounds the packets an α would receive over a history if its
// argument held, for the whole history, the entities it can ever hold
// (exact when the argument is an entity source, every entity, a constant
// or a selection of those; an upper bound otherwise). Events and D
// intervals are one packet per tuple, traced intervals two, sampled ones
// one per sampling instant within the tuple.
func Estimate(a *plan.Alpha, h *algebra.History) (int, bool) { return estimate(a, h, nil) }

// estimate is Estimate counting only the tuples fragment f passes (nil:
// every tuple).
func estimate(a *plan.Alpha, h *algebra.History, f *Fragment) (int, bool) {
	t := h.Table(a.Rel.Name)
	if t == nil {
		return 0, false
	}
	set, exact := entitySet(a.Enable, h)
	step := int64(0)
	if a.Sampled() {
		step = h.Catalog.ClockPeriod
		if c, ok := a.When.(*plan.ClockSrc); ok {
			step *= c.N
		}
	}
	start, end, _ := h.Extent()
	n := 0
	for _, r := range t.Rows {
		if set != nil && !set[r.Vals[a.Rel.FlagHolder].S] {
			continue
		}
		if f != nil && f.Pred != nil {
			bd := make(expr.Binding, f.Var+1)
			bd[f.Var] = r.Vals
			if v, err := expr.Eval(f.Pred, bd); err == nil && !v.B() {
				continue
			}
		}
		switch {
		case a.Rel.IsEvent(), a.Rel.Strategy.Kind == algebra.TracedThenDisabled:
			n++
		case a.Sampled():
			from, to := max(r.From, start), min(r.To, algebra.Next(end))
			if from < to {
				first := algebra.FirstTick(step, from)
				if first < to {
					n += int((to-1-first)/step) + 1
				}
			}
		default:
			n += 2
		}
	}
	return n, exact
}

// entitySet is the set of entity identifiers an argument can hold (nil:
// all), and whether that set is exact.
func entitySet(n plan.Node, h *algebra.History) (map[string]bool, bool) {
	switch x := n.(type) {
	case *plan.EntitySource, *plan.AllOf:
		return nil, true
	case *plan.Const:
		s := map[string]bool{}
		for _, v := range x.Vals {
			s[v.S] = true
		}
		return s, true
	case *plan.Empty:
		return map[string]bool{}, true
	case *plan.SelectEntity:
		in, exact := entitySet(x.In, h)
		all := in
		if all == nil {
			t, _ := plan.EntityType(x)
			all = allEntities(t, h)
		}
		out := map[string]bool{}
		for id := range all {
			ok, err := expr.Eval(x.Pred, expr.Binding{{algebra.Entity(id)}})
			if err == nil && ok.B() {
				out[id] = true
			}
		}
		return out, exact
	case *plan.SetOp:
		l, le := entitySet(x.L, h)
		r, re := entitySet(x.R, h)
		switch {
		case x.Union && (l == nil || r == nil):
			return nil, le && re
		case x.Union:
			for k := range r {
				l[k] = true
			}
			return l, le && re
		case l == nil:
			return r, le && re
		case r == nil:
			return l, le && re
		}
		out := map[string]bool{}
		for k := range l {
			if r[k] {
				out[k] = true
			}
		}
		return out, le && re
	case *plan.Project:
		// The values its target takes over the rows of its leaf relation:
		// an upper bound (conditions and valid times are not evaluated).
		if len(x.Targets) == 1 {
			if col, ok := x.Targets[0].Expr.(*expr.Col); ok {
				var leaf *algebra.Relation
				plan.Walk(x, func(m plan.Node) {
					switch l := m.(type) {
					case *plan.Scan:
						if l.Var == col.Var && leaf == nil {
							leaf = l.Rel
						}
					case *plan.Alpha:
						if l.Var == col.Var && leaf == nil {
							leaf = l.Rel
						}
					}
				})
				if leaf != nil && h.Table(leaf.Name) != nil {
					out := map[string]bool{}
					for _, r := range h.Table(leaf.Name).Rows {
						out[r.Vals[col.Attr].S] = true
					}
					return out, false
				}
			}
		}
	}
	return nil, false
}

func allEntities(t algebra.Type, h *algebra.History) map[string]bool {
	out := map[string]bool{}
	if r := h.Catalog.EntityRelation(t.Entity); r != nil {
		for _, row := range h.Table(r.Name).Rows {
			out[row.Vals[0].S] = true
		}
	}
	return out
}

// describeSpans names, symbolically, the spans an argument of the α join
// and entity-selection rules enables — π[F = u.A](πT[from X to Y](σ[c](u)))
// — as "each u.A of R u where c, from X to Y" ("from X on" when Y is
// forever), naming the statement a derived R comes from.
func describeSpans(pr *plan.Project) (string, bool) {
	if len(pr.Targets) != 1 {
		return "", false
	}
	pt, ok := pr.In.(*plan.ProjectT)
	if !ok || pt.Valid == nil || pt.Valid.From == nil || pt.Valid.To == nil {
		return "", false
	}
	var conds []string
	n := pt.In
	for {
		sel, ok := n.(*plan.Select)
		if !ok {
			break
		}
		conds = append(conds, sel.Pred.String())
		n = sel.In
	}
	var rel *algebra.Relation
	var name, what string
	switch l := n.(type) {
	case *plan.Scan:
		rel, name, what = l.Rel, l.VarName, ""
		if l.From != nil {
			what = fmt.Sprintf(" (%s is derived: %s)", l.Rel.Name, strings.Join(strings.Fields(l.From.Text), " "))
		}
	case *plan.Alpha:
		rel, name, what = l.Rel, l.VarName, fmt.Sprintf(" (as %s's sensor delivers it: %s)", l.Rel.Name, Describe(l.Enable))
	default:
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "each %s of %s %s", pr.Targets[0].Expr, rel.Name, name)
	if len(conds) > 0 {
		fmt.Fprintf(&b, " while %s", strings.Join(conds, " and "))
	}
	if c, ok := pt.Valid.To.(*expr.TConst); ok && c.T == algebra.Forever {
		fmt.Fprintf(&b, ", from %s on", pt.Valid.From)
	} else {
		fmt.Fprintf(&b, ", from %s to %s", pt.Valid.From, pt.Valid.To)
	}
	b.WriteString(what)
	return b.String(), true
}
