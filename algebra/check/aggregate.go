package check

import (
	"math/big"
	"strconv"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
)

// maxAggDepth bounds aggregate nesting.
const maxAggDepth = 8

var aggFuncs = map[tquel.AggFunc]expr.AggFunc{
	tquel.AggCount: expr.AggCount, tquel.AggCountU: expr.AggCountU,
	tquel.AggSum: expr.AggSum, tquel.AggSumU: expr.AggSumU,
	tquel.AggAvg: expr.AggAvg, tquel.AggAvgU: expr.AggAvgU,
	tquel.AggMin: expr.AggMin, tquel.AggMax: expr.AggMax, tquel.AggAny: expr.AggAny,
	tquel.AggStddev: expr.AggStddev, tquel.AggPercentile: expr.AggPercentile, tquel.AggHistogram: expr.AggHistogram,
}

// aggregate checks an aggregate term of the query c checks and returns the
// reference to it.
//
// Quel's scoping: the aggregate's variables are its own — a variable named
// inside it ranges independently of the same name outside — except that
// its by list is evaluated twice, over the aggregate's copies to group its
// bindings and over the enclosing query's to pick the group. collect made
// the by-list variables variables of the enclosing query.
func (c *stmtChecker) aggregate(a *tquel.Aggregate) expr.Expr {
	fn, ok := aggFuncs[a.Func]
	if !ok {
		c.fail().unknownAggregate(a.At)
		return nil
	}
	if c.depth >= maxAggDepth {
		c.fail().aggregateDepth(a.At)
		return nil
	}
	text := tquel.FormatExpr(a)
	bad := false

	// The by list over the enclosing query's variables.
	var outerBy []expr.Expr
	for _, b := range a.By {
		if containsAggregate(b) {
			c.fail().aggregateInBy(b.Pos())
			bad = true
			continue
		}
		e := c.value(b)
		if e == nil {
			bad = true
			continue
		}
		outerBy = append(outerBy, e)
	}

	// The aggregate's own query.
	sub := &stmtChecker{s: c.s, rep: c.rep, ranges: c.ranges, failed: c.failed, depth: c.depth + 1}
	roots := []root{{a.Arg, false}, {a.Where, false}, {a.When, true}}
	for _, b := range a.By {
		roots = append(roots, root{b, false})
	}
	sub.collect(roots, a.At)
	inner := &Retrieve{File: c.rep.file, Pos: a.At, Bag: true, Text: text}
	for i, b := range a.By {
		e := sub.value(b)
		if e != nil {
			inner.Targets = append(inner.Targets, Target{Name: "by" + strconv.Itoa(i+1), Expr: e, Pos: b.Pos()})
		}
	}
	arg := sub.value(a.Arg)
	if arg != nil {
		inner.Targets = append(inner.Targets, Target{Name: "arg", Expr: arg, Pos: a.Arg.Pos()})
	}
	if a.Where != nil {
		if w := sub.value(a.Where); w != nil {
			if w.Type().Kind != algebra.KindBool {
				sub.fail().whereNotCondition(a.Where.Pos(), w.Type())
			} else {
				inner.Where = w
			}
		}
	}
	if a.When != nil {
		inner.When = sub.pred(a.When)
	} else {
		inner.When = sub.defaultWhen()
		inner.WhenDefault = true
	}
	inner.Valid = sub.defaultValid()
	inner.ValidDefault = true
	if sub.bad {
		c.bad = true
		return nil
	}
	if bad || arg == nil {
		return nil
	}
	inner.Vars = sub.vars
	inner.Aggs = sub.aggs
	res := &algebra.Relation{Class: algebra.ClassInterval, FlagHolder: -1, File: c.rep.file, Pos: a.At, Src: c.rep.src, Derived: true}
	if inner.Valid.IsEvent() {
		res.Class = algebra.ClassEvent
	}
	for _, t := range inner.Targets {
		res.Attrs = append(res.Attrs, algebra.Attr{Name: t.Name, Type: t.Expr.Type(), Pos: t.Pos})
	}
	inner.Result = res

	t, ok := c.aggType(fn, arg, a.Arg.Pos())
	if !ok {
		return nil
	}
	param, ok := c.aggParam(fn, a, arg.Type())
	if !ok {
		return nil
	}
	w := expr.Window{}
	switch a.Window.Kind {
	case tquel.WindowEver:
		w.Kind = expr.WindowEver
	case tquel.WindowMoving:
		w.Kind = expr.WindowMoving
		if a.Window.Size == nil {
			c.fail().windowNeedsSize(a.Window.At)
			return nil
		}
		if a.Window.Size.NS <= 0 {
			c.fail().windowNotPositive(a.Window.Size.At, a.Window.Size.Text)
			return nil
		}
		w.D = a.Window.Size.NS
	}
	g := &Agg{Func: fn, Param: param, Window: w, By: outerBy, Inner: inner, T: t, At: a.At, Text: text}
	c.aggs = append(c.aggs, g)
	return &expr.AggRef{Index: len(c.aggs) - 1, T: t, At: a.At, Txt: text}
}

// aggType is the type of fn over arguments like arg.
func (c *stmtChecker) aggType(fn expr.AggFunc, arg expr.Expr, pos source.Pos) (algebra.Type, bool) {
	at := arg.Type()
	switch fn {
	case expr.AggCount, expr.AggCountU:
		return algebra.TypeInt, true
	case expr.AggAny:
		return algebra.TypeBool, true
	case expr.AggSum, expr.AggSumU:
		switch at.Kind {
		case algebra.KindInt, algebra.KindFloat, algebra.KindDuration:
			return at, true
		}
		c.fail().sumType(pos, fn, at)
	case expr.AggAvg, expr.AggAvgU:
		switch at.Kind {
		case algebra.KindInt, algebra.KindFloat:
			return algebra.TypeFloat, true
		case algebra.KindDuration:
			return algebra.TypeDuration, true
		}
		c.fail().avgType(pos, fn, at)
	case expr.AggMin, expr.AggMax, expr.AggPercentile:
		if ordered(at) {
			return at, true
		}
		c.fail().minMaxType(pos, fn, at)
	case expr.AggStddev:
		switch at.Kind {
		case algebra.KindInt, algebra.KindFloat:
			return algebra.TypeFloat, true
		case algebra.KindDuration:
			return algebra.TypeDuration, true
		}
		c.fail().avgType(pos, fn, at)
	case expr.AggHistogram:
		switch at.Kind {
		case algebra.KindInt, algebra.KindFloat, algebra.KindDuration:
			return algebra.TypeString, true
		}
		c.fail().sumType(pos, fn, at)
	}
	return algebra.Type{}, false
}

// aggParam checks the second argument of an aggregate over arguments of
// type at: a constant p from 0 to 100 for percentile, a constant width
// greater than 0 for histogram (a duration for durations, a number
// otherwise), none for the others. It is kept exactly as written.
func (c *stmtChecker) aggParam(fn expr.AggFunc, a *tquel.Aggregate, at algebra.Type) (*big.Rat, bool) {
	if !fn.HasParam() {
		if a.Param != nil {
			c.fail().aggNoParam(a.Param.Pos(), fn)
			return nil, false
		}
		return nil, true
	}
	if a.Param == nil {
		c.fail().aggNeedsParam(a.At, fn)
		return nil, false
	}
	var p *big.Rat
	x := a.Param
	if paren, ok := x.(*tquel.Paren); ok {
		x = paren.X
	}
	neg := false
	if u, ok := x.(*tquel.Unary); ok && u.Op == tquel.OpNeg {
		neg, x = true, u.X
	}
	duration := false
	switch x := x.(type) {
	case *tquel.NumberLit:
		p, _ = new(big.Rat).SetString(x.Text)
	case *tquel.DurationLit:
		p, duration = big.NewRat(x.NS, 1), true
	}
	if p == nil {
		c.fail().aggParamConst(a.Param.Pos(), fn)
		return nil, false
	}
	if neg {
		p.Neg(p)
	}
	text := tquel.FormatExpr(a.Param)
	switch fn {
	case expr.AggPercentile:
		if duration || p.Sign() < 0 || p.Cmp(big.NewRat(100, 1)) > 0 {
			c.fail().percentileRange(a.Param.Pos(), text)
			return nil, false
		}
	case expr.AggHistogram:
		if duration != (at.Kind == algebra.KindDuration) {
			c.fail().histogramWidthType(a.Param.Pos(), text, at)
			return nil, false
		}
		if p.Sign() <= 0 {
			c.fail().histogramWidth(a.Param.Pos(), text)
			return nil, false
		}
	}
	return p, true
}

func containsAggregate(e tquel.Expr) bool {
	switch e := e.(type) {
	case *tquel.Aggregate:
		return true
	case *tquel.Paren:
		return containsAggregate(e.X)
	case *tquel.Unary:
		return containsAggregate(e.X)
	case *tquel.Not:
		return containsAggregate(e.X)
	case *tquel.Binary:
		return containsAggregate(e.X) || containsAggregate(e.Y)
	}
	return false
}
