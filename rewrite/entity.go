package rewrite

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The entity-source class (the paper's O4 and O5), over the entity
// relations α operators take as arguments. Both rest on referential
// integrity: enabling a sensor for an entity while the entity does not
// exist delivers nothing, because no tuple names an entity outside its
// lifetime.
func entitySourceRules() []Rule {
	return []Rule{
		{
			Name:  "select-source",
			Class: EntitySources,
			Doc: `σ[1 = K](Source) → K, and σ[1 = K1 or 1 = K2 …](Source) → K1, K2 …
(the paper's O4). The selection holds K while K exists; the constant holds
it at all times, which differs only when K does not exist and so enables
nothing that could fire. Selections commute, so one of constants above
others over the source trades places with them: σ[1 = K](σ[q](Source)) →
σ[q](K), which select-const then evaluates.`,
			Sets:  Live,
			apply: on[*plan.SelectEntity](selectSource),
		},
		{
			Name:  "select-const",
			Class: EntitySources,
			Doc: `σ[p](K1, …, Kn) → the constants p accepts (∅ when none): the
selection of a constant relation is evaluated once. Over an intersection
with a constant side, σ[p](K ∩ E) → σ[p](K) ∩ E (and E ∩ K alike): an
entity is in σ[p](K ∩ E) exactly when it is in K, satisfies p and is in E.`,
			Sets:  Live,
			apply: on[*plan.SelectEntity](selectConst),
		},
		{
			Name:  "intersect-source",
			Class: EntitySources,
			Doc: `E ∩ Source → E and Source ∩ E → E for the entity source of E's type
(the paper's O5): E holds an entity at most where … the source holds it
while it exists, and outside its lifetime the entity enables nothing.`,
			Sets:  Live,
			apply: on[*plan.SetOp](intersectSource),
		},
		{
			Name:  "intersect-const",
			Class: EntitySources,
			Doc: `K ∩ K′ → the constants in both; E ∩ ∅ → ∅; E ∪ ∅ → E: set algebra
on constant relations, which hold their members at all times.`,
			Sets:  Live,
			apply: on[*plan.SetOp](intersectConst),
		},
	}
}

// constsOf reads `1 = K` or a disjunction of such, returning the Ks.
func constsOf(e expr.Expr) ([]algebra.Value, bool) {
	switch e := e.(type) {
	case *expr.Binary:
		switch e.Op {
		case expr.OpOr:
			a, ok1 := constsOf(e.X)
			b, ok2 := constsOf(e.Y)
			return append(a, b...), ok1 && ok2
		case expr.OpEq:
			_, lc := e.X.(*expr.Col)
			k, rk := e.Y.(*expr.Const)
			if !lc || !rk {
				_, lc = e.Y.(*expr.Col)
				k, rk = e.X.(*expr.Const)
			}
			if lc && rk {
				return []algebra.Value{k.V}, true
			}
		}
	}
	return nil, false
}

func isSource(n plan.Node) bool {
	switch n.(type) {
	case *plan.EntitySource, *plan.AllOf:
		return true
	}
	return false
}

func selectSource(_ *Context, s *plan.SelectEntity) plan.Node {
	// Selections between σ[1 = K …] and the source stay, above it.
	var between []*plan.SelectEntity
	in := s.In
	for {
		x, ok := in.(*plan.SelectEntity)
		if !ok {
			break
		}
		between = append(between, x)
		in = x.In
	}
	if !isSource(in) {
		return nil
	}
	ks, ok := constsOf(s.Pred)
	if !ok {
		return nil
	}
	t, _ := plan.EntityType(in)
	var out plan.Node = &plan.Const{Type: t, Vals: dedupe(ks)}
	for i := len(between) - 1; i >= 0; i-- {
		out = &plan.SelectEntity{Pred: between[i].Pred, In: out}
	}
	return out
}

func dedupe(vs []algebra.Value) []algebra.Value {
	var out []algebra.Value
	for _, v := range vs {
		dup := false
		for _, w := range out {
			if algebra.Equal(v, w) {
				dup = true
			}
		}
		if !dup {
			out = append(out, v)
		}
	}
	return out
}

func selectConst(_ *Context, s *plan.SelectEntity) plan.Node {
	switch in := s.In.(type) {
	case *plan.Const:
		var keep []algebra.Value
		for _, v := range in.Vals {
			ok, err := expr.Eval(s.Pred, expr.Binding{{v}})
			if err == nil && ok.B() {
				keep = append(keep, v)
			}
		}
		if len(keep) == 0 {
			return &plan.Empty{Type: in.Type}
		}
		return &plan.Const{Type: in.Type, Vals: keep}
	case *plan.Empty:
		return in
	case *plan.SetOp:
		if in.Union {
			return nil
		}
		if isConst(in.L) {
			return &plan.SetOp{L: &plan.SelectEntity{Pred: s.Pred, In: in.L}, R: in.R}
		}
		if isConst(in.R) {
			return &plan.SetOp{L: in.L, R: &plan.SelectEntity{Pred: s.Pred, In: in.R}}
		}
	}
	return nil
}

func isConst(n plan.Node) bool {
	switch n.(type) {
	case *plan.Const, *plan.Empty:
		return true
	}
	return false
}

func intersectSource(_ *Context, s *plan.SetOp) plan.Node {
	if s.Union {
		return nil
	}
	lt, lok := plan.EntityType(s.L)
	rt, rok := plan.EntityType(s.R)
	if !lok || !rok || !algebra.Identical(lt, rt) {
		return nil
	}
	switch {
	case isSource(s.R):
		return s.L
	case isSource(s.L):
		return s.R
	}
	return nil
}

func intersectConst(_ *Context, s *plan.SetOp) plan.Node {
	_, le := s.L.(*plan.Empty)
	_, re := s.R.(*plan.Empty)
	switch {
	case s.Union && le:
		return s.R
	case s.Union && re:
		return s.L
	case !s.Union && le:
		return s.L
	case !s.Union && re:
		return s.R
	}
	lc, lok := s.L.(*plan.Const)
	rc, rok := s.R.(*plan.Const)
	if s.Union || !lok || !rok {
		return nil
	}
	var keep []algebra.Value
	for _, v := range lc.Vals {
		for _, w := range rc.Vals {
			if algebra.Equal(v, w) {
				keep = append(keep, v)
			}
		}
	}
	if len(keep) == 0 {
		return &plan.Empty{Type: lc.Type}
	}
	return &plan.Const{Type: lc.Type, Vals: keep}
}
