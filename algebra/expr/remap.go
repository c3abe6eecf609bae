package expr

// Remap returns e with every variable index v replaced by m[v]. It copies
// the nodes it changes and shares the rest.
func Remap(e Expr, m []int) Expr {
	switch e := e.(type) {
	case *Col:
		c := *e
		c.Var = m[e.Var]
		return &c
	case *Unary:
		u := *e
		u.X = Remap(e.X, m)
		return &u
	case *Binary:
		b := *e
		b.X, b.Y = Remap(e.X, m), Remap(e.Y, m)
		return &b
	case *TimeOf:
		t := *e
		t.X = RemapT(e.X, m)
		return &t
	}
	return e
}

// RemapT is Remap for temporal expressions.
func RemapT(e TExpr, m []int) TExpr {
	switch e := e.(type) {
	case *TVar:
		v := *e
		v.Var = m[e.Var]
		return &v
	case *TBeginEnd:
		return &TBeginEnd{End: e.End, X: RemapT(e.X, m)}
	case *TAfter:
		return &TAfter{X: RemapT(e.X, m)}
	case *TBinary:
		return &TBinary{Extend: e.Extend, X: RemapT(e.X, m), Y: RemapT(e.Y, m)}
	}
	return e
}

// RemapP is Remap for predicates.
func RemapP(p Pred, m []int) Pred {
	switch p := p.(type) {
	case *PCmp:
		return &PCmp{Op: p.Op, X: RemapT(p.X, m), Y: RemapT(p.Y, m), At: p.At}
	case *PAnd:
		return &PAnd{X: RemapP(p.X, m), Y: RemapP(p.Y, m)}
	case *POr:
		return &POr{X: RemapP(p.X, m), Y: RemapP(p.Y, m)}
	case *PNot:
		return &PNot{X: RemapP(p.X, m)}
	}
	return p
}

// RemapValid is Remap for a valid clause.
func RemapValid(v *Valid, m []int) *Valid {
	if v.At != nil {
		return &Valid{At: RemapT(v.At, m)}
	}
	return &Valid{From: RemapT(v.From, m), To: RemapT(v.To, m)}
}

// ValidVars returns the set of variables a valid clause mentions.
func ValidVars(v *Valid) uint64 {
	if v.At != nil {
		return TVars(v.At)
	}
	return TVars(v.From) | TVars(v.To)
}
