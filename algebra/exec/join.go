package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// JoinSpec is one select-project-join block of a retrieve, ready to run:
// the σ, σT, πT and π over the product (or joins) of k inputs.
type JoinSpec struct {
	// Events[i] says whether input i carries events.
	Events []bool
	// MaxLate[i] bounds how late input i may report a tuple (Whole and
	// Late elements): a tuple arriving at t began at or after t − MaxLate[i].
	// 0 for inputs that are never late; Forever for no bound.
	MaxLate []algebra.Time
	// Conds are the where conjuncts, over the inputs' variables.
	Conds []expr.Expr
	// When is the temporal predicate (PTrue when none).
	When expr.Pred
	// Valid computes each result's valid time.
	Valid *expr.Valid
	// Targets compute each result's values.
	Targets []expr.Expr
	// OverlapPurge selects the ordered overlap variant (plan ×ₒ): every
	// binding must overlap and inputs come in time order, so a stored tuple
	// is dropped once it has ended, without evaluating When.
	OverlapPurge bool
	// Times are the `begin of X` / `end of X` values the targets and
	// TimeConds use, bound as the attributes of a pseudo-variable after
	// the inputs' (variable k, attribute i is Times[i]). A binding is acted
	// on only once they are known; one for which some X is empty is
	// dropped.
	Times []*expr.TimeOf
	// TimeConds are where conjuncts that mention Times; they are checked
	// with them.
	TimeConds []expr.Expr
}

// Join evaluates a JoinSpec incrementally. Each input is a Receiver
// (Input(i)); results go to out in time order.
//
// A binding (one tuple per input) is formed once, when its last tuple
// arrives, against the tuples the other inputs still store. Equalities
// between inputs in the where clause are probed through hash indexes;
// the other conjuncts are checked as soon as their variables are bound.
// Each surviving binding becomes a candidate whose when clause and valid
// time are evaluated on bounds of the ends still unknown (bounds.go): it is
// dropped, emitted, or held until an End or the horizon decides it.
//
// Stored tuples that no future binding can use (the when clause is false for
// every binding with a tuple still to come) are purged, so state stays
// proportional to what can still match. Results can be late (a valid time
// may begin before the binding is complete); they are buffered and released
// behind an output watermark: the least time any result could still have.
type Join struct {
	spec    JoinSpec
	k       int
	in      []*joinInput
	out     stream.Receiver
	st      *runState
	filters [][]expr.Fn // per input: conjuncts over that input alone
	plans   [][]step    // per arriving input: how to bind the others
	targets []expr.Fn
	tconds  []expr.Fn
	// unit holds, with no variables (k == 0), the where conjuncts (all
	// constant): the one empty binding exists only if they hold.
	unit []expr.Fn

	started  bool
	done     algebra.Time // inputs processed up to here (inclusive)
	lastAdv  algebra.Time // last Advance sent downstream
	finished bool

	wake   candHeap // held candidates by the horizon that may decide them
	lb     candHeap // live candidates by a lower bound of their next output
	outBuf elemHeap
	live   int
	seq    uint64

	// toHasConst: the valid clause's end mentions a constant, so the
	// horizon alone may settle an output's end.
	toHasConst bool

	// scratch
	slab   []entry
	keybuf []byte
	vs     []varSpan
	bind   []*entry
	vals   expr.Binding
}

type joinInput struct {
	j      *Join
	i      int
	event  bool
	stored bool // other inputs' future tuples may bind with these
	// maxLate bounds the lateness of this input's tuples (0: never late).
	maxLate algebra.Time
	// minB is, for a late input, a lower bound of the begins of its stored
	// entries (they are not stored in order of begin); recomputed at
	// compaction.
	minB algebra.Time

	buf  []stream.Elem
	head int
	wm   algebra.Time
	seen bool

	entries   []*entry // stored, in arrival (= begin) order
	entHead   int
	closedQ   []*entry // stored and closed, in order of end
	closedH   int
	nOpen     int
	nLive     int
	nDead     int
	threshold int
	sweepMin  int
	open      map[*stream.Rec]*entry
	idx       []*index
}

type index struct {
	cols []int
	m    map[string][]*entry
}

type entry struct {
	key  string // its key in the input's first index
	rec  *stream.Rec
	b, e algebra.Time
	open bool
	dead bool
	deps []*cand
}

// step binds one more variable while enumerating bindings.
type step struct {
	v      int
	index  int       // index of input v to probe, or -1 to scan its store
	keys   []expr.Fn // probe key, from variables already bound
	checks []expr.Fn // conjuncts whose variables are all bound after this step
}

type candState uint8

const (
	held  candState = iota // undecided, nothing emitted
	begun                  // Begin emitted, End not yet known
	dead                   // finished
)

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
}

// NewJoin builds the operator. Outputs go to out. sweepMin is the store
// size at which an input is first swept for purgeable tuples (0: 64); the
// threshold then doubles with the live store.
func NewJoin(spec JoinSpec, out stream.Receiver, st *runState, sweepMin int) *Join {
	if sweepMin <= 0 {
		sweepMin = 64
	}
	k := len(spec.Events)
	j := &Join{spec: spec, k: k, out: out, st: st, done: algebra.Beginning, lastAdv: algebra.Beginning}
	j.vs = make([]varSpan, k)
	j.bind = make([]*entry, k)
	j.vals = make(expr.Binding, k)
	for i := 0; i < k; i++ {
		in := &joinInput{j: j, i: i, event: spec.Events[i], stored: k > 1,
			open: map[*stream.Rec]*entry{}, threshold: sweepMin, sweepMin: sweepMin}
		if i < len(spec.MaxLate) {
			in.maxLate = spec.MaxLate[i]
		}
		in.minB = algebra.Forever
		j.in = append(j.in, in)
	}
	if k == 0 {
		// No variables: one empty binding. A pseudo input, fed only with
		// Advance, tells the operator how time passes.
		j.in = append(j.in, &joinInput{j: j, open: map[*stream.Rec]*entry{}})
	}
	for _, t := range spec.Targets {
		j.targets = append(j.targets, expr.Compile(t))
	}
	for _, c := range spec.TimeConds {
		j.tconds = append(j.tconds, expr.Compile(c))
	}
	j.toHasConst = spec.Valid.To == nil || hasConst(spec.Valid.To)
	j.compilePlans()
	return j
}

// Input returns the receiver of input i.
func (j *Join) Input(i int) stream.Receiver { return j.in[i] }

// compilePlans decides, for a tuple arriving at each input, the order in
// which the other inputs are bound, which index each probes and where every
// where conjunct is checked.
func (j *Join) compilePlans() {
	j.filters = make([][]expr.Fn, j.k)
	type eq struct {
		a, b *expr.Col
	}
	var eqs []eq
	var others []expr.Expr
	for _, c := range j.spec.Conds {
		vars := expr.Vars(c)
		if b, ok := c.(*expr.Binary); ok && b.Op == expr.OpEq {
			ca, oka := b.X.(*expr.Col)
			cb, okb := b.Y.(*expr.Col)
			if oka && okb && ca.Var != cb.Var && algebra.Identical(ca.T, cb.T) && ca.T.Kind != algebra.KindFloat {
				eqs = append(eqs, eq{ca, cb})
				continue
			}
		}
		if vars != 0 && vars&(vars-1) == 0 { // exactly one variable
			v := trailingZeros(vars)
			j.filters[v] = append(j.filters[v], expr.Compile(c))
			continue
		}
		others = append(others, c)
	}
	if j.k == 0 {
		for _, c := range others {
			j.unit = append(j.unit, expr.Compile(c))
		}
	}
	j.plans = make([][]step, j.k)
	for start := 0; start < j.k; start++ {
		bound := uint64(1) << uint(start)
		var plan []step
		// Constant conjuncts are checked at the first step.
		var first []expr.Fn
		for _, c := range others {
			if expr.Vars(c) == 0 {
				first = append(first, expr.Compile(c))
			}
		}
		plan = append(plan, step{v: start, index: -1, checks: first})
		used := make([]bool, len(others))
		for n := 1; n < j.k; n++ {
			// Prefer an input connected to the bound ones by equalities.
			next, best := -1, -1
			for v := 0; v < j.k; v++ {
				if bound&(1<<uint(v)) != 0 {
					continue
				}
				cnt := 0
				for _, e := range eqs {
					if (e.a.Var == v && bound&(1<<uint(e.b.Var)) != 0) || (e.b.Var == v && bound&(1<<uint(e.a.Var)) != 0) {
						cnt++
					}
				}
				if cnt > best {
					next, best = v, cnt
				}
			}
			st := step{v: next, index: -1}
			var cols []int
			for _, e := range eqs {
				switch {
				case e.a.Var == next && bound&(1<<uint(e.b.Var)) != 0:
					cols = append(cols, e.a.Attr)
					st.keys = append(st.keys, expr.Compile(e.b))
				case e.b.Var == next && bound&(1<<uint(e.a.Var)) != 0:
					cols = append(cols, e.b.Attr)
					st.keys = append(st.keys, expr.Compile(e.a))
				}
			}
			if len(cols) > 0 {
				st.index = j.in[next].indexFor(cols)
			}
			bound |= 1 << uint(next)
			for ci, c := range others {
				vars := expr.Vars(c)
				if !used[ci] && vars != 0 && vars&^bound == 0 {
					st.checks = append(st.checks, expr.Compile(c))
					used[ci] = true
				}
			}
			plan = append(plan, st)
		}
		j.plans[start] = plan
	}
}

func trailingZeros(x uint64) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

func (in *joinInput) indexFor(cols []int) int {
	for i, ix := range in.idx {
		if equalInts(ix.cols, cols) {
			return i
		}
	}
	in.idx = append(in.idx, &index{cols: cols, m: map[string][]*entry{}})
	return len(in.idx) - 1
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ---- input side ----

func (in *joinInput) Push(e stream.Elem) {
	in.buf = append(in.buf, e)
}

func (in *joinInput) Advance(t algebra.Time) {
	if in.seen && t <= in.wm {
		return
	}
	in.wm, in.seen = t, true
	in.j.advance()
}

func (j *Join) advance() {
	if j.finished || j.st.err != nil {
		return
	}
	w := algebra.Forever
	for _, in := range j.in {
		if !in.seen {
			return
		}
		w = min(w, in.wm)
	}
	if j.k == 0 {
		// The single empty binding.
		if !j.started {
			j.started = true
			if j.checks(j.unit) {
				j.newCand(algebra.Beginning, nil)
			}
		}
	}
	if j.started && w <= j.done {
		return
	}
	j.started = true
	// Process buffered elements up to w in time order, Ends first.
	for {
		var best *joinInput
		for _, in := range j.in {
			if in.head < len(in.buf) && in.buf[in.head].T <= w {
				if best == nil || stream.Less(in.buf[in.head], best.buf[best.head]) {
					best = in
				}
			}
		}
		if best == nil {
			break
		}
		e := best.buf[best.head]
		best.buf[best.head] = stream.Elem{}
		best.head++
		j.process(best, e)
		if j.st.err != nil {
			return
		}
	}
	for _, in := range j.in {
		if in.head == len(in.buf) {
			in.buf, in.head = in.buf[:0], 0
		} else if in.head > 1024 && in.head*2 > len(in.buf) {
			n := copy(in.buf, in.buf[in.head:])
			in.buf, in.head = in.buf[:n], 0
		}
	}
	if w == algebra.Forever {
		// The stream is over: what is still open is valid until Forever.
		for _, in := range j.in {
			for len(in.open) > 0 {
				for rec, ent := range in.open {
					delete(in.open, rec)
					j.close(in, ent, algebra.Forever)
				}
			}
		}
	}
	j.done = w
	h := algebra.Next(w)
	if w != algebra.Forever {
		j.wakeUp(h)
		j.sweep(h)
	}
	j.release(w, h)
}

func (j *Join) process(in *joinInput, e stream.Elem) {
	switch e.Kind {
	case stream.End:
		ent := in.open[e.Rec]
		if ent == nil {
			return
		}
		delete(in.open, e.Rec)
		j.close(in, ent, e.T)
	default:
		vals := e.Rec.Vals
		if fs := j.filters[in.i]; len(fs) > 0 {
			for v := range j.vals {
				j.vals[v] = nil
			}
			j.vals[in.i] = vals
			for _, f := range fs {
				ok, err := f(j.vals)
				if err != nil {
					j.st.fail(err)
					return
				}
				if !ok.B() {
					return
				}
			}
		}
		ent := j.newEntry()
		ent.rec, ent.b = e.Rec, e.T
		h := algebra.Next(e.T) // Ends at e.T are done
		switch e.Kind {
		case stream.Event:
			ent.e = algebra.Next(e.T)
		case stream.Whole:
			ent.b, ent.e = e.Rec.From, e.T
			h = e.T // Ends at e.T may still come
		case stream.Late:
			ent.b = e.Rec.From
			fallthrough
		default:
			ent.open = true
			ent.e = algebra.Forever
			in.open[e.Rec] = ent
		}
		if in.stored {
			in.entries = append(in.entries, ent)
			in.nLive++
			if in.maxLate != 0 {
				in.minB = min(in.minB, ent.b)
			}
			for i, ix := range in.idx {
				var key string
				key, j.keybuf = indexKey(j.keybuf, vals, ix.cols)
				ix.m[key] = append(ix.m[key], ent)
				if i == 0 {
					ent.key = key
				}
			}
			if ent.open {
				in.nOpen++
			} else {
				in.closedQ = append(in.closedQ, ent)
			}
		}
		j.enumerate(in.i, ent, h)
		if !in.stored && ent.open && len(ent.deps) == 0 {
			delete(in.open, e.Rec)
		}
		if in.stored && !ent.open && j.purgeable(in.i, ent, e.T) {
			j.kill(in, ent)
		}
	}
}

// newEntry takes an entry from the current slab (entries are allocated
// 256 at a time).
func (j *Join) newEntry() *entry {
	if len(j.slab) == 0 {
		j.slab = make([]entry, 256)
	}
	e := &j.slab[0]
	j.slab = j.slab[1:]
	return e
}

// close records that an open entry's valid time ends at t and decides what
// that settles.
func (j *Join) close(in *joinInput, ent *entry, t algebra.Time) {
	ent.e, ent.open = t, false
	if in.stored && !ent.dead {
		in.nOpen--
		in.closedQ = append(in.closedQ, ent)
	}
	deps := ent.deps
	ent.deps = nil
	for _, c := range deps {
		if c.state != dead {
			j.eval(c, t)
		}
	}
	// A tuple that has just ended often cannot meet any later one (with
	// the default clauses, never): drop it now rather than at a sweep.
	// Tuples at this time may still come, so the future begins at t.
	if in.stored && !ent.dead && j.purgeable(in.i, ent, t) {
		j.kill(in, ent)
	}
}

// indexKey is the hash key of columns cols of vals. A single identifier,
// enum or string column is its own key (no encoding, no allocation); other
// keys are the canonical encoding of the values, appended to buf.
func indexKey(buf []byte, vals []algebra.Value, cols []int) (string, []byte) {
	if len(cols) == 1 {
		if v := vals[cols[0]]; stringKeyed(v.K) {
			return v.S, buf
		}
	}
	buf = buf[:0]
	for _, c := range cols {
		buf = algebra.AppendKey(buf, vals[c])
	}
	return string(buf), buf
}

// stringKeyed reports whether values of kind k are told apart by S alone.
func stringKeyed(k algebra.Kind) bool {
	return k == algebra.KindEntity || k == algebra.KindString || k == algebra.KindEnum
}

// enumerate forms every binding of the new entry at input i with the stored
// entries of the other inputs.
func (j *Join) enumerate(i int, ent *entry, h algebra.Time) {
	plan := j.plans[i]
	for v := range j.bind {
		j.bind[v] = nil
		j.vals[v] = nil
	}
	j.bind[i] = ent
	j.vals[i] = ent.rec.Vals
	var rec func(s int)
	rec = func(s int) {
		if j.st.err != nil {
			return
		}
		if s == len(plan) {
			j.newCand(h, j.bind)
			return
		}
		st := &plan[s]
		if s == 0 {
			if j.checks(st.checks) {
				rec(1)
			}
			return
		}
		in := j.in[st.v]
		var list []*entry
		if st.index >= 0 {
			if len(st.keys) == 1 {
				v, err := st.keys[0](j.vals)
				if err != nil {
					j.st.fail(err)
					return
				}
				if stringKeyed(v.K) {
					list = in.idx[st.index].m[v.S]
				} else {
					j.keybuf = algebra.AppendKey(j.keybuf[:0], v)
					list = in.idx[st.index].m[string(j.keybuf)]
				}
			} else {
				j.keybuf = j.keybuf[:0]
				for _, kf := range st.keys {
					v, err := kf(j.vals)
					if err != nil {
						j.st.fail(err)
						return
					}
					j.keybuf = algebra.AppendKey(j.keybuf, v)
				}
				list = in.idx[st.index].m[string(j.keybuf)]
			}
		} else {
			list = in.entries[in.entHead:]
		}
		for _, e := range list {
			if e.dead {
				continue
			}
			j.bind[st.v] = e
			j.vals[st.v] = e.rec.Vals
			if j.checks(st.checks) {
				rec(s + 1)
			}
		}
		j.bind[st.v] = nil
		j.vals[st.v] = nil
	}
	rec(0)
}

func (j *Join) checks(fs []expr.Fn) bool {
	for _, f := range fs {
		ok, err := f(j.vals)
		if err != nil {
			j.st.fail(err)
			return false
		}
		if !ok.B() {
			return false
		}
	}
	return true
}

// ---- candidates ----

// newCand makes a candidate of a binding (copied) and evaluates it.
func (j *Join) newCand(h algebra.Time, bind []*entry) {
	c := &cand{}
	if j.k <= len(c.entsA) {
		c.ents, c.vals = c.entsA[:j.k], c.valsA[:j.k]
	} else {
		c.ents, c.vals = make([]*entry, j.k), make(expr.Binding, j.k)
	}
	copy(c.ents, bind)
	for i, e := range c.ents {
		c.vals[i] = e.rec.Vals
	}
	j.live++
	j.eval(c, h)
}

// spans fills j.vs for candidate c at horizon h: unknown ends lie in
// [max(h, b+1), Forever].
func (j *Join) spans(c *cand, h algebra.Time) {
	for i, e := range c.ents {
		if e.open {
			j.vs[i] = varSpan{b: point(e.b), e: rng{max(h, algebra.Next(e.b)), algebra.Forever}}
		} else {
			j.vs[i] = varSpan{b: point(e.b), e: point(e.e)}
		}
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
	p := evalP(j.spec.When, j.vs)
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
	b := j.withTimes(c, tv)
	for _, f := range j.tconds {
		v, err := f(b)
		if err != nil {
			j.st.fail(err)
			return no
		}
		if !v.B() {
			return no
		}
	}
	return yes
}

// times evaluates the Times over j.vs.
func (j *Join) times() ([]algebra.Value, tri) {
	out := make([]algebra.Value, len(j.spec.Times))
	for i, t := range j.spec.Times {
		s := evalT(t.X, j.vs)
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
		for _, e := range c.ents {
			if e.open {
				e.deps = append(e.deps, c)
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
	vals := make([]algebra.Value, len(j.targets))
	for i, t := range j.targets {
		v, err := t(b)
		if err != nil {
			j.st.fail(err)
			return nil
		}
		vals[i] = v
	}
	return &stream.Rec{Vals: vals, From: from}
}

func (j *Join) emit(e stream.Elem) {
	j.seq++
	j.outBuf.push(e, j.seq)
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

// ---- purging ----

// kill marks a stored entry purged: no future binding will use it. It
// leaves the store at the next compaction.
func (j *Join) kill(in *joinInput, e *entry) {
	e.dead = true
	in.nLive--
	in.nDead++
	for i, ix := range in.idx {
		key := e.key
		if i > 0 {
			key, j.keybuf = indexKey(j.keybuf, e.rec.Vals, ix.cols)
		}
		list := ix.m[key]
		for i, x := range list {
			if x == e {
				last := len(list) - 1
				list[i] = list[last]
				list[last] = nil
				list = list[:last]
				break
			}
		}
		if len(list) == 0 {
			delete(ix.m, key)
		} else {
			ix.m[key] = list
		}
	}
	if e.open {
		in.nOpen--
		if len(e.deps) == 0 {
			delete(in.open, e.rec)
		}
	}
}

// sweep checks every stored entry of an input for purging once its store
// has doubled since the last check, and compacts the store once purged
// entries outnumber live ones.
func (j *Join) sweep(h algebra.Time) {
	for _, in := range j.in {
		if !in.stored {
			continue
		}
		if in.nLive >= in.threshold {
			for _, e := range in.entries[in.entHead:] {
				if !e.dead && j.purgeable(in.i, e, h) {
					j.kill(in, e)
				}
			}
			in.threshold = max(in.sweepMin, 2*in.nLive)
		}
		if in.nDead > 64 && in.nDead > in.nLive || in.sweepMin == 1 && in.nDead > 0 {
			in.compact()
		}
	}
}

// compact removes purged entries from the store's arrival list and closed
// queue (kill has already taken them out of the indexes).
func (in *joinInput) compact() {
	live := in.entries[:0]
	for _, e := range in.entries[in.entHead:] {
		if !e.dead {
			live = append(live, e)
		}
	}
	clear(in.entries[len(live):])
	in.entries, in.entHead = live, 0
	cq := in.closedQ[:0]
	for _, e := range in.closedQ[in.closedH:] {
		if !e.dead {
			cq = append(cq, e)
		}
	}
	clear(in.closedQ[len(cq):])
	in.closedQ, in.closedH = cq, 0
	in.nDead = 0
	if in.maxLate != 0 {
		in.minB = algebra.Forever
		for _, e := range in.entries {
			in.minB = min(in.minB, e.b)
		}
	}
}

// storedSpan bounds the valid time of any tuple input in may contribute to
// a future binding: one it stores now or one still to come.
func (j *Join) storedSpan(in *joinInput, h algebra.Time) varSpan {
	fut := in.futureSpan(h)
	minB, minE := fut.b.lo, fut.e.lo
	for in.entHead < len(in.entries) && in.entries[in.entHead].dead {
		in.entHead++
	}
	if in.maxLate != 0 {
		if in.nLive > 0 {
			minB = min(minB, in.minB)
		}
	} else if in.entHead < len(in.entries) {
		minB = min(minB, in.entries[in.entHead].b)
	}
	for in.closedH < len(in.closedQ) && in.closedQ[in.closedH].dead {
		in.closedH++
	}
	if in.closedH < len(in.closedQ) {
		minE = min(minE, in.closedQ[in.closedH].e)
	}
	return varSpan{b: rng{minB, algebra.Forever}, e: rng{minE, algebra.Forever}}
}

// futureSpan bounds the valid time of a tuple this input has still to
// deliver: it begins at h or later — or, for a late input, at most maxLate
// before — and ends after h (a late input's whole tuples end at h or later).
func (in *joinInput) futureSpan(h algebra.Time) varSpan {
	if in.maxLate == 0 {
		return varSpan{b: rng{h, algebra.Forever}, e: rng{algebra.Next(h), algebra.Forever}}
	}
	lo := algebra.Beginning
	if in.maxLate != algebra.Forever && h > algebra.Beginning+in.maxLate {
		lo = h - in.maxLate
	}
	return varSpan{b: rng{lo, algebra.Forever}, e: rng{h, algebra.Forever}}
}

// purgeable reports whether every future binding with e at input i fails
// the when clause.
func (j *Join) purgeable(i int, e *entry, h algebra.Time) bool {
	if j.spec.OverlapPurge {
		return !e.open && e.e <= h
	}
	for f := 0; f < j.k; f++ {
		if f == i {
			continue
		}
		for v, in := range j.in {
			switch {
			case v == i:
				if e.open {
					j.vs[v] = varSpan{b: point(e.b), e: rng{max(h, algebra.Next(e.b)), algebra.Forever}}
				} else {
					j.vs[v] = varSpan{b: point(e.b), e: point(e.e)}
				}
			case v == f:
				j.vs[v] = in.futureSpan(h)
			default:
				j.vs[v] = j.storedSpan(in, h)
			}
		}
		if evalP(j.spec.When, j.vs) != no {
			return false
		}
	}
	return true
}

// ---- output ----

// futureLow bounds the time of any output of a binding still to be formed.
func (j *Join) futureLow(h algebra.Time) algebra.Time {
	low := algebra.Forever
	if j.k == 0 {
		return low
	}
	valid := j.spec.Valid
	for f := 0; f < j.k; f++ {
		for v, in := range j.in {
			if v == f {
				j.vs[v] = in.futureSpan(h)
			} else {
				j.vs[v] = j.storedSpan(in, h)
			}
		}
		var t algebra.Time
		if valid.At != nil {
			t = evalT(valid.At, j.vs).b.lo
		} else {
			t = evalT(valid.From, j.vs).b.lo
		}
		low = min(low, t)
	}
	return low
}

// release sends every buffered output that comes before any output still
// possible, then advances the output stream.
func (j *Join) release(w, h algebra.Time) {
	var low algebra.Time
	final := w == algebra.Forever
	if !final {
		low = min(h, j.futureLow(h))
		for j.lb.len() > 0 {
			top := j.lb.top()
			if top.c.ver != top.ver || top.c.state == dead {
				j.lb.pop()
				continue
			}
			low = min(low, top.key)
			break
		}
	}
	for j.outBuf.len() > 0 {
		e := j.outBuf.top()
		if !final && e.T >= low {
			break
		}
		j.outBuf.pop()
		j.out.Push(e)
	}
	adv := algebra.Forever
	if !final {
		adv = algebra.Prev(low)
	}
	if adv > j.lastAdv || (final && !j.finished) {
		j.lastAdv = adv
		if final {
			j.finished = true
		}
		j.out.Advance(adv)
	}
}

// Held counts stored tuples, live candidates and buffered outputs.
func (j *Join) Held() int {
	n := j.live + j.outBuf.len()
	for _, in := range j.in {
		n += in.nLive + len(in.buf) - in.head
		if !in.stored {
			n += len(in.open)
		}
	}
	return n
}

// ---- heaps ----

type candItem struct {
	key algebra.Time
	c   *cand
	ver uint32
}

type candHeap struct{ a []candItem }

func (h *candHeap) len() int      { return len(h.a) }
func (h *candHeap) top() candItem { return h.a[0] }
func (h *candHeap) push(x candItem) {
	h.a = append(h.a, x)
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.a[p].key <= h.a[i].key {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}
func (h *candHeap) pop() candItem {
	x := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a[n] = candItem{}
	h.a = h.a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.a[l].key < h.a[m].key {
			m = l
		}
		if r < n && h.a[r].key < h.a[m].key {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return x
}

type seqElem struct {
	e   stream.Elem
	seq uint64
}

type elemHeap struct{ a []seqElem }

func seqLess(x, y seqElem) bool {
	if x.e.T != y.e.T {
		return x.e.T < y.e.T
	}
	if px, py := x.e.Phase(), y.e.Phase(); px != py {
		return px < py
	}
	return x.seq < y.seq
}

func (h *elemHeap) len() int         { return len(h.a) }
func (h *elemHeap) top() stream.Elem { return h.a[0].e }
func (h *elemHeap) push(e stream.Elem, seq uint64) {
	h.a = append(h.a, seqElem{e, seq})
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !seqLess(h.a[i], h.a[p]) {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}
func (h *elemHeap) pop() stream.Elem {
	x := h.a[0].e
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a[n] = seqElem{}
	h.a = h.a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && seqLess(h.a[l], h.a[m]) {
			m = l
		}
		if r < n && seqLess(h.a[r], h.a[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return x
}
