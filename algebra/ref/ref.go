package ref

import (
	"fmt"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/agg"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Eval evaluates the statements over a history and returns one table per
// statement. Clock ticks exist inside the history's extent.
func Eval(h *algebra.History, stmts []*check.Retrieve) ([]*algebra.Table, error) {
	ev := &evaluator{h: h, derived: map[*check.Retrieve]*algebra.Table{}}
	var out []*algebra.Table
	for _, r := range stmts {
		rows, err := ev.query(r)
		if err != nil {
			return nil, err
		}
		t := &algebra.Table{Rel: r.Result, Rows: Coalesce(rows, r.Valid.IsEvent())}
		t.SortRows()
		ev.derived[r] = t
		out = append(out, t)
	}
	return out, nil
}

type evaluator struct {
	h       *algebra.History
	derived map[*check.Retrieve]*algebra.Table
}

// relation returns the tuples a variable ranges over.
func (ev *evaluator) relation(v *check.Var) ([]algebra.Tuple, error) {
	switch {
	case v.Rel.IsClock():
		start, end, ok := ev.h.Extent()
		if !ok {
			return nil, nil
		}
		var rows []algebra.Tuple
		for _, t := range algebra.ClockTicks(v.Rel.ClockN, ev.h.Catalog.ClockPeriod, start, end) {
			rows = append(rows, algebra.Tuple{From: t, To: algebra.Next(t)})
		}
		return rows, nil
	case v.From != nil:
		t := ev.derived[v.From]
		if t == nil {
			return nil, fmt.Errorf("%s is read before it is derived", v.Rel.Name)
		}
		return t.Rows, nil
	}
	t := ev.h.Table(v.Rel.Name)
	if t == nil {
		return nil, fmt.Errorf("history has no relation %s", v.Rel.Name)
	}
	return t.Rows, nil
}

// query evaluates a retrieve straight from the tuple-calculus semantics,
// as a multiset: one tuple per binding that qualifies — per maximal piece
// of constant values and qualification, when aggregates vary over its
// valid time. Eval coalesces it into a set.
func (ev *evaluator) query(r *check.Retrieve) ([]algebra.Tuple, error) {
	k := len(r.Vars)
	rels := make([][]algebra.Tuple, k)
	for i, v := range r.Vars {
		rows, err := ev.relation(v)
		if err != nil {
			return nil, err
		}
		rels[i] = rows
	}
	tls := make([]*timeline, len(r.Aggs))
	for j, g := range r.Aggs {
		tl, err := ev.timeline(g)
		if err != nil {
			return nil, err
		}
		tls[j] = tl
	}
	// begin of / end of values become pseudo-variable k, aggregate values
	// pseudo-variable k+1.
	var times []*expr.TimeOf
	timeIdx := map[string]int{}
	bind := func(e expr.Expr) expr.Expr {
		return expr.ReplaceLeaves(e, func(x expr.Expr) expr.Expr {
			switch x := x.(type) {
			case *expr.TimeOf:
				key := expr.Key(x)
				i, ok := timeIdx[key]
				if !ok {
					i = len(times)
					timeIdx[key] = i
					times = append(times, x)
				}
				return &expr.Col{Var: k, Attr: i, T: algebra.TypeTime}
			case *expr.AggRef:
				return &expr.Col{Var: k + 1, Attr: x.Index, T: x.T}
			}
			return nil
		})
	}
	targets := make([]expr.Expr, len(r.Targets))
	for i, t := range r.Targets {
		targets[i] = bind(t.Expr)
	}
	var valueConds, timeConds, aggConds []expr.Expr
	for _, c := range expr.Conjuncts(r.Where) {
		switch {
		case expr.HasAgg(c):
			aggConds = append(aggConds, bind(c))
		case expr.HasTimeOf(c):
			timeConds = append(timeConds, bind(c))
		default:
			valueConds = append(valueConds, c)
		}
	}
	groupBy := make([][]expr.Expr, len(r.Aggs))
	for j, g := range r.Aggs {
		for _, b := range g.By {
			groupBy[j] = append(groupBy[j], bind(b))
		}
	}

	binding := make([]algebra.Tuple, k)
	vals := make(expr.Binding, k+2)
	aggVals := make([]algebra.Value, len(r.Aggs))
	var rows []algebra.Tuple
	holds := func(conds []expr.Expr) (bool, error) {
		for _, c := range conds {
			v, err := expr.Eval(c, vals)
			if err != nil || !v.B() {
				return false, err
			}
		}
		return true, nil
	}
	row := func() ([]algebra.Value, error) {
		out := make([]algebra.Value, len(targets))
		for j, t := range targets {
			v, err := expr.Eval(t, vals)
			if err != nil {
				return nil, err
			}
			out[j] = v
		}
		return out, nil
	}
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
		if ok, err := holds(valueConds); !ok || err != nil {
			return err
		}
		if !pred(r.When, binding, r) {
			return nil
		}
		from, to, ok := valid(r.Valid, binding, r)
		if !ok {
			return nil
		}
		tv := make([]algebra.Value, len(times))
		for i, t := range times {
			s := temporal(t.X, binding, r)
			if s.empty {
				return nil // no value: the binding contributes nothing
			}
			tv[i] = algebra.TimeVal(s.b)
			if t.End && !t.X.IsEvent() {
				tv[i] = algebra.TimeVal(algebra.Clamp(s.e))
			}
		}
		vals[k] = tv
		if ok, err := holds(timeConds); !ok || err != nil {
			return err
		}
		if len(r.Aggs) == 0 {
			v, err := row()
			if err != nil {
				return err
			}
			rows = append(rows, algebra.Tuple{Vals: v, From: from, To: to})
			return nil
		}
		// The aggregates' values vary over [from, to): cut it where any of
		// the groups this binding picks changes, evaluate each piece, and
		// merge neighbours with the same values.
		groups := make([]string, len(r.Aggs))
		for j := range r.Aggs {
			var key []byte
			for _, b := range groupBy[j] {
				v, err := expr.Eval(b, vals)
				if err != nil {
					return err
				}
				key = algebra.AppendKey(key, v)
			}
			groups[j] = string(key)
		}
		cuts := []algebra.Time{from}
		if r.Valid.IsEvent() {
			cuts = append(cuts, from) // one chronon: from (Forever too)
		} else {
			for j, tl := range tls {
				cuts = append(cuts, tl.cuts(groups[j], from, to)...)
			}
			sort.Slice(cuts, func(a, b int) bool { return cuts[a] < cuts[b] })
			cuts = append(cuts, to)
		}
		var cur *algebra.Tuple
		for c := 0; c+1 < len(cuts); c++ {
			s, e := cuts[c], cuts[c+1]
			if s == e && !r.Valid.IsEvent() {
				continue
			}
			ok := true
			for j, tl := range tls {
				v, has := tl.at(groups[j], s)
				if !has {
					ok = false
					break
				}
				aggVals[j] = v
			}
			vals[k+1] = aggVals
			if ok {
				var err error
				if ok, err = holds(aggConds); err != nil {
					return err
				}
			}
			if !ok {
				if cur != nil {
					rows = append(rows, *cur)
					cur = nil
				}
				continue
			}
			v, err := row()
			if err != nil {
				return err
			}
			if cur != nil && string(algebra.AppendTupleKey(nil, cur.Vals)) == string(algebra.AppendTupleKey(nil, v)) {
				cur.To = e
				continue
			}
			if cur != nil {
				rows = append(rows, *cur)
			}
			cur = &algebra.Tuple{Vals: v, From: s, To: e}
			if r.Valid.IsEvent() {
				cur.To = to
			}
		}
		if cur != nil {
			rows = append(rows, *cur)
		}
		return nil
	}
	if err := loop(0); err != nil {
		return nil, err
	}
	return rows, nil
}

// timeline is an aggregate's value over time, per group: the maximal
// pieces of constant value where it has one.
type timeline struct {
	g      *check.Agg
	groups map[string][]piece
	// atForever is each group's value at Forever, which only an event at
	// Forever (the end of an interval still open) asks for: the
	// contributions that last until Forever — intervals never ending,
	// for-ever windows — and those at Forever (events there) count.
	atForever map[string]piece
	def       algebra.Value // the value where nothing contributes (count, countU, any)
	total     bool
}

type piece struct {
	from, to algebra.Time
	v        algebra.Value
}

// timeline computes an aggregate: its inner query's tuples, each
// contributing at the chronons its window says, grouped by the by list,
// with the function applied to the contributions at every chronon.
func (ev *evaluator) timeline(g *check.Agg) (*timeline, error) {
	inner, err := ev.query(g.Inner)
	if err != nil {
		return nil, err
	}
	nby := len(g.By)
	argT := g.Inner.Targets[nby].Expr.Type()
	tl := &timeline{g: g, groups: map[string][]piece{}, atForever: map[string]piece{}, total: g.Func.Total()}
	if tl.total {
		tl.def, _, _ = agg.Compute(g.Func, argT, g.Param, nil)
	}
	type contrib struct {
		from, to algebra.Time
		v        algebra.Value
	}
	byGroup := map[string][]contrib{}
	for _, t := range inner {
		key := string(algebra.AppendTupleKey(nil, t.Vals[:nby]))
		to := t.To
		if g.Inner.Valid.IsEvent() {
			to = algebra.Next(t.From)
		}
		byGroup[key] = append(byGroup[key], contrib{t.From, g.Window.Stretch(to), t.Vals[nby]})
	}
	for key, cs := range byGroup {
		var bounds []algebra.Time
		for _, c := range cs {
			bounds = append(bounds, c.from, c.to)
		}
		sort.Slice(bounds, func(a, b int) bool { return bounds[a] < bounds[b] })
		var pieces []piece
		for i := 0; i+1 < len(bounds); i++ {
			s, e := bounds[i], bounds[i+1]
			if s == e {
				continue
			}
			var vs []algebra.Value
			for _, c := range cs {
				if c.from <= s && s < c.to {
					vs = append(vs, c.v)
				}
			}
			if len(vs) == 0 {
				continue
			}
			v, ok, err := agg.Compute(g.Func, argT, g.Param, vs)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if n := len(pieces); n > 0 && pieces[n-1].to == s && sameValue(pieces[n-1].v, v) {
				pieces[n-1].to = e
				continue
			}
			pieces = append(pieces, piece{s, e, v})
		}
		tl.groups[key] = pieces
		var vs []algebra.Value
		for _, c := range cs {
			if c.to >= algebra.Forever { // never ending, or an event at forever
				vs = append(vs, c.v)
			}
		}
		if len(vs) > 0 {
			v, ok, err := agg.Compute(g.Func, argT, g.Param, vs)
			if err != nil {
				return nil, err
			}
			if ok {
				tl.atForever[key] = piece{v: v}
			}
		}
	}
	return tl, nil
}

func sameValue(a, b algebra.Value) bool { return a.K == b.K && a.N == b.N && a.S == b.S }

// at is the value of group key at chronon t; ok is false where it has none.
func (tl *timeline) at(key string, t algebra.Time) (algebra.Value, bool) {
	if t == algebra.Forever {
		if p, ok := tl.atForever[key]; ok {
			return p.v, true
		}
		return tl.def, tl.total
	}
	ps := tl.groups[key]
	i := sort.Search(len(ps), func(i int) bool { return ps[i].to > t })
	if i < len(ps) && ps[i].from <= t {
		return ps[i].v, true
	}
	return tl.def, tl.total
}

// cuts lists the times in (from, to) where group key's value may change.
func (tl *timeline) cuts(key string, from, to algebra.Time) []algebra.Time {
	var out []algebra.Time
	for _, p := range tl.groups[key] {
		if p.from > from && p.from < to {
			out = append(out, p.from)
		}
		if p.to > from && p.to < to {
			out = append(out, p.to)
		}
	}
	return out
}

// span is the value of a temporal expression: [b, e), or empty.
type span struct {
	b, e  algebra.Time
	empty bool
}

var emptySpan = span{empty: true}

// next is the end of the event at t: docs/tquel.md's t+1, for Forever too.
func next(t algebra.Time) algebra.Time { return algebra.Next(t) }

// endEvent is the event at x's end; the end of an event at forever (an end
// past Forever) is forever.
func endEvent(x span) span {
	b := algebra.Clamp(x.e)
	return span{b: b, e: next(b)}
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
		return endEvent(x) // an event at X.e
	case *expr.TAfter: // the event at X's end, for events too
		x := temporal(e.X, b, r)
		if x.empty {
			return emptySpan
		}
		return endEvent(x)
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
		to = algebra.Clamp(t.e) // an interval ends at forever at the latest
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
