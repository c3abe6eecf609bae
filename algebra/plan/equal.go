package plan

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Equal reports whether a and b are the same plan: the same operators with
// the same parameters over equal inputs. Relations, enumerations and the
// retrieves that derive relations are compared by identity (Clock[n], which
// each use makes anew, by n), values by representation; source positions
// are not part of a plan and are ignored.
// The rewriter decides with it whether a rule changed a plan.
func Equal(a, b Node) bool {
	if a == b {
		return true
	}
	switch a := a.(type) {
	case *Scan:
		b, ok := b.(*Scan)
		return ok && a.Var == b.Var && a.VarName == b.VarName && sameRel(a.Rel, b.Rel) && a.From == b.From &&
			equalPtr(a.Window, b.Window) && a.Exists == b.Exists
	case *Unit:
		_, ok := b.(*Unit)
		return ok
	case *Product:
		b, ok := b.(*Product)
		return ok && a.Overlap == b.Overlap && a.Semi == b.Semi && Equal(a.L, b.L) && Equal(a.R, b.R)
	case *Join:
		b, ok := b.(*Join)
		return ok && a.Overlap == b.Overlap && a.Semi == b.Semi && slices.EqualFunc(a.On, b.On, equalExpr) &&
			Equal(a.L, b.L) && Equal(a.R, b.R)
	case *Select:
		b, ok := b.(*Select)
		return ok && equalExpr(a.Pred, b.Pred) && Equal(a.In, b.In)
	case *SelectT:
		b, ok := b.(*SelectT)
		return ok && equalPred(a.Pred, b.Pred) && Equal(a.In, b.In)
	case *ProjectT:
		b, ok := b.(*ProjectT)
		return ok && equalValid(a.Valid, b.Valid) && Equal(a.In, b.In)
	case *Project:
		b, ok := b.(*Project)
		return ok && a.Bag == b.Bag && slices.EqualFunc(a.Targets, b.Targets, equalTarget) && Equal(a.In, b.In)
	case *SetOp:
		b, ok := b.(*SetOp)
		return ok && a.Union == b.Union && Equal(a.L, b.L) && Equal(a.R, b.R)
	case *Alpha:
		b, ok := b.(*Alpha)
		return ok && a.Var == b.Var && a.VarName == b.VarName && a.Rel == b.Rel && a.Exists == b.Exists &&
			slices.Equal(a.Keep, b.Keep) && (a.Keep == nil) == (b.Keep == nil) &&
			slices.Equal(a.Restricted, b.Restricted) && slices.Equal(a.Hosts, b.Hosts) &&
			Equal(a.Enable, b.Enable) && equalOpt(a.When, b.When) && equalOpt(a.Who, b.Who)
	case *EntitySource:
		b, ok := b.(*EntitySource)
		return ok && a.Rel == b.Rel
	case *AllOf:
		b, ok := b.(*AllOf)
		return ok && a.Type == b.Type
	case *Const:
		b, ok := b.(*Const)
		return ok && a.Type == b.Type && slices.Equal(a.Vals, b.Vals)
	case *Empty:
		b, ok := b.(*Empty)
		return ok && a.Type == b.Type
	case *ClockSrc:
		b, ok := b.(*ClockSrc)
		return ok && a.N == b.N
	case *SelectEntity:
		b, ok := b.(*SelectEntity)
		return ok && equalExpr(a.Pred, b.Pred) && Equal(a.In, b.In)
	case *Aggregate:
		b, ok := b.(*Aggregate)
		return ok && a.Func == b.Func && a.Window == b.Window && a.NBy == b.NBy && a.T == b.T &&
			a.Text == b.Text && (a.Param == nil) == (b.Param == nil) && (a.Param == nil || a.Param.Cmp(b.Param) == 0) &&
			Equal(a.In, b.In)
	case *Apply:
		b, ok := b.(*Apply)
		return ok && a.Bag == b.Bag && slices.EqualFunc(a.Targets, b.Targets, equalTarget) &&
			equalExpr(a.Pred, b.Pred) && slices.EqualFunc(a.Groups, b.Groups, slices.Equal) &&
			Equal(a.In, b.In) && slices.EqualFunc(a.Aggs, b.Aggs, func(x, y *Aggregate) bool { return Equal(x, y) })
	}
	panic("plan.Equal: " + a.Label())
}

// sameRel reports whether two relations are one: the same relation of a
// catalog, or Clock[n] for the same n.
func sameRel(a, b *algebra.Relation) bool {
	return a == b || a.IsClock() && b.IsClock() && a.ClockN == b.ClockN
}

// equalOpt is Equal for optional inputs (an α's When and Who).
func equalOpt(a, b Node) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return Equal(a, b)
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalTarget(a, b check.Target) bool {
	return a.Name == b.Name && equalExpr(a.Expr, b.Expr)
}

// equalExpr reports whether two value expressions are the same tree (nil
// equals only nil).
func equalExpr(a, b expr.Expr) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *expr.Const:
		b, ok := b.(*expr.Const)
		return ok && a.V == b.V && a.T == b.T && a.Txt == b.Txt
	case *expr.Col:
		b, ok := b.(*expr.Col)
		return ok && a.Var == b.Var && a.Attr == b.Attr && a.T == b.T && a.VarName == b.VarName && a.AttrName == b.AttrName
	case *expr.Unary:
		b, ok := b.(*expr.Unary)
		return ok && a.Op == b.Op && a.T == b.T && equalExpr(a.X, b.X)
	case *expr.Binary:
		b, ok := b.(*expr.Binary)
		return ok && a.Op == b.Op && a.T == b.T && equalExpr(a.X, b.X) && equalExpr(a.Y, b.Y)
	case *expr.TimeOf:
		b, ok := b.(*expr.TimeOf)
		return ok && a.End == b.End && equalT(a.X, b.X)
	case *expr.AggRef:
		b, ok := b.(*expr.AggRef)
		return ok && a.Index == b.Index && a.T == b.T && a.Txt == b.Txt
	}
	panic("plan.Equal: expression " + a.String())
}

// equalT reports whether two temporal expressions are the same tree (nil
// equals only nil).
func equalT(a, b expr.TExpr) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *expr.TVar:
		b, ok := b.(*expr.TVar)
		return ok && a.Var == b.Var && a.Name == b.Name && a.Event == b.Event
	case *expr.TConst:
		b, ok := b.(*expr.TConst)
		return ok && a.T == b.T && a.Txt == b.Txt
	case *expr.TAll:
		_, ok := b.(*expr.TAll)
		return ok
	case *expr.TBeginEnd:
		b, ok := b.(*expr.TBeginEnd)
		return ok && a.End == b.End && equalT(a.X, b.X)
	case *expr.TAfter:
		b, ok := b.(*expr.TAfter)
		return ok && equalT(a.X, b.X)
	case *expr.TBinary:
		b, ok := b.(*expr.TBinary)
		return ok && a.Extend == b.Extend && equalT(a.X, b.X) && equalT(a.Y, b.Y)
	}
	panic("plan.Equal: temporal expression " + a.String())
}

// equalPred reports whether two temporal predicates are the same tree
// (nil equals only nil).
func equalPred(a, b expr.Pred) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch a := a.(type) {
	case *expr.PTrue:
		_, ok := b.(*expr.PTrue)
		return ok
	case *expr.PCmp:
		b, ok := b.(*expr.PCmp)
		return ok && a.Op == b.Op && equalT(a.X, b.X) && equalT(a.Y, b.Y)
	case *expr.PAnd:
		b, ok := b.(*expr.PAnd)
		return ok && equalPred(a.X, b.X) && equalPred(a.Y, b.Y)
	case *expr.POr:
		b, ok := b.(*expr.POr)
		return ok && equalPred(a.X, b.X) && equalPred(a.Y, b.Y)
	case *expr.PNot:
		b, ok := b.(*expr.PNot)
		return ok && equalPred(a.X, b.X)
	}
	panic("plan.Equal: predicate " + a.String())
}

func equalValid(a, b *expr.Valid) bool {
	if a == nil || b == nil {
		return a == b
	}
	return equalT(a.At, b.At) && equalT(a.From, b.From) && equalT(a.To, b.To)
}
