package rewrite

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// Fragment is what a resident runs for one α of a final plan (the paper's
// horizontal fragmentation; EndoScope's plan placement): a selection on
// the α's own attributes against constants, and the attributes it sends.
// It is a placement, not a rewrite: the plan keeps its σ and π, and runs
// them again at the monitor, so a fragment can only spare packets and
// bytes that no result depends on.
type Fragment struct {
	Alpha *plan.Alpha
	// Pred holds of every tuple of the α that can reach a result (nil:
	// none placed). Its columns are the α's variable (Col.Var = Var).
	Pred expr.Expr
	Var  int
	// Keep lists the attributes the plan reads (nil: all); the others need
	// not cross the wire.
	Keep []int
}

// Place decides the fragments of a program's final plans, one per α that
// has something to place (a selection, or attributes to leave out).
//
// Why a selection placed is exact. A conjunct c of a block's where clause
// (a σ or a join condition of the canonical block π(πT(σT(σ(L1 × … ×
// Lk))))) that mentions only variable v holds of every binding the block
// produces; a tuple of v that fails c is in no binding, so no result
// depends on its packet. When the same α appears in several places (a
// shared subplan), a tuple can matter if it passes any of them: the
// fragment is the disjunction, and nothing when one place has no
// selection or is not such a block. Only comparisons the residents
// evaluate exactly as the algebra does are placed (wire.Pred): a column of
// v against a constant of the column's type — integers, durations, enums
// and strings with any comparison, entities and booleans with = and !=
// (entity identifiers order naturally here, bytewise there; floats' NaN
// and times' clocks differ) — combined by and, or, not; a conjunct with
// anything else stays at the monitor only.
func Place(roots ...plan.Node) map[*plan.Alpha]*Fragment {
	seen := map[*plan.Alpha]int{}          // occurrences in the plans
	preds := map[*plan.Alpha][]expr.Expr{} // per block occurrence: its placed selection (nil: none)
	vars := map[*plan.Alpha]int{}
	for _, root := range roots {
		plan.Walk(root, func(n plan.Node) {
			if a, ok := n.(*plan.Alpha); ok {
				seen[a]++
				return
			}
			b, ok := decompose(n)
			if !ok {
				return
			}
			for v, l := range b.leaves {
				a, ok := l.(*plan.Alpha)
				if !ok {
					continue
				}
				placed := b.placeable(v, a.Rel)
				if len(placed) == 0 {
					preds[a] = append(preds[a], nil)
					continue
				}
				if w, ok := vars[a]; ok && w != v {
					preds[a] = append(preds[a], nil) // renumbered elsewhere: give up
					continue
				}
				vars[a] = v
				preds[a] = append(preds[a], expr.And(placed))
			}
		})
	}
	out := map[*plan.Alpha]*Fragment{}
	for a, n := range seen {
		f := &Fragment{Alpha: a, Var: vars[a], Keep: a.Keep}
		ps := preds[a]
		if len(ps) == n && !slices.Contains(ps, nil) {
			f.Pred = ps[0]
			for _, p := range ps[1:] {
				f.Pred = &expr.Binary{Op: expr.OpOr, X: f.Pred, Y: p, T: algebra.TypeBool}
			}
		}
		if f.Pred != nil || f.Keep != nil {
			out[a] = f
		}
	}
	return out
}

// EntityFragment is what a resident runs for one entity relation the
// plans read: a selection on its tuples, the disjunction of Preds (each
// over its own variable, Vars[i]). Like Fragment, a placement: the plans
// run their selections again.
type EntityFragment struct {
	Rel   *algebra.Relation
	Preds []expr.Expr
	Vars  []int
}

// PlaceEntities decides the fragments of a program's final plans on the
// entity relations they read: one for each primitive entity relation
// every read of which is a range variable of a block with a placeable
// selection on it (the argument is Place's: a tuple that fails all of
// them is in no binding of any block, and an entity tuple's begin and end
// carry the same values, so the monitor sees a tuple whole or not at
// all). A relation read any other way — an α's entity source, a block
// without such a selection, anything that is not a block — gets none.
func PlaceEntities(roots ...plan.Node) map[string]*EntityFragment {
	reads := map[string]int{}    // reads of each entity relation
	placedBy := map[string]int{} // of those, selected ones
	out := map[string]*EntityFragment{}
	entity := func(r *algebra.Relation) bool { return r.Class == algebra.ClassEntity && !r.Derived }
	for _, root := range roots {
		plan.Walk(root, func(n plan.Node) {
			switch x := n.(type) {
			case *plan.Scan:
				if entity(x.Rel) {
					reads[x.Rel.Name]++
				}
				return
			case *plan.EntitySource:
				reads[x.Rel.Name]++ // read whole
				return
			}
			b, ok := decompose(n)
			if !ok {
				return
			}
			for v, l := range b.leaves {
				sc, ok := l.(*plan.Scan)
				if !ok || !entity(sc.Rel) {
					continue
				}
				sel := b.placeable(v, sc.Rel)
				if len(sel) == 0 {
					continue
				}
				f := out[sc.Rel.Name]
				if f == nil {
					f = &EntityFragment{Rel: sc.Rel}
					out[sc.Rel.Name] = f
				}
				placedBy[sc.Rel.Name]++
				p := expr.And(sel)
				if !slices.ContainsFunc(f.Preds, func(q expr.Expr) bool { return q.String() == p.String() }) {
					f.Preds = append(f.Preds, p) // (alike reads, one disjunct)
					f.Vars = append(f.Vars, v)
				}
			}
		})
	}
	for name := range out {
		if placedBy[name] != reads[name] {
			delete(out, name)
		}
	}
	return out
}

// placeable returns the block's conjuncts a resident can run for its
// variable v, of relation rel: those mentioning v alone, made of
// comparisons it evaluates as the algebra does.
func (b *block) placeable(v int, rel *algebra.Relation) []expr.Expr {
	var out []expr.Expr
	for _, c := range b.conds {
		if expr.Vars(c) == 1<<uint(v) && placeable(c, v, rel) {
			out = append(out, c)
		}
	}
	return out
}

// placeable reports whether e (mentioning only variable v) is made of
// comparisons a resident evaluates as the algebra does (see Place).
func placeable(e expr.Expr, v int, rel *algebra.Relation) bool {
	switch e := e.(type) {
	case *expr.Unary:
		return e.Op == expr.OpNot && placeable(e.X, v, rel)
	case *expr.Binary:
		switch {
		case e.Op == expr.OpAnd || e.Op == expr.OpOr:
			return placeable(e.X, v, rel) && placeable(e.Y, v, rel)
		case !e.Op.IsComparison():
			return false
		}
		col, k, _, ok := ColConst(e)
		if !ok || col.Var != v || col.Attr >= len(rel.Attrs) || k.V.K != rel.Attrs[col.Attr].Type.Kind {
			return false
		}
		switch k.V.K {
		case algebra.KindInt, algebra.KindDuration, algebra.KindEnum, algebra.KindString:
			return true
		case algebra.KindEntity, algebra.KindBool:
			return e.Op == expr.OpEq || e.Op == expr.OpNe
		}
	}
	return false
}

// ColConst splits a comparison of a column with a constant, either way
// round, into the column, the constant and whether it was written
// constant-first (then the comparison reads mirrored: c < x is x > c).
func ColConst(e *expr.Binary) (col *expr.Col, k *expr.Const, mirrored, ok bool) {
	if c, ok := e.X.(*expr.Col); ok {
		k, ok := e.Y.(*expr.Const)
		return c, k, false, ok
	}
	if c, ok := e.Y.(*expr.Col); ok {
		k, ok := e.X.(*expr.Const)
		return c, k, true, ok
	}
	return nil, nil, false, false
}
