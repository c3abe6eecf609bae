package rewrite

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// Rules that move selections across the boundary between a query and its
// aggregates, so that an aggregate's own α operators are restricted to what
// the query can ever read of it. They belong to the traditional class: they
// only add selections, which the other rules then push into α operators.
func aggregateRules() []Rule {
	return []Rule{
		{
			Name:  "agg-group-select",
			Class: Traditional,
			Doc: `apply(σ[p(b)](Q), γ[f(x by b′)](I)) → apply(σ[p(b)](Q), γ[f(x by b′)](σ[p(b′)](I)))
when the where conjunct p of the query Q mentions nothing but the by-list
values b (over Q's variables) of an aggregate whose inner query I computes
them as b′. The apply reads the aggregate only for the groups Q's tuples
pick, and every one of those satisfies p; an inner tuple of a group that
fails p belongs to a group no one reads, so dropping it changes no value
that is read — whatever the function and the window. This is how "the rate
of P1's syscalls" enables the sensor for P1 only: p is S.Process = "P1"
outside, and inside it becomes a flag selection.`,
			Sets:  Live | Stored,
			apply: on[*plan.Apply](aggGroupSelect),
		},
		{
			Name:  "equality-constant",
			Class: Traditional,
			Doc: `σ[a = K](σ[a = b](X)) → σ[b = K](σ[a = K](σ[a = b](X))) in one block,
for attributes a and b of one (non-float) type and a constant K, when b is
the flag holder of an α (where the new conjunct can restrict a sensor):
equality is transitive, so the added conjunct holds for exactly the
bindings that already qualify. It lets a constant reach a variable joined to the one it
restricts — in particular inside an aggregate, where agg-group-select puts
the constant on the group's variable and the argument's variable is
joined to it. An in-list (a = K1 or a = K2 …) carries over the same way.
Not when b's α is already enabled for nothing but constants the conjunct
accepts (σ[b = K] then restricts nothing more): alpha-flag-select moves
the added conjunct into the α, so without this precondition the two rules
would undo each other's work forever.`,
			Sets:  Live | Stored,
			apply: on[*plan.Project](equalityConstant),
		},
	}
}

// addCond returns block p with the conjunct c added right above its
// product (below the σ and σT chain under πT), where push-select and the α
// rules find it.
func addCond(p *plan.Project, c expr.Expr) *plan.Project {
	var under func(n plan.Node) plan.Node
	under = func(n plan.Node) plan.Node {
		switch x := n.(type) {
		case *plan.Select:
			return &plan.Select{Pred: x.Pred, In: under(x.In)}
		case *plan.SelectT:
			return &plan.SelectT{Pred: x.Pred, In: under(x.In)}
		}
		return &plan.Select{Pred: c, In: n}
	}
	pt := p.In.(*plan.ProjectT)
	return &plan.Project{Targets: p.Targets, Bag: p.Bag,
		In: &plan.ProjectT{Valid: pt.Valid, In: under(pt.In)}}
}

func hasCond(b *block, c expr.Expr) bool {
	k := expr.Key(c)
	for _, x := range b.conds {
		if expr.Key(x) == k {
			return true
		}
	}
	return false
}

func aggGroupSelect(_ *Context, ap *plan.Apply) plan.Node {
	outer, ok := decompose(ap.In)
	if !ok {
		return nil
	}
	for j, g := range ap.Aggs {
		if g.NBy == 0 {
			continue
		}
		inner, ok := g.In.(*plan.Project)
		if !ok {
			continue
		}
		ib, ok := decompose(inner)
		if !ok {
			continue
		}
		// The by-list values: outer expressions by key, inner ones.
		by := map[string]expr.Expr{}
		for k, c := range ap.Groups[j] {
			by[expr.Key(outer.root.Targets[c].Expr)] = inner.Targets[k].Expr
		}
		for _, c := range outer.conds {
			moved, ok := overBy(c, by)
			if !ok || hasCond(ib, moved) {
				continue
			}
			aggs := append([]*plan.Aggregate(nil), ap.Aggs...)
			ng := *g
			ng.In = addCond(inner, moved)
			aggs[j] = &ng
			out := *ap
			out.Aggs = aggs
			return &out
		}
	}
	return nil
}

// overBy rewrites e, which must mention nothing but the expressions by
// names (by key), into the expressions they map to; ok is false when e
// mentions anything else, or none of them.
func overBy(e expr.Expr, by map[string]expr.Expr) (expr.Expr, bool) {
	found, other := false, false
	out := expr.ReplaceLeaves(e, func(x expr.Expr) expr.Expr {
		if r, ok := by[expr.Key(x)]; ok {
			found = true
			return r
		}
		switch x.(type) {
		case *expr.Col, *expr.TimeOf, *expr.AggRef:
			other = true
		}
		return nil
	})
	return out, found && !other
}

func equalityConstant(_ *Context, p *plan.Project) plan.Node {
	b, ok := decompose(p)
	if !ok {
		return nil
	}
	type colConsts struct {
		c    *expr.Col
		ks   []*expr.Const
		cond expr.Expr
	}
	var consts []colConsts
	var eqs [][2]*expr.Col
	for _, c := range b.conds {
		if col, ks, ok := inList(c); ok {
			consts = append(consts, colConsts{col, ks, c})
			continue
		}
		bin, ok := c.(*expr.Binary)
		if !ok || bin.Op != expr.OpEq {
			continue
		}
		x, xok := bin.X.(*expr.Col)
		y, yok := bin.Y.(*expr.Col)
		if xok && yok && algebra.Identical(x.T, y.T) && x.T.Kind != algebra.KindFloat {
			eqs = append(eqs, [2]*expr.Col{x, y})
		}
	}
	same := func(a, b *expr.Col) bool { return a.Var == b.Var && a.Attr == b.Attr }
	for _, cc := range consts {
		for _, e := range eqs {
			var other *expr.Col
			switch {
			case same(e[0], cc.c):
				other = e[1]
			case same(e[1], cc.c):
				other = e[0]
			default:
				continue
			}
			a, ok := b.alpha(other.Var)
			if !ok || a.Rel.FlagHolder != other.Attr {
				continue // only where it can restrict a sensor
			}
			add := expr.ReplaceLeaves(cc.cond, func(x expr.Expr) expr.Expr {
				if _, isCol := x.(*expr.Col); isCol {
					return other
				}
				return nil
			})
			if !hasCond(b, add) && !enabledWithin(a.Enable, asColumn1(add)) {
				return addCond(p, add)
			}
		}
	}
	return nil
}

// inList matches `a = K` or a disjunction `a = K1 or a = K2 …` of one
// (non-float) attribute a against constants of its type.
func inList(c expr.Expr) (*expr.Col, []*expr.Const, bool) {
	bin, ok := c.(*expr.Binary)
	if !ok {
		return nil, nil, false
	}
	switch bin.Op {
	case expr.OpOr:
		xc, xk, okx := inList(bin.X)
		yc, yk, oky := inList(bin.Y)
		if !okx || !oky || xc.Var != yc.Var || xc.Attr != yc.Attr {
			return nil, nil, false
		}
		return xc, append(xk, yk...), true
	case expr.OpEq:
		x, xok := bin.X.(*expr.Col)
		k, kok := bin.Y.(*expr.Const)
		if xok && kok && algebra.Identical(x.T, k.T) && x.T.Kind != algebra.KindFloat {
			return x, []*expr.Const{k}, true
		}
	}
	return nil, nil, false
}

// enabledWithin reports whether an α argument already holds only entities
// that satisfy pred (over column 1): constants pred accepts, a selection by
// pred itself, or an intersection one side of which is so. False means
// "not known", never "not so".
func enabledWithin(n plan.Node, pred expr.Expr) bool {
	switch n := n.(type) {
	case *plan.Empty:
		return true
	case *plan.Const:
		for _, v := range n.Vals {
			ok, err := expr.Eval(pred, expr.Binding{{v}})
			if err != nil || !ok.B() {
				return false
			}
		}
		return true
	case *plan.SelectEntity:
		return expr.Key(n.Pred) == expr.Key(pred) || enabledWithin(n.In, pred)
	case *plan.SetOp:
		if n.Union {
			return enabledWithin(n.L, pred) && enabledWithin(n.R, pred)
		}
		return enabledWithin(n.L, pred) || enabledWithin(n.R, pred)
	}
	return false
}
