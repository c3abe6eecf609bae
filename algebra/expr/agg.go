package expr

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// AggFunc is an aggregate function.
type AggFunc uint8

const (
	AggCount AggFunc = iota + 1
	AggCountU
	AggSum
	AggSumU
	AggAvg
	AggAvgU
	AggMin
	AggMax
	AggAny
	AggStddev     // population standard deviation
	AggPercentile // percentile(x, p): the nearest-rank p-th percentile
	AggHistogram  // histogram(x, w): the non-empty buckets of width w
)

var aggFuncNames = [...]string{"?", "count", "countU", "sum", "sumU", "avg", "avgU", "min", "max", "any", "stddev", "percentile", "histogram"}

// HasParam reports whether f takes a second argument (percentile's p,
// histogram's bucket width).
func (f AggFunc) HasParam() bool { return f == AggPercentile || f == AggHistogram }

func (f AggFunc) String() string {
	if int(f) < len(aggFuncNames) {
		return aggFuncNames[f]
	}
	return "?"
}

// Unique reports whether f aggregates distinct values (countU, sumU, avgU).
func (f AggFunc) Unique() bool { return f == AggCountU || f == AggSumU || f == AggAvgU }

// Total reports whether f has a value where nothing contributes (count and
// countU are 0 there, any is false); the others have none.
func (f AggFunc) Total() bool { return f == AggCount || f == AggCountU || f == AggAny }

// WindowKind is an aggregate's window.
type WindowKind uint8

const (
	WindowInstant WindowKind = iota // for each instant: the tuples valid at c
	WindowEver                      // for ever: the tuples valid at some chronon ≤ c
	WindowMoving                    // for each D: the tuples valid at some chronon in (c−D, c]
)

// Window is an aggregate's window; D is the moving window's width (ns).
type Window struct {
	Kind WindowKind
	D    int64
}

// Stretch is the end of the span over which a tuple valid until e (its
// exclusive end) contributes to a window: e for each instant, Forever for
// ever, e + D − 1 for a moving window of width D (saturating at Forever) —
// never before e, so an event at forever, [Forever, Next(Forever)),
// contributes at forever.
// A tuple valid over [b, e) contributes at chronon c exactly when
// b ≤ c < Stretch(e).
func (w Window) Stretch(e algebra.Time) algebra.Time {
	switch w.Kind {
	case WindowEver:
		return max(e, algebra.Forever)
	case WindowMoving:
		if e >= algebra.Forever-(w.D-1) {
			return max(e, algebra.Forever)
		}
		return e + w.D - 1
	}
	return e
}

func (w Window) String() string {
	switch w.Kind {
	case WindowEver:
		return "for ever"
	case WindowMoving:
		return "for each " + algebra.DurationVal(w.D).String()
	}
	return ""
}

// TimeOf is `begin of X` or `end of X` used as a value: the time X begins,
// or its end stamp (an interval's exclusive end; an event's own time). A
// binding for which X is empty has no value and contributes nothing.
//
// Expression evaluators have no times: an operator that evaluates an
// expression with TimeOf computes the times first and binds them as
// columns (see ReplaceLeaves).
type TimeOf struct {
	End bool
	X   TExpr
	At  source.Pos
}

// AggRef is the value of aggregate Index of the enclosing query at the
// chronon being evaluated. Like TimeOf it is bound as a column by the
// operator that evaluates the expression.
type AggRef struct {
	Index int
	T     algebra.Type
	At    source.Pos
	Txt   string // the aggregate as written, for printing
}

func (*TimeOf) Type() algebra.Type   { return algebra.TypeTime }
func (e *AggRef) Type() algebra.Type { return e.T }
func (e *TimeOf) Pos() source.Pos    { return e.At }
func (e *AggRef) Pos() source.Pos    { return e.At }
func (*TimeOf) isExpr()              {}
func (*AggRef) isExpr()              {}
func (e *TimeOf) String() string {
	kw := "begin of "
	if e.End {
		kw = "end of "
	}
	return kw + tparen(e.X)
}
func (e *AggRef) String() string { return e.Txt }

// errUnbound is returned when a TimeOf or AggRef reaches an evaluator that
// has no times or aggregates: a planning error.
var errUnbound = errors.New("internal: time or aggregate value not bound as a column")

// ReplaceLeaves returns e with each node for which fn returns non-nil
// replaced by that; it copies the nodes it changes and shares the rest.
// fn sees every node, parents first; a replaced node's children are not
// visited.
func ReplaceLeaves(e Expr, fn func(Expr) Expr) Expr {
	if r := fn(e); r != nil {
		return r
	}
	switch e := e.(type) {
	case *Unary:
		x := ReplaceLeaves(e.X, fn)
		if x == e.X {
			return e
		}
		u := *e
		u.X = x
		return &u
	case *Binary:
		x, y := ReplaceLeaves(e.X, fn), ReplaceLeaves(e.Y, fn)
		if x == e.X && y == e.Y {
			return e
		}
		b := *e
		b.X, b.Y = x, y
		return &b
	}
	return e
}

// Walk calls fn for e and every expression below it, parents first.
func Walk(e Expr, fn func(Expr)) {
	fn(e)
	switch e := e.(type) {
	case *Unary:
		Walk(e.X, fn)
	case *Binary:
		Walk(e.X, fn)
		Walk(e.Y, fn)
	}
}

// HasAgg reports whether e mentions an aggregate.
func HasAgg(e Expr) bool {
	found := false
	if e != nil {
		Walk(e, func(x Expr) {
			if _, ok := x.(*AggRef); ok {
				found = true
			}
		})
	}
	return found
}

// HasTimeOf reports whether e mentions begin of or end of.
func HasTimeOf(e Expr) bool {
	found := false
	if e != nil {
		Walk(e, func(x Expr) {
			if _, ok := x.(*TimeOf); ok {
				found = true
			}
		})
	}
	return found
}

// Key is a canonical text of e for deduplication (its printed form with
// variable indexes, so two variables of one name in different scopes
// differ).
func Key(e Expr) string {
	var b strings.Builder
	var walk func(e Expr)
	walk = func(e Expr) {
		switch e := e.(type) {
		case *Col:
			b.WriteString("#")
			b.WriteString(itoa(e.Var))
			b.WriteString(".")
			b.WriteString(itoa(e.Attr))
		case *Unary:
			b.WriteString("(" + e.Op.String() + " ")
			walk(e.X)
			b.WriteString(")")
		case *Binary:
			b.WriteString("(")
			walk(e.X)
			b.WriteString(" " + e.Op.String() + " ")
			walk(e.Y)
			b.WriteString(")")
		case *TimeOf:
			b.WriteString("(")
			b.WriteString(e.String())
			b.WriteString(" @")
			b.WriteString(tvarKey(e.X))
			b.WriteString(")")
		case *AggRef:
			b.WriteString("agg" + itoa(e.Index))
		case *Const:
			b.WriteString(e.T.String() + ":" + e.V.String())
		default:
			b.WriteString(e.String())
		}
	}
	walk(e)
	return b.String()
}

func tvarKey(e TExpr) string {
	s := ""
	for v := 0; v < 64; v++ {
		if TVars(e)&(1<<uint(v)) != 0 {
			s += itoa(v) + ","
		}
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
