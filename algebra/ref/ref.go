package ref

import (
	"fmt"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Eval evaluates the statements over a history and returns one table per
// statement. Clock ticks exist inside the history's extent.
func Eval(h *algebra.History, stmts []*check.Retrieve) ([]*algebra.Table, error) {
	derived := map[*check.Retrieve]*algebra.Table{}
	var out []*algebra.Table
	for _, r := range stmts {
		rels := make([][]algebra.Tuple, len(r.Vars))
		for i, v := range r.Vars {
			switch {
			case v.Rel.IsClock():
				start, end, ok := h.Extent()
				if !ok {
					continue
				}
				for _, t := range algebra.ClockTicks(v.Rel.ClockN, h.Catalog.ClockPeriod, start, end) {
					rels[i] = append(rels[i], algebra.Tuple{From: t, To: algebra.Next(t)})
				}
			case v.From != nil:
				t := derived[v.From]
				if t == nil {
					return nil, fmt.Errorf("%s is read before it is derived", v.Rel.Name)
				}
				rels[i] = t.Rows
			default:
				t := h.Table(v.Rel.Name)
				if t == nil {
					return nil, fmt.Errorf("history has no relation %s", v.Rel.Name)
				}
				rels[i] = t.Rows
			}
		}
		t, err := evalRetrieve(r, rels)
		if err != nil {
			return nil, err
		}
		derived[r] = t
		out = append(out, t)
	}
	return out, nil
}

func evalRetrieve(r *check.Retrieve, rels [][]algebra.Tuple) (*algebra.Table, error) {
	k := len(r.Vars)
	binding := make([]algebra.Tuple, k)
	vals := make(expr.Binding, k)
	var rows []algebra.Tuple
	var loop func(i int) error
	loop = func(i int) error {
		if i < k {
			for _, t := range rels[i] {
				binding[i] = t
				vals[i] = t.Vals
				if err := loop(i + 1); err != nil {
					return err
				}
			}
			return nil
		}
		if r.Where != nil {
			ok, err := expr.Eval(r.Where, vals)
			if err != nil {
				return err
			}
			if !ok.B() {
				return nil
			}
		}
		if !pred(r.When, binding, r) {
			return nil
		}
		from, to, ok := valid(r.Valid, binding, r)
		if !ok {
			return nil
		}
		row := algebra.Tuple{Vals: make([]algebra.Value, len(r.Targets)), From: from, To: to}
		for j, t := range r.Targets {
			v, err := expr.Eval(t.Expr, vals)
			if err != nil {
				return err
			}
			row.Vals[j] = v
		}
		rows = append(rows, row)
		return nil
	}
	if err := loop(0); err != nil {
		return nil, err
	}
	t := &algebra.Table{Rel: r.Result, Rows: Coalesce(rows, r.Valid.IsEvent())}
	t.SortRows()
	return t, nil
}

// span is the value of a temporal expression: [b, e), or empty.
type span struct {
	b, e  algebra.Time
	empty bool
}

var emptySpan = span{empty: true}

func next(t algebra.Time) algebra.Time {
	if t == algebra.Forever {
		return t
	}
	return t + 1
}

func temporal(e expr.TExpr, b []algebra.Tuple, r *check.Retrieve) span {
	switch e := e.(type) {
	case *expr.TVar:
		t := b[e.Var]
		if r.Vars[e.Var].Rel.IsEvent() {
			return span{b: t.From, e: next(t.From)}
		}
		return span{b: t.From, e: t.To}
	case *expr.TConst:
		return span{b: e.T, e: next(e.T)}
	case *expr.TAll:
		return span{b: algebra.Beginning, e: algebra.Forever}
	case *expr.TBeginEnd:
		x := temporal(e.X, b, r)
		if x.empty {
			return emptySpan
		}
		if !e.End { // begin of X: an event at X.b
			return span{b: x.b, e: next(x.b)}
		}
		if e.X.IsEvent() { // end of an event is the event itself
			return x
		}
		return span{b: x.e, e: next(x.e)} // an event at X.e
	case *expr.TAfter: // the event at X's end, for events too
		x := temporal(e.X, b, r)
		if x.empty {
			return emptySpan
		}
		return span{b: x.e, e: next(x.e)}
	case *expr.TBinary:
		x, y := temporal(e.X, b, r), temporal(e.Y, b, r)
		if x.empty || y.empty {
			return emptySpan
		}
		if e.Extend {
			return span{b: min(x.b, y.b), e: max(x.e, y.e)}
		}
		s := span{b: max(x.b, y.b), e: min(x.e, y.e)}
		if s.b >= s.e {
			return emptySpan
		}
		return s
	}
	panic("ref: unknown temporal expression")
}

func pred(p expr.Pred, b []algebra.Tuple, r *check.Retrieve) bool {
	switch p := p.(type) {
	case *expr.PTrue:
		return true
	case *expr.PAnd:
		return pred(p.X, b, r) && pred(p.Y, b, r)
	case *expr.POr:
		return pred(p.X, b, r) || pred(p.Y, b, r)
	case *expr.PNot:
		return !pred(p.X, b, r)
	case *expr.PCmp:
		x, y := temporal(p.X, b, r), temporal(p.Y, b, r)
		if x.empty || y.empty {
			return false
		}
		switch p.Op {
		case expr.Precede:
			return x.e <= y.b
		case expr.Overlap:
			return x.b < y.e && y.b < x.e
		case expr.Equal:
			return x.b == y.b && x.e == y.e
		}
	}
	panic("ref: unknown predicate")
}

// valid computes a result tuple's valid time; ok is false when it is empty.
func valid(v *expr.Valid, b []algebra.Tuple, r *check.Retrieve) (from, to algebra.Time, ok bool) {
	if v.At != nil {
		s := temporal(v.At, b, r)
		if s.empty {
			return 0, 0, false
		}
		return s.b, next(s.b), true
	}
	f, t := temporal(v.From, b, r), temporal(v.To, b, r)
	if f.empty || t.empty {
		return 0, 0, false
	}
	from = f.b
	if v.To.IsEvent() {
		to = t.b
	} else {
		to = t.e
	}
	if from >= to {
		return 0, 0, false
	}
	return from, to, true
}

// Coalesce makes a multiset of result tuples a set: equal events at one
// chronon become one; value-equivalent intervals that overlap or meet merge.
func Coalesce(rows []algebra.Tuple, events bool) []algebra.Tuple {
	groups := map[string][]algebra.Tuple{}
	var order []string
	for _, row := range rows {
		k := string(algebra.AppendTupleKey(nil, row.Vals))
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], row)
	}
	var out []algebra.Tuple
	for _, k := range order {
		g := groups[k]
		sort.Slice(g, func(i, j int) bool { return g[i].From < g[j].From })
		cur := g[0]
		for _, row := range g[1:] {
			if events {
				if row.From == cur.From {
					continue
				}
				out = append(out, cur)
				cur = row
				continue
			}
			if row.From <= cur.To {
				cur.To = max(cur.To, row.To)
				continue
			}
			out = append(out, cur)
			cur = row
		}
		out = append(out, cur)
	}
	return out
}
