package rewrite

import (
	"slices"
	"sort"

	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The traditional class: the relational algebra's own equivalences, which
// hold for the temporal algebra too because σ, σT, × and ⋈ keep every
// variable's valid time unchanged (only πT computes a new one) — among
// them the semi-join of a variable the result does not read.
func traditionalRules() []Rule {
	return []Rule{
		{
			Name:  "split-select",
			Class: Traditional,
			Doc: `σ[a and b](X) → σ[a](σ[b](X)). A conjunction holds exactly when
both conjuncts do; split, each conjunct can move on its own.`,
			Sets:  Live | Stored,
			apply: on[*plan.Select](splitSelect),
		},
		{
			Name:  "split-select-t",
			Class: Traditional,
			Doc:   `σT[a and b](X) → σT[a](σT[b](X)), for the same reason.`,
			Sets:  Live | Stored,
			apply: on[*plan.SelectT](splitSelectT),
		},
		{
			Name:  "push-select",
			Class: Traditional,
			Doc: `σ[p](L × R) → σ[p](L) × R when p mentions only variables of L
(likewise for R, and for ⋈). A pair survives the selection exactly when its
L part does, so filtering before the product drops the same pairs (the
paper's O1).`,
			Sets:  Live | Stored,
			apply: on[*plan.Select](pushSelect),
		},
		{
			Name:  "push-select-t",
			Class: Traditional,
			Doc: `σT[p](L × R) → σT[p](L) × R when p mentions only variables of L
(likewise for R, and for ⋈): as push-select, for valid times.`,
			Sets:  Live | Stored,
			apply: on[*plan.SelectT](pushSelectT),
		},
		{
			Name:  "select-to-join",
			Class: Traditional,
			Doc: `σ[l = r](L × R) → L ⋈[l = r] R when l is an attribute of L and r of R
(either way round), and σ[l = r](L ⋈[c] R) → L ⋈[c and l = r] R. ⋈ is by
definition the product restricted to the pairs its equalities hold for.`,
			Sets:  Live | Stored,
			apply: on[*plan.Select](selectToJoin),
		},
		{
			Name:  "project-pushdown",
			Class: Traditional,
			Doc: `π[targets](… α_v …) → π[targets](… α_v{used} …): an α's packets
need only carry the attributes of v the block uses (in its targets, where
clause and joins) and its flag holder. Attributes no expression reads
cannot change any result.`,
			Sets:  Live | Stored,
			apply: on[*plan.Project](projectPushdown),
		},
		{
			Name:  "semi-join",
			Class: Traditional,
			Doc: `L × R → L ⋉ R (and ⋈ → ⋉[on]) in a block whose result is a set (π,
not πbag) when R's variables are existential — no target, no valid clause
and no where conjunct with begin of or end of mentions them — and L binds
at least one variable that is not (the operands swap when it is L that is
existential). The checker marks the existential variables
(check.Retrieve.Exists); the rule reads the marks on the leaves. The result is the set of (targets, valid time) over the
bindings that satisfy where and when; neither depends on an existential
variable's tuple, so a binding of the other variables gives the same
result tuple with every witness that satisfies the where and when
conjuncts, and one witness decides it: the join keeps, per binding of the
other variables, whether some witness does, and forms one candidate
rather than one per witness. An aggregate's inner query is a bag, where
every binding counts, and is left alone.`,
			Sets:  Live | Stored,
			apply: on[*plan.Project](semiJoin),
		},
	}
}

func splitSelect(_ *Context, s *plan.Select) plan.Node {
	cs := expr.Conjuncts(s.Pred)
	if len(cs) < 2 {
		return nil
	}
	var out plan.Node = s.In
	for i := len(cs) - 1; i >= 0; i-- {
		out = &plan.Select{Pred: cs[i], In: out}
	}
	return out
}

func splitSelectT(_ *Context, s *plan.SelectT) plan.Node {
	cs := expr.PConjuncts(s.Pred)
	if len(cs) < 2 {
		return nil
	}
	var out plan.Node = s.In
	for i := len(cs) - 1; i >= 0; i-- {
		out = &plan.SelectT{Pred: cs[i], In: out}
	}
	return out
}

// binaryKids returns the operands of a product or join.
func binaryKids(n plan.Node) (l, r plan.Node, ok bool) {
	switch n := n.(type) {
	case *plan.Product:
		return n.L, n.R, true
	case *plan.Join:
		return n.L, n.R, true
	}
	return nil, nil, false
}

func withSides(n plan.Node, l, r plan.Node) plan.Node {
	return plan.WithChildren(n, []plan.Node{l, r})
}

func pushSelect(_ *Context, s *plan.Select) plan.Node {
	l, r, ok := binaryKids(s.In)
	if !ok {
		return nil
	}
	vars := expr.Vars(s.Pred)
	switch {
	case vars == 0:
		return nil
	case vars&^varsOf(l) == 0:
		return withSides(s.In, &plan.Select{Pred: s.Pred, In: l}, r)
	case vars&^varsOf(r) == 0:
		return withSides(s.In, l, &plan.Select{Pred: s.Pred, In: r})
	}
	return nil
}

func pushSelectT(_ *Context, s *plan.SelectT) plan.Node {
	l, r, ok := binaryKids(s.In)
	if !ok {
		return nil
	}
	vars := expr.PVars(s.Pred)
	switch {
	case vars == 0:
		return nil
	case vars&^varsOf(l) == 0:
		return withSides(s.In, &plan.SelectT{Pred: s.Pred, In: l}, r)
	case vars&^varsOf(r) == 0:
		return withSides(s.In, l, &plan.SelectT{Pred: s.Pred, In: r})
	}
	return nil
}

// joinEquality reports whether c is an equality of attributes, one from
// each side.
func joinEquality(c expr.Expr, lv, rv uint64) bool {
	b, ok := c.(*expr.Binary)
	if !ok || b.Op != expr.OpEq {
		return false
	}
	x, okx := b.X.(*expr.Col)
	y, oky := b.Y.(*expr.Col)
	if !okx || !oky {
		return false
	}
	xv, yv := uint64(1)<<uint(x.Var), uint64(1)<<uint(y.Var)
	return (xv&lv != 0 && yv&rv != 0) || (xv&rv != 0 && yv&lv != 0)
}

func selectToJoin(_ *Context, s *plan.Select) plan.Node {
	l, r, ok := binaryKids(s.In)
	if !ok || !joinEquality(s.Pred, varsOf(l), varsOf(r)) {
		return nil
	}
	var on []expr.Expr
	semi := false
	switch in := s.In.(type) {
	case *plan.Join:
		on = append(on, in.On...)
		semi = in.Semi
	case *plan.Product:
		semi = in.Semi
	}
	return &plan.Join{L: l, R: r, On: append(on, s.Pred), Semi: semi}
}

func projectPushdown(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok {
		return nil
	}
	used := map[int]map[int]bool{}
	note := func(e expr.Expr) {
		var walk func(e expr.Expr)
		walk = func(e expr.Expr) {
			switch e := e.(type) {
			case *expr.Col:
				if used[e.Var] == nil {
					used[e.Var] = map[int]bool{}
				}
				used[e.Var][e.Attr] = true
			case *expr.Unary:
				walk(e.X)
			case *expr.Binary:
				walk(e.X)
				walk(e.Y)
			}
		}
		walk(e)
	}
	for _, t := range b.root.Targets {
		note(t.Expr)
	}
	for _, c := range b.conds {
		note(c)
	}
	return mapLeaves(pr, func(l plan.Node) plan.Node {
		a, ok := l.(*plan.Alpha)
		if !ok {
			return l
		}
		keep := []int{a.Rel.FlagHolder}
		for attr := range used[a.Var] {
			if attr != a.Rel.FlagHolder {
				keep = append(keep, attr)
			}
		}
		sort.Ints(keep)
		if len(keep) == len(a.Rel.Attrs) {
			keep = nil
		}
		if equalKeep(keep, a.Keep) {
			return l
		}
		c := *a
		c.Keep = keep
		return &c
	})
}

// equalKeep reports whether two α attribute lists are the same (nil, all
// attributes, differs from every list).
func equalKeep(a, b []int) bool {
	return (a == nil) == (b == nil) && slices.Equal(a, b)
}

// existential is the set of the block's variables the checker marked
// existential (check.Retrieve.Exists, carried on the leaves): no target, no
// valid clause and no where conjunct that reads begin of or end of
// mentions them. The rules keep the marks true: none adds a target, and a
// leaf moved into an argument block of its own loses its mark there
// (argumentLeaf).
func (b *block) existential() uint64 {
	var ex uint64
	for v, l := range b.leaves {
		if leafExists(l) {
			ex |= 1 << uint(v)
		}
	}
	return ex
}

// leafExists reports a leaf's existential mark.
func leafExists(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Scan:
		return n.Exists
	case *plan.Alpha:
		return n.Exists
	}
	return false
}

func semiJoin(_ *Context, pr *plan.Project) plan.Node {
	if pr.Bag {
		return nil
	}
	b, ok := decompose(pr)
	if !ok || b.k < 2 {
		return nil
	}
	ex := b.existential()
	if ex == 0 {
		return nil
	}
	return mapJoins(pr, func(j *joinParts) {
		j.L, j.R, j.Semi = semiSides(j.L, j.R, j.Semi, ex)
	})
}

// semiSides orders the operands of a product or join for a semi-join: the
// side whose variables are all existential (in ex) goes right, provided
// the other side has a variable that is not.
func semiSides(l, r plan.Node, semi bool, ex uint64) (plan.Node, plan.Node, bool) {
	if semi {
		return l, r, true
	}
	lv, rv := varsOf(l), varsOf(r)
	switch {
	case rv&^ex == 0 && lv&^ex != 0:
		return l, r, true
	case lv&^ex == 0 && rv&^ex != 0:
		return r, l, true
	}
	return l, r, false
}
