package rewrite

import (
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// A retrieve's plan is a block — or, with aggregates, an apply over blocks:
// π over πT over any tree of σ, σT, × and ⋈ whose leaves are scans and α
// operators (each bound to one variable), or the unit relation. An α's
// arguments are blocks or entity relations of their own.

// leafVar returns the variable a leaf binds, or -1.
func leafVar(n plan.Node) int {
	switch n := n.(type) {
	case *plan.Scan:
		return n.Var
	case *plan.Alpha:
		return n.Var
	}
	return -1
}

// varsOf is the set of variables bound by leaves under n in its block (not
// looking into α arguments).
func varsOf(n plan.Node) uint64 {
	if v := leafVar(n); v >= 0 {
		return 1 << uint(v)
	}
	switch n := n.(type) {
	case *plan.Product:
		return varsOf(n.L) | varsOf(n.R)
	case *plan.Join:
		return varsOf(n.L) | varsOf(n.R)
	case *plan.Select:
		return varsOf(n.In)
	case *plan.SelectT:
		return varsOf(n.In)
	case *plan.ProjectT:
		return varsOf(n.In)
	case *plan.Project:
		return varsOf(n.In)
	}
	return 0
}

// block is a decomposed retrieve block.
type block struct {
	root    *plan.Project
	valid   *expr.Valid
	conds   []expr.Expr // where conjuncts and join conditions
	whens   []expr.Pred // when conjuncts
	leaves  map[int]plan.Node
	k       int
	hasUnit bool
}

// decompose analyses a block rooted at a π; ok is false for anything else
// (an α argument that is not a block, say).
func decompose(n plan.Node) (*block, bool) {
	pr, ok := n.(*plan.Project)
	if !ok {
		return nil, false
	}
	pt, ok := pr.In.(*plan.ProjectT)
	if !ok {
		return nil, false
	}
	b := &block{root: pr, valid: pt.Valid, leaves: map[int]plan.Node{}}
	var walk func(n plan.Node) bool
	walk = func(n plan.Node) bool {
		switch n := n.(type) {
		case *plan.Select:
			b.conds = append(b.conds, expr.Conjuncts(n.Pred)...)
			return walk(n.In)
		case *plan.SelectT:
			b.whens = append(b.whens, expr.PConjuncts(n.Pred)...)
			return walk(n.In)
		case *plan.Product:
			return walk(n.L) && walk(n.R)
		case *plan.Join:
			b.conds = append(b.conds, n.On...)
			return walk(n.L) && walk(n.R)
		case *plan.Unit:
			b.hasUnit = true
			return true
		case *plan.Scan, *plan.Alpha:
			b.leaves[leafVar(n)] = n
			return true
		}
		return false
	}
	if !walk(pt.In) {
		return nil, false
	}
	b.k = len(b.leaves)
	return b, true
}

// targetVars is the set of variables the targets mention.
func (b *block) targetVars() uint64 {
	var s uint64
	for _, t := range b.root.Targets {
		s |= expr.Vars(t.Expr)
	}
	return s
}

// rebuild makes the canonical block π(πT(σT(σ(L1 × … × Lk)))) from parts.
func rebuild(targets []check.Target, valid *expr.Valid, conds []expr.Expr, whens []expr.Pred, leaves []plan.Node, bag bool) *plan.Project {
	var n plan.Node
	for _, l := range leaves {
		if n == nil {
			n = l
		} else {
			n = &plan.Product{L: n, R: l}
		}
	}
	if n == nil {
		n = &plan.Unit{}
	}
	if len(conds) > 0 {
		n = &plan.Select{Pred: expr.And(conds), In: n}
	}
	if len(whens) > 0 {
		n = &plan.SelectT{Pred: expr.PAndOf(whens), In: n}
	}
	return &plan.Project{Targets: targets, In: &plan.ProjectT{Valid: valid, In: n}, Bag: bag}
}

// mapLeaves rebuilds a block with each leaf replaced by fn(leaf), without
// looking into α arguments.
func mapLeaves(n plan.Node, fn func(plan.Node) plan.Node) plan.Node {
	switch n.(type) {
	case *plan.Scan, *plan.Alpha:
		return fn(n)
	case *plan.Select, *plan.SelectT, *plan.Product, *plan.Join, *plan.ProjectT, *plan.Project:
		kids := n.Children()
		out := make([]plan.Node, len(kids))
		for i, k := range kids {
			out[i] = mapLeaves(k, fn)
		}
		return plan.WithChildren(n, out)
	}
	return n
}

// joinParts are what mapJoins lets a function change in a product or join.
type joinParts struct {
	L, R          plan.Node
	Overlap, Semi bool
}

// mapJoins rebuilds a block with fn applied to the parts of each product
// and join (their operands already rebuilt), without looking into α
// arguments.
func mapJoins(n plan.Node, fn func(*joinParts)) plan.Node {
	switch m := n.(type) {
	case *plan.Product:
		p := joinParts{mapJoins(m.L, fn), mapJoins(m.R, fn), m.Overlap, m.Semi}
		fn(&p)
		return &plan.Product{L: p.L, R: p.R, Overlap: p.Overlap, Semi: p.Semi}
	case *plan.Join:
		p := joinParts{mapJoins(m.L, fn), mapJoins(m.R, fn), m.Overlap, m.Semi}
		fn(&p)
		return &plan.Join{L: p.L, R: p.R, On: m.On, Overlap: p.Overlap, Semi: p.Semi}
	case *plan.Select, *plan.SelectT, *plan.ProjectT, *plan.Project:
		return plan.WithChildren(n, []plan.Node{mapJoins(n.Children()[0], fn)})
	}
	return n
}

func isSingleVar(s uint64) bool { return s != 0 && s&(s-1) == 0 }

func singleVar(s uint64) int {
	for i := 0; i < 64; i++ {
		if s == 1<<uint(i) {
			return i
		}
	}
	return -1
}
