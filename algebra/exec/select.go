package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Select evaluates a one-variable retrieve block (σ and π over one scan)
// whose every result is valid at its tuple's own time: the valid clause
// is the default one (from begin of p to end of p, or at begin of p), the
// when clause is true or, for an event variable, over the variable itself,
// and the `begin of`/`end of` values the targets and where clause use are
// known when the tuple arrives. It is what a Join of one input computes,
// without one: no bindings, candidates, bounds or output buffer.
//
// Invariant: a tuple's result goes out when the tuple arrives (a Begin or
// Event at its time) or ends (an End at its time), so results leave in the
// order tuples come — time order, Ends first — and the output watermark is
// the input's. The where conjuncts, the when clause, the time conditions and
// the targets are evaluated in the Join's order, so a runtime error is the
// one the Join would report.
//
// Results are built in blocks (slab): nothing is allocated per tuple in steady state but the entry of an
// accepted interval in the open map.
type Select struct {
	conds   []expr.Fn // where conjuncts: the variable's, then constant ones
	when    expr.Pred // nil: true
	event   bool      // the input carries events
	at      bool      // results are events (valid at begin of the variable)
	times   []*expr.TimeOf
	tconds  []expr.Fn
	targets []expr.Fn
	out     stream.Receiver
	co      *Coalesce // out, when it is the block's Coalesce: fed by call
	st      *runState

	// open maps each accepted interval still open to its result: a record,
	// or fed to co, the group that counts it.
	open recMap[selOpen]
	// cols, when the targets are the variable's attributes lo..hi-1 in
	// order, is [lo, hi): results share the tuple's values.
	cols    [2]int
	byRef   bool
	scratch []algebra.Value // targets computed for co, copied if kept

	bind expr.Binding    // the tuple's values, then the Times (variable 1)
	scr  expr.Binding    // rejects' binding
	vs   []varSpan       // the tuple's span, for when and Times
	tv   []algebra.Value // Times of the current tuple
	recs slab[stream.Rec]
	vals slab[algebra.Value]

	lastAdv  algebra.Time
	finished bool
	spec     JoinSpec // what it was built from: RunHistory's columnar path compiles it again
}

type selOpen struct {
	rec *stream.Rec
	g   *group
}

// selectable reports whether a block can run as a Select (see Select).
func selectable(spec *JoinSpec) bool {
	if len(spec.Events) != 1 || spec.Exists != nil || (len(spec.MaxLate) > 0 && spec.MaxLate[0] != 0) {
		return false
	}
	event := spec.Events[0]
	v := spec.Valid
	switch {
	case v.At != nil:
		if !ownBegin(v.At, false) && !(event && ownBegin(v.At, true)) {
			return false
		}
	case event:
		return false
	default:
		if !ownBegin(v.From, false) || !ownBegin(v.To, true) {
			return false
		}
	}
	if _, ok := spec.When.(*expr.PTrue); !ok && !event {
		return false // an interval's when clause may wait for its end
	}
	for _, t := range spec.Times {
		if event {
			continue // an event's span is known when it comes
		}
		if x, ok := t.X.(*expr.TVar); !ok || x.Var != 0 || t.End {
			return false
		}
	}
	return true
}

// ownBegin reports whether e is `begin of` (or with end, `end of`) the
// block's variable.
func ownBegin(e expr.TExpr, end bool) bool {
	b, ok := e.(*expr.TBeginEnd)
	if !ok || b.End != end {
		return false
	}
	x, ok := b.X.(*expr.TVar)
	return ok && x.Var == 0
}

// NewSelect builds the operator for a block selectable accepts; results go
// to out (a *Coalesce is called directly).
func NewSelect(spec JoinSpec, out stream.Receiver, st *runState) *Select {
	s := &Select{event: spec.Events[0], at: spec.Valid.At != nil, times: spec.Times,
		out: out, st: st, lastAdv: algebra.Beginning, spec: spec}
	s.co, _ = out.(*Coalesce)
	if _, ok := spec.When.(*expr.PTrue); !ok {
		s.when = spec.When
	}
	// The Join's order: conjuncts over the variable, then constant ones.
	var consts []expr.Fn
	for _, c := range spec.Conds {
		if expr.Vars(c) == 0 {
			consts = append(consts, expr.Compile(c))
		} else {
			s.conds = append(s.conds, expr.Compile(c))
		}
	}
	s.conds = append(s.conds, consts...)
	for _, c := range spec.TimeConds {
		s.tconds = append(s.tconds, expr.Compile(c))
	}
	s.byRef = len(spec.Targets) > 0
	for i, t := range spec.Targets {
		s.targets = append(s.targets, expr.Compile(t))
		c, ok := t.(*expr.Col)
		if i == 0 && ok {
			s.cols[0] = c.Attr
		}
		s.byRef = s.byRef && ok && c.Var == 0 && c.Attr == s.cols[0]+i
	}
	s.cols[1] = s.cols[0] + len(spec.Targets)
	s.scratch = make([]algebra.Value, len(spec.Targets))
	s.bind, s.scr = make(expr.Binding, 2), make(expr.Binding, 1)
	s.vs = make([]varSpan, 1)
	s.tv = make([]algebra.Value, len(s.times))
	return s
}

func (s *Select) Push(e stream.Elem) {
	if s.finished || s.st.err != nil {
		return
	}
	switch e.Kind {
	case stream.Whole, stream.Late:
		// selectable admits only inputs that are never late.
		s.st.fail(fmt.Errorf("internal error: a %s tuple reached the selection of an input never late", e.Kind))
		return
	case stream.End:
		o, ok := s.open.take(e.Rec)
		if !ok {
			return // rejected, or never begun
		}
		if t := algebra.Clamp(e.T); t != algebra.Forever {
			if o.g != nil {
				s.co.end(t, o.g)
			} else {
				s.out.Push(stream.Elem{Kind: stream.End, T: t, Rec: o.rec})
			}
		}
		return
	}
	s.bind[0] = e.Rec.Vals
	if !s.st.holds(s.conds, s.bind) {
		return
	}
	if s.when != nil || len(s.times) > 0 {
		if s.event {
			s.vs[0] = varSpan{b: point(e.T), e: point(algebra.Next(e.T))}
		} else {
			s.vs[0] = varSpan{b: point(e.T), e: rng{algebra.Next(e.T), algebra.Forever}}
		}
		if s.when != nil && evalP(s.when, s.vs) != yes {
			return // exact spans: the predicate is yes or no
		}
		if len(s.times) > 0 {
			if _, t := evalTimes(s.times, s.vs, s.tv); t != yes {
				return // some operand is empty (the spans are exact)
			}
			s.bind[1] = s.tv
			if !s.st.holds(s.tconds, s.bind) {
				return
			}
		}
	}
	point := s.at || s.event
	if s.co != nil {
		vals, scratch := s.values(e.Rec.Vals)
		if vals == nil {
			return
		}
		if point {
			s.co.event(e.T, nil, vals, scratch)
		} else {
			s.open.put(e.Rec, selOpen{g: s.co.begin(e.T, vals, scratch)})
		}
		return
	}
	rec := s.result(e.Rec.Vals, e.T)
	if rec == nil {
		return
	}
	if point {
		s.out.Push(stream.Elem{Kind: stream.Event, T: e.T, Rec: rec})
		return
	}
	s.open.put(e.Rec, selOpen{rec: rec})
	s.out.Push(stream.Elem{Kind: stream.Begin, T: e.T, Rec: rec})
}

// values computes the targets of the tuple bound in s.bind (whose values
// are in): shared with the tuple, or in s.scratch (scratch true); nil
// after a runtime error.
func (s *Select) values(in []algebra.Value) (vals []algebra.Value, scratch bool) {
	if s.byRef {
		return in[s.cols[0]:s.cols[1]:s.cols[1]], false
	}
	for i, t := range s.targets {
		v, err := t(s.bind)
		if err != nil {
			s.st.fail(err)
			return nil, false
		}
		s.scratch[i] = v
	}
	return s.scratch, true
}

// result computes the targets of the tuple bound in s.bind (whose values
// are in) into the next record of the block.
func (s *Select) result(in []algebra.Value, from algebra.Time) *stream.Rec {
	vals, scratch := s.values(in)
	if vals == nil {
		return nil
	}
	if scratch {
		vals = s.vals.take(len(vals))
		copy(vals, s.scratch)
	}
	return newRec(&s.recs, vals, from)
}

// Advance passes the watermark on: every result at or before t has gone
// out. At Forever what is still open stays valid until Forever.
func (s *Select) Advance(t algebra.Time) {
	if s.finished || s.st.err != nil {
		return
	}
	final := t == algebra.Forever
	if final {
		s.open.reset()
		s.finished = true
	} else if t <= s.lastAdv {
		return
	}
	s.lastAdv = t
	if s.co != nil {
		s.co.Advance(t)
		return
	}
	s.out.Advance(t)
}

// Held counts the accepted intervals still open.
func (s *Select) Held() int { return s.open.len() }

// rejects reports whether the operator would ignore a tuple with values
// vals, whatever its time: a where conjunct over the variable alone is
// false (a conjunct that fails with an error does not reject: the operator
// reports it).
func (s *Select) rejects(vals []algebra.Value) bool {
	return rejectedBy(s.conds, s.scr, 0, vals)
}

func (s *Select) screens() bool { return len(s.conds) > 0 }

// screener is implemented by receivers that ignore some tuples for their
// values alone: a driver need not send them such a tuple, or its End.
// screens is false when rejects is false for every tuple (no conjunct
// decides by values): a driver then has nothing to screen.
type screener interface {
	rejects(vals []algebra.Value) bool
	screens() bool
}

// rejectedBy reports whether some conjunct of fs is false for vals, bound
// as variable v of b, before any fails with an error.
func rejectedBy(fs []expr.Fn, b expr.Binding, v int, vals []algebra.Value) bool {
	b[v] = vals
	defer func() { b[v] = nil }()
	for _, f := range fs {
		ok, err := f(b)
		if err != nil {
			return false
		}
		if !ok.B() {
			return true
		}
	}
	return false
}

// screen is the test a driver may skip a tee's tuples by: they are
// rejected by every receiver of the tee. nil when some receiver does not
// screen (or there is none), or rejects nothing (a pass that would skip
// no tuple).
func screen(t *stream.Tee) func([]algebra.Value) bool {
	if len(t.Outs) == 0 {
		return nil
	}
	ss := make([]screener, len(t.Outs))
	for i, o := range t.Outs {
		s, ok := o.(screener)
		if !ok || !s.screens() {
			return nil
		}
		ss[i] = s
	}
	return func(vals []algebra.Value) bool {
		for _, s := range ss {
			if !s.rejects(vals) {
				return false
			}
		}
		return true
	}
}
