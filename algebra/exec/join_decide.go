package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// candState is where a candidate stands.
type candState uint8

const (
	held  candState = iota // undecided, nothing emitted
	begun                  // Begin emitted, End not yet known
	dead                   // finished
)

// cand is a candidate: a binding that has passed the where clause, whose
// when clause and valid time are not yet all decided.
type cand struct {
	ents       []*entry
	vals       expr.Binding
	entsA      [3]*entry          // storage for ents when k ≤ 3
	valsA      [3][]algebra.Value // storage for vals when k ≤ 3
	state      candState
	out        *stream.Rec
	from       algebra.Time
	ver        uint32
	registered bool
	// A group (JoinSpec.Exists) holds the witnesses that may still satisfy
	// the when clause until one does (sure); then ents holds it
	// (join_semi.go).
	grp  *witnesses
	sure bool
}

// newCand makes a candidate of a binding (copied) and evaluates it.
func (j *Join) newCand(h algebra.Time, bind []*entry) {
	c := j.makeCand(bind)
	j.live++
	j.eval(c, h)
}

// makeCand makes a candidate of a binding (copied).
func (j *Join) makeCand(bind []*entry) *cand {
	// Candidates are allocated in blocks and never reused: stale heap
	// items and deps lists may still point at a dead one.
	c := j.candBlk.one()
	if j.k <= len(c.entsA) {
		c.ents, c.vals = c.entsA[:j.k], c.valsA[:j.k]
	} else {
		c.ents, c.vals = make([]*entry, j.k), make(expr.Binding, j.k)
	}
	copy(c.ents, bind)
	for i, e := range c.ents {
		c.vals[i] = e.rec.Vals
	}
	return c
}

// spans fills j.vs for candidate c at horizon h: unknown ends lie in
// [max(h, b+1), Forever].
func (j *Join) spans(c *cand, h algebra.Time) {
	for i, e := range c.ents {
		j.vs[i] = entSpan(e, h)
	}
}

// outcome of evaluating a candidate.
type verdict uint8

const (
	vDrop verdict = iota
	vUndecided
	vEmitEvent  // at is known
	vBegin      // from is known, to not yet
	vInterval   // from and to are known
	vEnd        // (begun) to is known
	vStillBegun // (begun) to not yet known
)

// decide evaluates c at horizon h without side effects.
func (j *Join) decide(c *cand, h algebra.Time) (verdict, algebra.Time, algebra.Time) {
	j.spans(c, h)
	valid := j.spec.Valid
	if c.state == begun {
		s := evalT(valid.To, j.vs)
		to := stop(valid.To, s)
		if to.exact() {
			return vEnd, c.from, to.lo
		}
		return vStillBegun, c.from, 0
	}
	var p tri
	switch {
	case c.grp != nil && !c.sure:
		p = j.groupWhen(c, h)
	case c.sure:
		p = yes // settled by a witness, and true stays true
	default:
		p = evalP(j.spec.When, j.vs)
	}
	if p == no {
		return vDrop, 0, 0
	}
	if valid.At != nil {
		s := evalT(valid.At, j.vs)
		if s.empty == yes {
			return vDrop, 0, 0
		}
		if p == yes && s.empty == no && s.b.exact() {
			if t := j.timesOK(c); t != yes {
				return drop3(t), 0, 0
			}
			return vEmitEvent, s.b.lo, 0
		}
		return vUndecided, 0, 0
	}
	f := evalT(valid.From, j.vs)
	t := evalT(valid.To, j.vs)
	if f.empty == yes || t.empty == yes {
		return vDrop, 0, 0
	}
	from, to := f.b, stop(valid.To, t)
	if to.hi <= from.lo {
		return vDrop, 0, 0 // from ≥ to whatever the unknowns are
	}
	if p == yes && f.empty == no && t.empty == no && from.exact() && to.lo > from.lo {
		if t := j.timesOK(c); t != yes {
			return drop3(t), 0, 0
		}
		if to.exact() {
			return vInterval, from.lo, to.lo
		}
		return vBegin, from.lo, 0
	}
	return vUndecided, 0, 0
}

// drop3 is the verdict of a time gate that did not pass: drop when it
// failed, wait when it cannot tell yet.
func drop3(t tri) verdict {
	if t == no {
		return vDrop
	}
	return vUndecided
}

// timesOK says whether c's Times are known (yes), and its TimeConds hold;
// no when some Times operand is empty or a TimeCond fails; maybe when a
// time is still unknown. It uses the spans decide just computed.
func (j *Join) timesOK(c *cand) tri {
	if len(j.spec.Times) == 0 {
		return yes
	}
	tv, t := j.times()
	if t != yes || len(j.tconds) == 0 {
		return t
	}
	if !j.st.holds(j.tconds, j.withTimes(c, tv)) {
		return no
	}
	return yes
}

// times evaluates the Times over j.vs.
func (j *Join) times() ([]algebra.Value, tri) {
	return evalTimes(j.spec.Times, j.vs, make([]algebra.Value, len(j.spec.Times)))
}

// evalTimes evaluates times over vs into out: no when some operand is
// empty, maybe when some value is not known yet.
func evalTimes(times []*expr.TimeOf, vs []varSpan, out []algebra.Value) ([]algebra.Value, tri) {
	for i, t := range times {
		s := evalT(t.X, vs)
		switch s.empty {
		case yes:
			return nil, no
		case maybe:
			return nil, maybe
		}
		r := s.b
		if t.End && !t.X.IsEvent() {
			r = rclamp(s.e)
		}
		if !r.exact() {
			return nil, maybe
		}
		out[i] = algebra.TimeVal(r.lo)
	}
	return out, yes
}

// withTimes is c's binding with the times as variable k.
func (j *Join) withTimes(c *cand, tv []algebra.Value) expr.Binding {
	b := make(expr.Binding, j.k+1)
	copy(b, c.vals)
	b[j.k] = tv
	return b
}

// eval decides what it can about c at horizon h and acts on it.
func (j *Join) eval(c *cand, h algebra.Time) {
	if c.grp != nil && !c.sure && !j.pruneWitnesses(c, h) {
		j.finish(c)
		return
	}
	v, from, to := j.decide(c, h)
	switch v {
	case vDrop:
		j.finish(c)
		return
	case vEmitEvent:
		if rec := j.result(c, from); rec != nil {
			j.emit(stream.Elem{Kind: stream.Event, T: from, Rec: rec})
		}
		j.finish(c)
		return
	case vInterval:
		if rec := j.result(c, from); rec != nil {
			j.emit(stream.Elem{Kind: stream.Begin, T: from, Rec: rec})
			if to != algebra.Forever { // open until the end of the stream
				j.emit(stream.Elem{Kind: stream.End, T: to, Rec: rec})
			}
		}
		j.finish(c)
		return
	case vEnd:
		if to != algebra.Forever {
			j.emit(stream.Elem{Kind: stream.End, T: to, Rec: c.out})
		}
		j.finish(c)
		return
	case vBegin:
		rec := j.result(c, from)
		if rec == nil {
			j.finish(c)
			return
		}
		j.emit(stream.Elem{Kind: stream.Begin, T: from, Rec: rec})
		c.state, c.out, c.from = begun, rec, from
		c.vals = nil // the targets are computed
		clear(c.valsA[:])
		v = vStillBegun
	}
	// Still live: make sure an End or the horizon will look at it again.
	if !c.registered {
		c.registered = true
		for i, e := range c.ents {
			if e.open && !(j.isExist(i) && !c.sure) {
				j.addDep(e, c)
			}
		}
		if c.grp != nil {
			for _, e := range c.grp.wits {
				if e.open {
					j.addDep(e, c)
				}
			}
		}
	}
	c.ver++
	if c.state == begun && !j.toHasConst {
		// Only the end is open, and it is a min/max of interval ends:
		// only an End can settle it, and it is at least the horizon.
		return
	}
	if w, ok := j.wakeTime(c, h, v); ok {
		j.wake.push(candItem{key: w, c: c, ver: c.ver})
	}
	// A key of Forever never lowers the output watermark below the horizon.
	if low := j.nextLow(c); low < algebra.Forever {
		j.lb.push(candItem{key: low, c: c, ver: c.ver})
	}
}

// hasConst reports whether a temporal expression mentions a constant.
func hasConst(e expr.TExpr) bool {
	switch e := e.(type) {
	case *expr.TConst, *expr.TAll:
		return true
	case *expr.TBeginEnd:
		return hasConst(e.X)
	case *expr.TAfter:
		return hasConst(e.X)
	case *expr.TBinary:
		return hasConst(e.X) || hasConst(e.Y)
	}
	return false
}

func (j *Join) finish(c *cand) {
	if c.state != dead {
		c.state = dead
		c.ver++
		j.live--
		c.vals = nil
		clear(c.valsA[:])
		if c.grp != nil {
			c.grp.wits = nil
		}
	}
}

// result computes the target values of c's binding (decide has just
// computed the spans, and found the Times known).
func (j *Join) result(c *cand, from algebra.Time) *stream.Rec {
	b := c.vals
	if len(j.spec.Times) > 0 {
		tv, _ := j.times()
		b = j.withTimes(c, tv)
	}
	return j.record(b, from)
}

// record computes the target values over binding b into a result record
// valid from from, both taken from slabs; nil when a target fails (the run
// has failed).
func (j *Join) record(b expr.Binding, from algebra.Time) *stream.Rec {
	vals := j.valBlk.peek(len(j.targets))
	for i, t := range j.targets {
		v, err := t(b)
		if err != nil {
			j.st.fail(err)
			return nil
		}
		vals[i] = v
	}
	return newRec(&j.recBlk, j.valBlk.take(len(vals)), from)
}

// addDep registers c as waiting for open entry e's end; an entry's first
// dependant takes a list from the pool recycleDeps fills. A full list
// first drops its dead candidates: an entry open for long (a mailbox,
// open forever) outlives the partners it meets, and their candidates,
// finished when those partners end, would otherwise pile up in its list
// — and keep their blocks alive — until it ends (queue length over 5M
// tuples held about 250 MB so). A list is compacted only when full, so
// each candidate is looked at a constant number of times on average;
// close skips dead candidates as before.
func (j *Join) addDep(e *entry, c *cand) {
	if e.deps == nil {
		if n := len(j.depPool); n > 0 {
			e.deps, j.depPool = j.depPool[n-1], j.depPool[:n-1]
		}
	}
	if n := len(e.deps); n == cap(e.deps) && n >= 16 {
		live := e.deps[:0]
		for _, d := range e.deps {
			if d.state != dead {
				live = append(live, d)
			}
		}
		clear(e.deps[len(live):])
		e.deps = live
	}
	e.deps = append(e.deps, c)
}

// recycleDeps returns a closed entry's deps list to the pool (at most
// maxFreeLists lists of at most maxFreeList candidates are kept).
func (j *Join) recycleDeps(deps []*cand) {
	if cap(deps) == 0 || cap(deps) > maxFreeList || len(j.depPool) >= maxFreeLists {
		return
	}
	clear(deps)
	j.depPool = append(j.depPool, deps[:0])
}

// wakeTime is the least horizon at which evaluating c would decide more than
// at h, if the passing of time alone can do it; otherwise only an End can.
func (j *Join) wakeTime(c *cand, h algebra.Time, cur verdict) (algebra.Time, bool) {
	if !c.hasOpen() {
		return 0, false
	}
	lo, hi := h, algebra.Forever-1
	if lo >= hi {
		return 0, false
	}
	if v, _, _ := j.decide(c, hi); v == cur {
		return 0, false
	}
	for lo+1 < hi {
		mid := algebra.Mid(lo, hi)
		if v, _, _ := j.decide(c, mid); v == cur {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, true
}

func (c *cand) hasOpen() bool {
	for _, e := range c.ents {
		if e.open {
			return true
		}
	}
	if c.grp != nil {
		for _, e := range c.grp.wits {
			if e.open {
				return true
			}
		}
	}
	return false
}

// nextLow is a lower bound of the time of c's next output with every
// unknown end taken as Forever; the true bound is at least min(this, h) for
// any horizon h (min, max and +1 are monotone).
func (j *Join) nextLow(c *cand) algebra.Time {
	j.spans(c, algebra.Forever)
	valid := j.spec.Valid
	switch {
	case c.state == begun:
		return stop(valid.To, evalT(valid.To, j.vs)).lo
	case valid.At != nil:
		return evalT(valid.At, j.vs).b.lo
	}
	return evalT(valid.From, j.vs).b.lo
}

// wakeUp re-evaluates held candidates whose wake time has come.
func (j *Join) wakeUp(h algebra.Time) {
	for j.wake.len() > 0 {
		top := j.wake.top()
		if top.c.ver != top.ver || top.c.state == dead {
			j.wake.pop()
			continue
		}
		if top.key > h {
			break
		}
		j.wake.pop()
		j.eval(top.c, h)
	}
}
