package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
)

// FusedAgg is count, sum, avg or any aggregates (ungrouped or by groups,
// under any window) over one event relation, applied at that relation's
// own events — the plan
//
//	apply[targets; where](π(πT[at begin of s](σ(α s))), γ[f(by…, arg, window)](πbag[by…, arg](πT[at begin of s](σ'(α s)))), …)
//
// with one α operator for all of them (Options.ShareAlphas: the blocks
// keep the same attributes and enable the same things), or the same over
// one recorded relation's scans (fusedBlock) — in one operator reading
// the α's output (or the source's): the outer and inner selections (compiled as
// Select compiles them), the groups and their accumulators (aggState,
// agg.Acc, as Apply keeps them), the windows' removals (removalQueue) and
// the coalescing of the outer rows and of the results at each instant
// (eventSet). It replaces the Selects, the Coalesces and the Apply, whose
// elements it emits, in the same order: the Apply's at an instant are
// those of its step (the inner changes, the windows' removals, the
// touched groups' new values, then each distinct outer row at the
// instant with its groups' values, in the order the rows first came),
// coalesced.
//
// Invariants. Its input is one event stream in time order, so an instant
// is complete when an element of a later instant or a watermark at or
// past it comes: only then are its results made (as Apply makes them only
// behind its inputs' watermarks, which are all this stream's). Removals
// at instants with no input are applied, and the values they change
// computed (a sum's error is reported there), before any later
// contribution, as Apply's steps at those instants do. A group holding
// nothing, with no removal pending, is dropped once its value is read, as
// Apply drops it, so the groups held are those with contributions in
// their window. Nothing is allocated per event in steady state: outer
// rows computed (not shared with the input) and result rows are taken
// from blocks (slab), the sets are reset per instant and the removals'
// storage is reused (a new group allocates, as Apply's does).
//
// When two groups' values fail at one instant, the error reported may be
// the other one of the two than Apply's (it computes them in the order
// they were touched, which is per aggregate there, per event here).
type FusedAgg struct {
	outer    *Select // the outer block, compiled (its conds, targets and binding)
	outerBag bool    // the outer block is a bag: its rows are not coalesced
	aggs     []fusedInner
	targets  []expr.Fn
	pred     expr.Fn
	out      stream.Receiver
	st       *runState

	touched []*aggGroup // groups whose contributions changed since their value was computed

	cur     algebra.Time
	curSet  bool
	rows    eventSet // the distinct outer rows at cur
	results eventSet // the distinct results at cur
	binding expr.Binding
	aggVals []algebra.Value
	groups  []*aggGroup         // the groups an outer row picks
	keyVals []algebra.Value     // an outer row's group key
	valBlk  slab[algebra.Value] // outer rows computed
	// res are the results' records and values (reused where the output
	// forgets them: Network.Live).
	res      outBlocks
	lastAdv  algebra.Time
	advanced bool
}

// fusedInner is one aggregate of a FusedAgg: its inner block, compiled,
// and its groups.
type fusedInner struct {
	inner *Select
	s     *aggState
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

// fusedBlock is a one-variable block over an α of an event relation (or,
// in a plan without αs, a scan of a recorded one) that a Select
// evaluates with nothing but its conjuncts and targets (no when clause,
// no begin of/end of values): its spec and its leaf.
//
// A recorded relation's scan is its source's tee (Network.sourceTee, one
// per relation): every driver (RunHistory, RunSource, RunChunks' row
// part) plays an event relation's tuples into it as Events in time
// order, as a shared α's output is, so the blocks over scans of one
// relation read one stream, as the general operators' Selects do. A
// derived relation's scan (From) is another statement's output and a
// clock's has no relation: neither is taken.
func fusedBlock(n plan.Node) (JoinSpec, plan.Node, bool) {
	spec, leaves, err := compileBlock(n)
	if err != nil || len(leaves) != 1 {
		return spec, nil, false
	}
	switch l := leaves[0].(type) {
	case *plan.Alpha:
		if !l.Rel.IsEvent() {
			return spec, nil, false
		}
	case *plan.Scan:
		if l.From != nil || l.Rel.IsClock() || !l.Rel.IsEvent() {
			return spec, nil, false
		}
	default:
		return spec, nil, false
	}
	spec.MaxLate = []algebra.Time{0} // an event relation's α or scan: never late
	if _, t := spec.When.(*expr.PTrue); !t || len(spec.Times) > 0 || len(spec.TimeConds) > 0 || !selectable(&spec) {
		return spec, nil, false
	}
	return spec, leaves[0], true
}

// fusedApply builds a FusedAgg for x when x has its shape (see FusedAgg)
// and returns its output; ok is false, with nothing built, otherwise.
func (n *Network) fusedApply(x *plan.Apply) (out *stream.Tee, ok bool, err error) {
	if n.opts.NoFused || x.Bag || len(x.Aggs) == 0 {
		return nil, false, nil
	}
	op, ok := x.In.(*plan.Project)
	if !ok {
		return nil, false, nil
	}
	ospec, oa, ok := fusedBlock(op)
	if !ok {
		return nil, false, nil
	}
	if _, alpha := oa.(*plan.Alpha); alpha && !n.opts.ShareAlphas {
		return nil, false, nil // an α per block: not one stream
	}
	key := plan.String(oa)
	ispecs := make([]JoinSpec, len(x.Aggs))
	ias := make([]plan.Node, len(x.Aggs))
	for j, g := range x.Aggs {
		ip, ok := g.In.(*plan.Project)
		if !fusable(g.Func) || !ok || !ip.Bag || len(ip.Targets) != g.NBy+1 || len(x.Groups[j]) != g.NBy {
			return nil, false, nil
		}
		ispecs[j], ias[j], ok = fusedBlock(ip)
		if !ok || plan.String(ias[j]) != key {
			return nil, false, nil // not one shared α (or one relation's scan)
		}
	}
	ot, _, err := n.rel(oa)
	if err != nil {
		return nil, false, err
	}
	out = &stream.Tee{}
	f := &FusedAgg{
		outer:    NewSelect(ospec, nil, n.st),
		outerBag: op.Bag,
		out:      out,
		st:       n.st,
		lastAdv:  algebra.Beginning,
		binding:  make(expr.Binding, 2),
		aggVals:  make([]algebra.Value, len(x.Aggs)),
	}
	for j, g := range x.Aggs {
		it, _, err := n.rel(ias[j]) // the shared α (its Plans list this one too), or the source
		if err != nil {
			return nil, false, err
		}
		if it != ot {
			return nil, false, fmt.Errorf("internal error: aggregate %s's α and its outer α are not one operator", g.Text)
		}
		at, _ := argType(g.In)
		spec := AggSpec{Func: g.Func, Param: g.Param, Window: g.Window, NBy: g.NBy, ArgType: at, Group: x.Groups[j]}
		f.aggs = append(f.aggs, fusedInner{inner: NewSelect(ispecs[j], nil, n.st), s: &aggState{spec: spec}})
	}
	for _, t := range x.Targets {
		f.targets = append(f.targets, expr.Compile(t.Expr))
	}
	if x.Pred != nil {
		f.pred = expr.Compile(x.Pred)
	}
	f.binding[1] = f.aggVals
	n.hold(f, "aggregate")
	n.Fused++
	n.fused = append(n.fused, f)
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
	// The aggregates' contributions.
	for _, a := range f.aggs {
		i := a.inner
		i.bind[0] = vals
		if !f.st.holds(i.conds, i.bind) {
			continue
		}
		arg, _ := i.values(vals)
		if arg == nil {
			return
		}
		nby := a.s.spec.NBy
		g := a.s.group(arg[:nby], f.st.hash, false)
		v := arg[nby]
		g.acc.Add(v)
		f.touch(g)
		if r := a.s.spec.Window.Stretch(algebra.Next(e.T)); r < algebra.Forever {
			g.pending++
			a.s.removals.push(removal{t: r, g: g, v: v})
		}
	}
}

func (f *FusedAgg) touch(g *aggGroup) {
	if !g.touched {
		g.touched = true
		f.touched = append(f.touched, g)
	}
}

// removeUntil applies the removals before t (through t when through),
// each instant's at once, computing the values they change as Apply's
// step at that instant does.
func (f *FusedAgg) removeUntil(t algebra.Time, through bool) {
	for f.st.err == nil {
		r, ok := algebra.Forever, false
		for _, a := range f.aggs {
			if q, has := a.s.removals.next(); has && (!ok || q < r) {
				r, ok = q, true
			}
		}
		if !ok || r > t || r == t && !through {
			return
		}
		for _, a := range f.aggs {
			for q, has := a.s.removals.next(); has && q == r; q, has = a.s.removals.next() {
				rm := a.s.removals.pop()
				rm.g.pending--
				rm.g.acc.Remove(rm.v)
				f.touch(rm.g)
			}
		}
		f.values()
	}
}

// values computes the touched groups' values, then drops those that hold
// nothing.
func (f *FusedAgg) values() {
	for _, g := range f.touched {
		g.touched = false
		v, ok, err := g.acc.Value()
		if err != nil {
			f.st.fail(err)
			return
		}
		g.val, g.ok = v, ok
	}
	for _, g := range f.touched {
		g.dropIfIdle()
	}
	clearSmall(f.touched)
	f.touched = f.touched[:0]
}

// flush makes the results at cur, which is complete: Apply's step at cur
// (its removals, the values, each outer row) and the Coalesce after it.
func (f *FusedAgg) flush() {
	f.curSet = false
	f.removeUntil(f.cur, true)
	f.values()
	for _, ev := range f.rows.evs {
		if f.st.err != nil {
			break
		}
		f.result(ev.vals)
	}
	f.results.reset()
	f.rows.reset()
}

// result emits the result of an outer row at cur, if it qualifies and is
// not one already emitted at cur.
func (f *FusedAgg) result(vals []algebra.Value) {
	// The groups the row picks (made, empty, if need be: dropped again
	// below, as Apply drops an event's).
	gs := f.groups[:0]
	for _, a := range f.aggs {
		f.keyVals = f.keyVals[:0]
		for _, c := range a.s.spec.Group {
			f.keyVals = append(f.keyVals, vals[c])
		}
		gs = append(gs, a.s.group(f.keyVals, f.st.hash, false))
	}
	f.groups = gs
	f.emit(vals, gs)
	for _, g := range gs {
		g.dropIfIdle()
	}
	clearSmall(gs)
}

// emit emits the result of outer row vals whose groups are gs.
func (f *FusedAgg) emit(vals []algebra.Value, gs []*aggGroup) {
	for j, g := range gs {
		if !g.ok {
			return
		}
		f.aggVals[j] = g.val
	}
	f.binding[0] = vals
	if f.pred != nil {
		v, err := f.pred(f.binding)
		if err != nil {
			f.st.fail(err)
			return
		}
		if !v.B() {
			return
		}
	}
	row := f.res.peekVals(len(f.targets))
	for k, t := range f.targets {
		v, err := t(f.binding)
		if err != nil {
			f.st.fail(err)
			return
		}
		row[k] = v
	}
	if f.results.has(row, f.st.hash) {
		return
	}
	row = f.res.takeVals(len(row))
	f.results.add(row, f.st.hash)
	f.out.Push(stream.Elem{Kind: stream.Event, T: f.cur, Rec: f.res.rec(row, f.cur)})
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
		// Every result made is out, before t (flushed above), and its
		// output has advanced past it: forgotten, if reused. (The
		// results' set was reset at the flush.)
		f.res.reset()
	}
}

// Held counts the outer rows waiting for their instant to complete, the
// groups and the contributions still to be removed.
func (f *FusedAgg) Held() int {
	n := f.rows.len()
	for _, a := range f.aggs {
		n += a.s.nGroups + a.s.removals.len()
	}
	return n
}

// screens reports whether some tuple may be rejected: the outer block
// and every aggregate's have a conjunct.
func (f *FusedAgg) screens() bool {
	if !f.outer.screens() {
		return false
	}
	for _, a := range f.aggs {
		if !a.inner.screens() {
			return false
		}
	}
	return true
}

// rejects reports whether a tuple of values vals reaches neither the
// outer rows nor any aggregate (see screener).
func (f *FusedAgg) rejects(vals []algebra.Value) bool {
	if !f.outer.rejects(vals) {
		return false
	}
	for _, a := range f.aggs {
		if !a.inner.rejects(vals) {
			return false
		}
	}
	return true
}
