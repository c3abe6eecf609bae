package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// The interpreter decides when and valid clauses before every interval end
// they mention is known. An unknown end is only known to lie in a range: at
// least the current horizon (no End before it is still to come) and after
// the interval's begin, at most Forever. Temporal expressions are evaluated
// on ranges (interval arithmetic) and predicates in three-valued logic; a
// result is acted on only once it is determined. Interval arithmetic is
// conservative (it may say "unknown" where a cleverer analysis would not),
// which can only delay a decision, never change it: once every end is known
// the evaluation is exact.
//
// The semantics mirrored here is docs/tquel.md's: an event at t is [t, t+1)
// (Forever included: its event ends at Next(Forever)); begin of X is an
// event at X.b; end of X is an event at X.e (at Forever when X.e is past
// it, algebra.Clamp), or X itself for an event; X overlap Y is [max b, min e),
// empty when max b ≥ min e, an event if either is; X extend Y is
// [min b, max e), an interval. An empty operand makes every construct empty
// and every predicate false.

type tri uint8

const (
	no tri = iota
	yes
	maybe
)

func and3(a, b tri) tri {
	if a == no || b == no {
		return no
	}
	if a == yes && b == yes {
		return yes
	}
	return maybe
}

func or3(a, b tri) tri {
	if a == yes || b == yes {
		return yes
	}
	if a == no && b == no {
		return no
	}
	return maybe
}

func not3(a tri) tri {
	switch a {
	case yes:
		return no
	case no:
		return yes
	}
	return maybe
}

// rng is the set of values a time may still take: [lo, hi], inclusive.
type rng struct{ lo, hi algebra.Time }

func (r rng) exact() bool      { return r.lo == r.hi }
func point(t algebra.Time) rng { return rng{t, t} }
func rnext(r rng) rng          { return rng{algebra.Next(r.lo), algebra.Next(r.hi)} }
func rclamp(r rng) rng         { return rng{algebra.Clamp(r.lo), algebra.Clamp(r.hi)} }
func rmax(a, b rng) rng        { return rng{max(a.lo, b.lo), max(a.hi, b.hi)} }
func rmin(a, b rng) rng        { return rng{min(a.lo, b.lo), min(a.hi, b.hi)} }

func le3(a, b rng) tri {
	switch {
	case a.hi <= b.lo:
		return yes
	case a.lo > b.hi:
		return no
	}
	return maybe
}

func lt3(a, b rng) tri {
	switch {
	case a.hi < b.lo:
		return yes
	case a.lo >= b.hi:
		return no
	}
	return maybe
}

func eq3(a, b rng) tri {
	switch {
	case a.exact() && b.exact() && a.lo == b.lo:
		return yes
	case a.hi < b.lo || b.hi < a.lo:
		return no
	}
	return maybe
}

// span is the possible value of a temporal expression.
type span struct {
	b, e  rng
	empty tri
}

// varSpan is what is known of one variable's valid time.
type varSpan struct {
	b, e rng
}

// evalT evaluates a temporal expression over variable spans.
func evalT(e expr.TExpr, vs []varSpan) span {
	switch e := e.(type) {
	case *expr.TVar:
		v := vs[e.Var]
		return span{b: v.b, e: v.e, empty: no}
	case *expr.TConst:
		return span{b: point(e.T), e: point(algebra.Next(e.T)), empty: no}
	case *expr.TAll:
		return span{b: point(algebra.Beginning), e: point(algebra.Forever), empty: no}
	case *expr.TBeginEnd:
		x := evalT(e.X, vs)
		if !e.End {
			return span{b: x.b, e: rnext(x.b), empty: x.empty}
		}
		if e.X.IsEvent() {
			return x
		}
		return endEvent(x)
	case *expr.TAfter:
		return endEvent(evalT(e.X, vs))
	case *expr.TBinary:
		x, y := evalT(e.X, vs), evalT(e.Y, vs)
		if e.Extend {
			return span{b: rmin(x.b, y.b), e: rmax(x.e, y.e), empty: or3(x.empty, y.empty)}
		}
		b, en := rmax(x.b, y.b), rmin(x.e, y.e)
		return span{b: b, e: en, empty: or3(or3(x.empty, y.empty), not3(lt3(b, en)))}
	}
	panic("exec: unknown temporal expression")
}

// endEvent is the event at x's end: at x.e, or at Forever for the end of
// an event at forever.
func endEvent(x span) span {
	b := rclamp(x.e)
	return span{b: b, e: rnext(b), empty: x.empty}
}

// evalP evaluates a temporal predicate over variable spans.
func evalP(p expr.Pred, vs []varSpan) tri {
	switch p := p.(type) {
	case *expr.PTrue:
		return yes
	case *expr.PAnd:
		a := evalP(p.X, vs)
		if a == no {
			return no
		}
		return and3(a, evalP(p.Y, vs))
	case *expr.POr:
		a := evalP(p.X, vs)
		if a == yes {
			return yes
		}
		return or3(a, evalP(p.Y, vs))
	case *expr.PNot:
		return not3(evalP(p.X, vs))
	case *expr.PCmp:
		x, y := evalT(p.X, vs), evalT(p.Y, vs)
		nonEmpty := and3(not3(x.empty), not3(y.empty))
		if nonEmpty == no {
			return no
		}
		var c tri
		switch p.Op {
		case expr.Precede:
			c = le3(x.e, y.b)
		case expr.Overlap:
			c = and3(lt3(x.b, y.e), lt3(y.b, x.e))
		case expr.Equal:
			c = and3(eq3(x.b, y.b), eq3(x.e, y.e))
		}
		return and3(nonEmpty, c)
	}
	panic("exec: unknown predicate")
}

// stop is the end of a valid-from-to result: the begin of an event, the end
// of an interval — at most Forever.
func stop(e expr.TExpr, s span) rng {
	if e.IsEvent() {
		return s.b
	}
	return rclamp(s.e)
}
