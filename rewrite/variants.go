package rewrite

import (
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The operator-variant class: cheaper operators where the block's shape
// allows them.
func variantRules() []Rule {
	return []Rule{
		{
			Name:  "overlap-join",
			Class: Variants,
			Doc: `× → ×ₒ (and ⋈ → ⋈ₒ) in a block whose when clause requires all its
variables to overlap (t1 overlap … overlap tk, the default) and whose
inputs arrive in time order (no α that may report a tuple late). A stored
tuple that has ended by the current time cannot overlap any tuple still to
come, so the variant drops it at its end without evaluating the when
clause, and never keeps state for tuples that can no longer match (the
paper's ×₁).`,
			Sets:  Live,
			apply: on[*plan.Project](overlapJoin),
		},
	}
}

// overlapChain reports the variables of an overlap chain (t1 overlap t2
// overlap …) of plain variables.
func overlapChain(e expr.TExpr) (uint64, bool) {
	switch e := e.(type) {
	case *expr.TVar:
		return 1 << uint(e.Var), true
	case *expr.TBinary:
		if e.Extend {
			return 0, false
		}
		a, ok1 := overlapChain(e.X)
		b, ok2 := overlapChain(e.Y)
		return a | b, ok1 && ok2
	}
	return 0, false
}

func overlapJoin(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok || b.k < 2 {
		return nil
	}
	all := uint64(1)<<uint(b.k) - 1
	covered := false
	for _, w := range b.whens {
		p, ok := w.(*expr.PCmp)
		if !ok || p.Op != expr.Overlap {
			continue
		}
		x, ok1 := overlapChain(p.X)
		y, ok2 := overlapChain(p.Y)
		if ok1 && ok2 && x|y == all {
			covered = true
		}
	}
	if !covered {
		return nil
	}
	for _, l := range b.leaves {
		if a, ok := l.(*plan.Alpha); ok && plan.MayBeLate(a) {
			return nil
		}
	}
	return mapJoins(pr, func(j *joinParts) { j.Overlap = true })
}
