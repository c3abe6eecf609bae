package rewrite

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The scan class applies to plans evaluated over stored relations (a
// database, a history): no α operators, every relation a scan. It turns
// temporal selections on a variable into time windows on the variable's
// scan, so a store reads only the blocks the window needs (a timeslice of
// a long history reads a few blocks, not the history). A window is a
// promise, not a filter: the selection stays in the plan, and a reader may
// deliver more than the window asks.
func scanRules() []Rule {
	return []Rule{
		{
			Name:  "scan-window",
			Class: Scans,
			Doc: `σT[p](… R v …) → σT[p](… R v@w …) when p is a conjunct of the when
clause that mentions only v (and time constants) and implies that v's
valid time meets the window w: then a tuple of v outside w fails p, so no
binding with it reaches the result, and reading R only where it meets w
changes nothing. The windows p implies, for a constant C with span
[c, d) and X a temporal expression within v's valid time (v, begin of v,
X overlap Y, …): X overlap C and X equal C give [c, d−1]; X precede C,
for X starting no earlier than v, gives [beginning, c−1]; C precede X
gives [d, forever]; a and b give the intersection of their windows, a or
b their hull. An empty constant makes p false: the window is empty.
Clock[n] variables get windows too, bounding the ticks generated.`,
			Sets:  Stored,
			apply: on[*plan.Project](scanWindow),
		},
	}
}

func scanWindow(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok {
		return nil
	}
	for v := 0; v < b.k; v++ {
		s, ok := b.leaves[v].(*plan.Scan)
		if !ok || s.From != nil || s.Rel.Derived {
			continue
		}
		var w *algebra.Window
		for _, p := range b.whens {
			if expr.PVars(p) != 1<<uint(v) {
				continue
			}
			if pw, ok := windowOf(p, v); ok {
				if w != nil {
					pw = plan.Intersect(*w, pw)
				}
				w = &pw
			}
		}
		if w == nil {
			continue
		}
		if s.Window != nil {
			nw := plan.Intersect(*s.Window, *w)
			if nw == *s.Window || s.Window.From > s.Window.To {
				continue // no narrower
			}
			w = &nw
		}
		vv, win := v, *w
		return mapLeaves(pr, func(l plan.Node) plan.Node {
			sc, ok := l.(*plan.Scan)
			if !ok || sc.Var != vv {
				return l
			}
			c := *sc
			c.Window = &win
			return &c
		})
	}
	return nil
}

// emptyWindow holds no time at all.
func emptyWindow() algebra.Window { return algebra.Window{From: 1, To: 0} }

// windowOf derives a window that v's valid time meets whenever p holds;
// ok is false when p implies none.
func windowOf(p expr.Pred, v int) (algebra.Window, bool) {
	switch p := p.(type) {
	case *expr.PAnd:
		x, xok := windowOf(p.X, v)
		y, yok := windowOf(p.Y, v)
		switch {
		case xok && yok:
			return plan.Intersect(x, y), true
		case xok:
			return x, true
		case yok:
			return y, true
		}
	case *expr.POr:
		x, xok := windowOf(p.X, v)
		y, yok := windowOf(p.Y, v)
		if xok && yok {
			return plan.Hull(x, y), true
		}
	case *expr.PCmp:
		return cmpWindow(p, v)
	}
	return algebra.Window{}, false
}

func cmpWindow(p *expr.PCmp, v int) (algebra.Window, bool) {
	switch p.Op {
	case expr.Overlap, expr.Equal:
		for _, pair := range [2][2]expr.TExpr{{p.X, p.Y}, {p.Y, p.X}} {
			x, c := pair[0], pair[1]
			sp, isConst := constSpan(c)
			if !isConst || !inside(x, v) {
				continue
			}
			if sp.empty {
				return emptyWindow(), true
			}
			// X (non-empty, within v) shares a chronon with [b, e) — equal
			// to it, it is [b, e) — so v meets [b, e−1] (empty if b ≥ e:
			// then p never holds).
			return algebra.Window{From: sp.b, To: sp.e - 1}, true
		}
	case expr.Precede:
		if sp, ok := constSpan(p.Y); ok && startsIn(p.X, v) {
			if sp.empty || sp.b == algebra.Beginning {
				return emptyWindow(), true
			}
			// v.from ≤ X.b < X.e ≤ b (X.b = X.e only at forever).
			return algebra.Window{From: algebra.Beginning, To: sp.b - 1}, true
		}
		if sp, ok := constSpan(p.X); ok && inside(p.Y, v) {
			if sp.empty || sp.e == algebra.Forever {
				return emptyWindow(), true
			}
			// e ≤ Y.b < v.to.
			return algebra.Window{From: sp.e, To: algebra.Forever}, true
		}
	}
	return algebra.Window{}, false
}

// tspan is a constant temporal value [b, e); empty is the interpreter's
// emptiness (an overlap sharing no chronon, and what is made of one), not
// b ≥ e: "forever" is the non-empty [forever, forever).
type tspan struct {
	b, e  algebra.Time
	empty bool
}

// constSpan evaluates a temporal expression without variables, exactly as
// the interpreter does; ok is false when e mentions a variable.
func constSpan(e expr.TExpr) (tspan, bool) {
	switch e := e.(type) {
	case *expr.TConst:
		return tspan{b: e.T, e: algebra.Next(e.T)}, true
	case *expr.TAll:
		return tspan{b: algebra.Beginning, e: algebra.Forever}, true
	case *expr.TBeginEnd:
		x, ok := constSpan(e.X)
		switch {
		case !ok:
			return x, false
		case !e.End:
			return tspan{b: x.b, e: algebra.Next(x.b), empty: x.empty}, true
		case e.X.IsEvent():
			return x, true
		}
		return tspan{b: x.e, e: algebra.Next(x.e), empty: x.empty}, true
	case *expr.TAfter:
		x, ok := constSpan(e.X)
		return tspan{b: x.e, e: algebra.Next(x.e), empty: x.empty}, ok
	case *expr.TBinary:
		x, xok := constSpan(e.X)
		y, yok := constSpan(e.Y)
		if !xok || !yok {
			return tspan{}, false
		}
		if e.Extend {
			return tspan{b: min(x.b, y.b), e: max(x.e, y.e), empty: x.empty || y.empty}, true
		}
		b, en := max(x.b, y.b), min(x.e, y.e)
		return tspan{b: b, e: en, empty: x.empty || y.empty || b >= en}, true
	}
	return tspan{}, false
}

// inside reports whether e's value, when not empty, lies within v's valid
// time.
func inside(e expr.TExpr, v int) bool {
	switch e := e.(type) {
	case *expr.TVar:
		return e.Var == v
	case *expr.TBeginEnd:
		if !e.End || e.X.IsEvent() { // begin of X; end of an event is itself
			return inside(e.X, v)
		}
	case *expr.TBinary:
		if e.Extend { // v's valid time is one interval: it holds a span of two parts of it
			return inside(e.X, v) && inside(e.Y, v)
		}
		return inside(e.X, v) || inside(e.Y, v)
	}
	return false
}

// startsIn reports whether e's value, when not empty, begins no earlier
// than v's valid time.
func startsIn(e expr.TExpr, v int) bool {
	if inside(e, v) {
		return true
	}
	switch e := e.(type) {
	case *expr.TBeginEnd:
		return startsIn(e.X, v) // begin of X begins with X; end of X after it
	case *expr.TAfter:
		return startsIn(e.X, v)
	case *expr.TBinary:
		if e.Extend {
			return startsIn(e.X, v) && startsIn(e.Y, v)
		}
		return startsIn(e.X, v) || startsIn(e.Y, v)
	}
	return false
}
