package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/agg"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
)

// FusedAgg is an ungrouped count, sum, avg or any over one event
// relation, applied at that relation's own events — the plan
//
//	apply[targets; where](π(πT[at begin of s](σ(α s))), γ[f(arg, window)](πbag[arg](πT[at begin of s](σ'(α s)))))
//
// with one α operator for both (Options.ShareAlphas) — in one operator
// reading the α's output: the outer and inner selections (compiled as
// Select compiles them), the accumulator (agg.Acc), the window's removals
// (a removalQueue) and the coalescing of the outer rows and of the
// results at each instant (eventSet). It replaces two Selects, two
// Coalesces and an Apply, whose elements it emits, in the same order:
// the Apply's at each instant are those of its step (inner changes, the
// window's removals, the new value, then each distinct outer row at the
// instant with that value, in the order the rows first came), coalesced.
//
// Invariants. Its input is one event stream in time order, so an instant
// is complete when an element of a later instant or a watermark at or
// past it comes: only then are its results made (as Apply makes them only
// behind its inputs' watermark, both of which are this one stream's).
// Removals at instants with no input are applied, and the value checked
// for an error, at those instants, before any later contribution, so a
// sum's error is the Apply's. Nothing is allocated per event: outer rows
// computed (not shared with the input) and result rows are taken from
// blocks (slab), the sets are reset per instant, and the removals'
// storage is reused.
type FusedAgg struct {
	outer, inner *Select // compiled selections (their conds, targets and binding)
	outerBag     bool    // the outer block is a bag: its rows are not coalesced
	spec         AggSpec
	targets      []expr.Fn
	pred         expr.Fn
	out          stream.Receiver
	st           *runState

	acc      agg.Acc
	val      algebra.Value
	ok       bool
	touched  bool // contributions changed since val was computed
	removals removalQueue

	cur      algebra.Time
	curSet   bool
	rows     eventSet // the distinct outer rows at cur
	results  eventSet // the distinct results at cur
	binding  expr.Binding
	aggVals  []algebra.Value
	valBlk   slab[algebra.Value]
	recBlk   slab[stream.Rec]
	lastAdv  algebra.Time
	advanced bool
}

// fusable lists the aggregate functions FusedAgg takes: their Add and
// Remove keep counters or a running sum (no map per value).
func fusable(f expr.AggFunc) bool {
	switch f {
	case expr.AggCount, expr.AggSum, expr.AggAvg, expr.AggAny:
		return true
	}
	return false
}

// fusedBlock is a one-variable block over an α of an event relation that
// a Select evaluates with nothing but its conjuncts and targets (no when
// clause, no begin of/end of values): its spec and its α.
func fusedBlock(n plan.Node) (JoinSpec, *plan.Alpha, bool) {
	spec, leaves, err := compileBlock(n)
	if err != nil || len(leaves) != 1 {
		return spec, nil, false
	}
	a, ok := leaves[0].(*plan.Alpha)
	if !ok || !a.Rel.IsEvent() {
		return spec, nil, false
	}
	spec.MaxLate = []algebra.Time{0} // an event relation's α: never late
	if _, t := spec.When.(*expr.PTrue); !t || len(spec.Times) > 0 || len(spec.TimeConds) > 0 || !selectable(&spec) {
		return spec, nil, false
	}
	return spec, a, true
}

// fusedApply builds a FusedAgg for x when x has its shape (see FusedAgg)
// and returns its output; ok is false, with nothing built, otherwise.
func (n *Network) fusedApply(x *plan.Apply) (out *stream.Tee, ok bool, err error) {
	if n.opts.NoFused || !n.opts.ShareAlphas || x.Bag || len(x.Aggs) != 1 || len(x.Groups[0]) != 0 {
		return nil, false, nil
	}
	g := x.Aggs[0]
	if !fusable(g.Func) || g.NBy != 0 {
		return nil, false, nil
	}
	op, ok := x.In.(*plan.Project)
	ip, ok2 := g.In.(*plan.Project)
	if !ok || !ok2 || !ip.Bag || len(ip.Targets) != 1 {
		return nil, false, nil
	}
	ospec, oa, ok := fusedBlock(op)
	if !ok {
		return nil, false, nil
	}
	ispec, ia, ok := fusedBlock(ip)
	if !ok || ia.Rel.Name != oa.Rel.Name || plan.String(ia) != plan.String(oa) {
		return nil, false, nil // not one shared α
	}
	at, _ := argType(ip)
	ot, _, err := n.rel(oa)
	if err != nil {
		return nil, false, err
	}
	it, _, err := n.rel(ia)
	if err != nil {
		return nil, false, err
	}
	if ot != it {
		return nil, false, fmt.Errorf("internal error: the aggregate's α and its outer α are not one operator")
	}
	out = &stream.Tee{}
	f := &FusedAgg{
		outer:    NewSelect(ospec, nil, n.st),
		inner:    NewSelect(ispec, nil, n.st),
		outerBag: op.Bag,
		spec:     AggSpec{Func: g.Func, Param: g.Param, Window: g.Window, ArgType: at},
		out:      out,
		st:       n.st,
		acc:      *agg.New(g.Func, at, g.Param),
		lastAdv:  algebra.Beginning,
		binding:  make(expr.Binding, 2),
		aggVals:  make([]algebra.Value, 1),
	}
	f.val, f.ok, _ = f.acc.Value() // an empty aggregate's value
	for _, t := range x.Targets {
		f.targets = append(f.targets, expr.Compile(t.Expr))
	}
	if x.Pred != nil {
		f.pred = expr.Compile(x.Pred)
	}
	f.binding[1] = f.aggVals
	n.hold(f, "aggregate")
	n.Fused++
	ot.Add(f)
	return out, true, nil
}

// Push takes an element of the α's output: an event.
func (f *FusedAgg) Push(e stream.Elem) {
	if f.st.err != nil {
		return
	}
	if e.Kind != stream.Event {
		f.st.fail(fmt.Errorf("internal error: a %s element reached the fused aggregate of an event relation", e.Kind))
		return
	}
	if !f.curSet || e.T != f.cur {
		if f.curSet {
			f.flush()
		}
		f.removeUntil(e.T, false)
		f.cur, f.curSet = e.T, true
	}
	vals := e.Rec.Vals
	// The outer block's row, as its Select and Coalesce make it (the
	// Select reads the α's output first: it was built first).
	o := f.outer
	o.bind[0] = vals
	if f.st.holds(o.conds, o.bind) {
		row, scratch := o.values(vals)
		if row == nil {
			return
		}
		if f.outerBag || !f.rows.has(row, f.st.hash) {
			if scratch {
				kept := f.valBlk.take(len(row))
				copy(kept, row)
				row = kept
			}
			if f.outerBag { // every row, in order, never looked up
				f.rows.evs = append(f.rows.evs, seenEvent{vals: row})
			} else {
				f.rows.add(row, f.st.hash)
			}
		}
	}
	// The aggregate's contribution.
	i := f.inner
	i.bind[0] = vals
	if !f.st.holds(i.conds, i.bind) {
		return
	}
	arg, _ := i.values(vals)
	if arg == nil {
		return
	}
	v := arg[0]
	f.acc.Add(v)
	f.touched = true
	if r := f.spec.Window.Stretch(algebra.Next(e.T)); r < algebra.Forever {
		f.removals.push(removal{t: r, v: v})
	}
}

// removeUntil applies the removals before t (through t when through),
// checking the value at each instant as Apply's step there does.
func (f *FusedAgg) removeUntil(t algebra.Time, through bool) {
	for f.st.err == nil {
		r, ok := f.removals.next()
		if !ok || r > t || r == t && !through {
			return
		}
		for r2, ok := f.removals.next(); ok && r2 == r; r2, ok = f.removals.next() {
			f.acc.Remove(f.removals.pop().v)
		}
		f.touched = true
		f.value()
	}
}

// value brings val up to date with the contributions.
func (f *FusedAgg) value() {
	if !f.touched {
		return
	}
	f.touched = false
	v, ok, err := f.acc.Value()
	if err != nil {
		f.st.fail(err)
		return
	}
	f.val, f.ok = v, ok
}

// flush makes the results at cur, which is complete: Apply's step at cur
// (its removals, the value, each outer row) and the Coalesce after it.
func (f *FusedAgg) flush() {
	f.curSet = false
	f.removeUntil(f.cur, true)
	f.value()
	defer f.rows.reset()
	defer f.results.reset()
	if f.st.err != nil || !f.ok {
		return
	}
	f.aggVals[0] = f.val
	for _, ev := range f.rows.evs {
		f.binding[0] = ev.vals
		if f.pred != nil {
			v, err := f.pred(f.binding)
			if err != nil {
				f.st.fail(err)
				return
			}
			if !v.B() {
				continue
			}
		}
		row := f.valBlk.peek(len(f.targets))
		for k, t := range f.targets {
			v, err := t(f.binding)
			if err != nil {
				f.st.fail(err)
				return
			}
			row[k] = v
		}
		if f.results.has(row, f.st.hash) {
			continue
		}
		row = f.valBlk.take(len(row))
		f.results.add(row, f.st.hash)
		f.out.Push(stream.Elem{Kind: stream.Event, T: f.cur, Rec: newRec(&f.recBlk, row, f.cur)})
	}
}

// Advance completes the instants at or before t.
func (f *FusedAgg) Advance(t algebra.Time) {
	if f.st.err != nil {
		return
	}
	if f.curSet && t >= f.cur {
		f.flush()
	}
	f.removeUntil(t, true)
	if f.st.err != nil {
		return
	}
	if !f.advanced || t > f.lastAdv {
		f.advanced, f.lastAdv = true, t
		f.out.Advance(t)
	}
}

// Held counts the outer rows waiting for their instant to complete and
// the contributions still to be removed.
func (f *FusedAgg) Held() int { return f.rows.len() + f.removals.len() }

// rejects reports whether a tuple of values vals reaches neither the
// outer rows nor the aggregate (see screener).
func (f *FusedAgg) rejects(vals []algebra.Value) bool {
	return f.outer.rejects(vals) && f.inner.rejects(vals)
}
