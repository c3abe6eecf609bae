package exec

import (
	"cmp"
	"math/big"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/agg"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// AggSpec is one aggregate an Apply maintains.
type AggSpec struct {
	Func   expr.AggFunc
	Param  *big.Rat // percentile's p, histogram's width
	Window expr.Window
	// NBy is the number of by-list values leading each inner tuple; the
	// argument follows them.
	NBy int
	// ArgType is the argument's type.
	ArgType algebra.Type
	// Group lists the outer columns holding the by-list values.
	Group []int
}

// ApplySpec is an Apply ready to run.
type ApplySpec struct {
	Aggs []AggSpec
	// Targets and Pred are over pseudo-variables 0 (the outer tuple) and 1
	// (the aggregate values); Pred is nil when there is none.
	Targets []expr.Expr
	Pred    expr.Expr
	// Bag keeps the output a multiset: each outer tuple's maximal pieces
	// of constant values (an aggregate's inner query).
	Bag bool
}

// Apply evaluates aggregates incrementally and applies them to the outer
// tuples (plan.Apply). Input 0 is the outer stream; input j+1 is aggregate
// j's inner stream, a bag of (by…, argument) tuples.
//
// Each aggregate keeps, per group, an accumulator of the contributions
// valid now under its window (agg.Acc): an inner tuple valid over [b, e)
// is added at b and removed at the window's stretch of e (e for each
// instant, never for ever, e + D − 1 for a moving window), so the state is
// the open inner tuples and those still inside their window — not the
// history. The inputs are merged in time order behind the least of their
// watermarks; at each time t the operator ends the outer tuples that end
// at t, applies the inner changes at t, re-evaluates the open outer tuples
// of every group whose value changed (ending the current piece and
// beginning the next when the result changes), and then begins the outer
// tuples that begin at t. Outputs at t are therefore final once every
// input has passed t.
type Apply struct {
	spec    ApplySpec
	targets []expr.Fn
	pred    expr.Fn
	out     stream.Receiver
	st      *runState
	ins     []*applyInput
	aggs    []*aggState
	open    recMap[*outerEnt]
	touched []*aggGroup
	done    algebra.Time
	started bool
	lastAdv algebra.Time
	binding expr.Binding
	// byHash finds every group by hash, even while there are few
	// (tests: Options.collide exercises the hash chains so).
	byHash  bool
	keyVals []algebra.Value // groupsOf's scratch: an outer tuple's group key
	seq     uint64

	// Allocation in blocks: rows (a row is taken from valBlk only when
	// kept), output records, outer entries and their group lists; changed
	// is step's scratch.
	valBlk  slab[algebra.Value]
	recBlk  slab[stream.Rec]
	entBlk  slab[outerEnt]
	grpBlk  slab[*aggGroup]
	changed []*outerEnt
	// evEnt and evGroups are step's scratch for an outer event.
	evEnt    outerEnt
	evGroups []*aggGroup
}

type applyInput struct {
	a    *Apply
	i    int
	buf  []stream.Elem
	head int
	wm   algebra.Time
	seen bool
}

type aggState struct {
	spec AggSpec
	// groups holds the groups by the runState's hash of their keys;
	// keys whose hashes collide are chained (next) and told apart by
	// algebra.KeysEqual.
	groups   hashMap[*aggGroup]
	nGroups  int
	removals removalQueue
	keys     slab[algebra.Value] // the groups' keys
	// whole is the group of the empty key (an aggregate without a by
	// list has no other) while it is in groups: found without hashing.
	whole *aggGroup
	// few lists every group while there are at most fewGroups of them
	// (manyGroups is set once there have been more, for good): a short
	// list of keys compared is cheaper than hashing one (a count by
	// state has four groups).
	few        []*aggGroup
	manyGroups bool
}

// fewGroups is how many groups an aggregate finds by comparing keys
// rather than by hash.
const fewGroups = 8

type aggGroup struct {
	hash    uint64
	key     []algebra.Value
	next    *aggGroup // another group with the same hash
	st      *aggState
	acc     agg.Acc // in the group: one less pointer to follow per update
	val     algebra.Value
	ok      bool
	outers  map[*outerEnt]struct{}
	pending int // removals scheduled
	touched bool
}

type outerEnt struct {
	rec    *stream.Rec
	groups []*aggGroup
	piece  *stream.Rec // the current output piece, nil while none qualifies
	dirty  bool        // queued for re-evaluation
	seq    uint64
}

type removal struct {
	t algebra.Time
	g *aggGroup
	v algebra.Value
}

// removalHeap is a binary min-heap of removals on t, typed (no interface
// boxing per element: container/heap allocated one per removal). push and
// pop move elements exactly as container/heap's Push and Pop do, so
// removals at equal times come out in the order they did.
type removalHeap []removal

func (h *removalHeap) push(r removal) {
	*h = append(*h, r)
	q := *h
	for j := len(q) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !(q[j].t < q[i].t) {
			break
		}
		q[i], q[j] = q[j], q[i]
		j = i
	}
}

func (h *removalHeap) pop() removal {
	q := *h
	n := len(q) - 1
	q[0], q[n] = q[n], q[0]
	// down(0, n), as container/heap
	for i := 0; ; {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 {
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && q[j2].t < q[j1].t {
			j = j2
		}
		if !(q[j].t < q[i].t) {
			break
		}
		q[i], q[j] = q[j], q[i]
		i = j
	}
	r := q[n]
	q[n] = removal{}
	*h = q[:n]
	return r
}

// removalQueue holds the removals an aggregate has scheduled, least time
// first. A window is the same length for every contribution and inner
// tuples come in time order, so removals are nearly always scheduled in
// order of time: those are appended to a FIFO (fifo[head:], its times
// nondecreasing — the invariant push keeps), and only one scheduled before
// the FIFO's last goes to the heap. next and pop look at both heads. The
// order of removals at equal times is not the heap's alone any more; it
// does not matter: a group's value depends on the multiset of its
// contributions, not on the order they leave in (agg.Acc), and the outer
// tuples a time touches are re-evaluated in their own order (seq).
type removalQueue struct {
	fifo []removal
	head int
	heap removalHeap
}

func (q *removalQueue) len() int { return len(q.fifo) - q.head + len(q.heap) }

func (q *removalQueue) push(r removal) {
	if n := len(q.fifo); n > q.head && r.t < q.fifo[n-1].t {
		q.heap.push(r)
		return
	}
	if q.head == len(q.fifo) {
		q.fifo, q.head = q.fifo[:0], 0 // empty: start over
	} else if q.head >= 1024 && 2*q.head >= len(q.fifo) {
		n := copy(q.fifo, q.fifo[q.head:])
		clear(q.fifo[n:])
		q.fifo, q.head = q.fifo[:n], 0
	}
	q.fifo = append(q.fifo, r)
}

// next is the least time of a scheduled removal; ok is false when none is.
func (q *removalQueue) next() (t algebra.Time, ok bool) {
	if q.head < len(q.fifo) {
		t, ok = q.fifo[q.head].t, true
	}
	if len(q.heap) > 0 && (!ok || q.heap[0].t < t) {
		t, ok = q.heap[0].t, true
	}
	return t, ok
}

// pop removes a removal of the least time (there must be one).
func (q *removalQueue) pop() removal {
	if q.head < len(q.fifo) && (len(q.heap) == 0 || q.fifo[q.head].t <= q.heap[0].t) {
		r := q.fifo[q.head]
		q.fifo[q.head] = removal{}
		q.head++
		return r
	}
	return q.heap.pop()
}

// NewApply builds the operator; outputs go to out.
func NewApply(spec ApplySpec, out stream.Receiver, st *runState) *Apply {
	a := &Apply{spec: spec, out: out, st: st,
		done: algebra.Beginning, lastAdv: algebra.Beginning, binding: make(expr.Binding, 2)}
	for _, t := range spec.Targets {
		a.targets = append(a.targets, expr.Compile(t))
	}
	if spec.Pred != nil {
		a.pred = expr.Compile(spec.Pred)
	}
	for i := 0; i <= len(spec.Aggs); i++ {
		a.ins = append(a.ins, &applyInput{a: a, i: i})
	}
	for _, s := range spec.Aggs {
		a.aggs = append(a.aggs, &aggState{spec: s})
	}
	a.binding[1] = make([]algebra.Value, len(spec.Aggs))
	return a
}

// Input returns input i: 0 the outer stream, j+1 aggregate j's.
func (a *Apply) Input(i int) stream.Receiver { return a.ins[i] }

func (in *applyInput) Push(e stream.Elem) { in.buf = append(in.buf, e) }

func (in *applyInput) Advance(t algebra.Time) {
	if in.seen && t <= in.wm {
		return
	}
	in.wm, in.seen = t, true
	in.a.advance()
}

// Held counts open outer tuples, groups, scheduled removals and buffered
// inputs.
func (a *Apply) Held() int {
	n := a.open.len()
	for _, s := range a.aggs {
		n += s.nGroups + s.removals.len()
	}
	for _, in := range a.ins {
		n += len(in.buf) - in.head
	}
	return n
}

func (a *Apply) advance() {
	if a.st.err != nil {
		return
	}
	w := algebra.Forever
	for _, in := range a.ins {
		if !in.seen {
			return
		}
		w = min(w, in.wm)
	}
	for a.st.err == nil {
		t, ok := a.nextTime(w)
		if !ok {
			break
		}
		a.step(t)
	}
	for _, in := range a.ins {
		if in.head > 0 && in.head == len(in.buf) {
			in.buf, in.head = in.buf[:0], 0
		}
	}
	if !a.started || w > a.lastAdv {
		a.started, a.lastAdv = true, w
		a.out.Advance(w)
	}
}

// nextTime is the least time ≤ w with something to process.
func (a *Apply) nextTime(w algebra.Time) (algebra.Time, bool) {
	t, ok := algebra.Forever, false
	for _, in := range a.ins {
		if in.head < len(in.buf) && in.buf[in.head].T <= w && in.buf[in.head].T <= t {
			t, ok = in.buf[in.head].T, true
		}
	}
	for _, s := range a.aggs {
		if r, has := s.removals.next(); has && r <= w && r <= t {
			t, ok = r, true
		}
	}
	return t, ok
}

// take returns input in's elements at time t.
func (in *applyInput) take(t algebra.Time) []stream.Elem {
	start := in.head
	for in.head < len(in.buf) && in.buf[in.head].T == t {
		in.head++
	}
	return in.buf[start:in.head]
}

func (a *Apply) step(t algebra.Time) {
	outer := a.ins[0].take(t)
	// Outer tuples ending at t.
	for _, e := range outer {
		if e.Kind != stream.End {
			continue
		}
		ent, _ := a.open.take(e.Rec)
		if ent == nil {
			continue
		}
		if ent.piece != nil {
			a.out.Push(stream.Elem{Kind: stream.End, T: t, Rec: ent.piece})
		}
		for _, g := range ent.groups {
			delete(g.outers, ent)
			a.drop(g)
		}
	}
	// The aggregates' changes at t.
	for j, s := range a.aggs {
		for _, e := range a.ins[j+1].take(t) {
			g, v := a.inner(s, e.Rec.Vals)
			switch e.Kind {
			case stream.Begin:
				g.acc.Add(v)
			case stream.Event:
				g.acc.Add(v)
				a.schedule(s, g, v, s.spec.Window.Stretch(algebra.Next(t)))
			case stream.End:
				if r := s.spec.Window.Stretch(t); r == t {
					g.acc.Remove(v)
				} else {
					a.schedule(s, g, v, r)
				}
			}
			a.touch(g)
		}
		for r, has := s.removals.next(); has && r == t; r, has = s.removals.next() {
			r := s.removals.pop()
			r.g.pending--
			r.g.acc.Remove(r.v)
			a.touch(r.g)
		}
	}
	// Groups whose value changed: first every new value, then the open
	// outer tuples of those groups, each once with all its values current.
	changed := a.changed[:0]
	for _, g := range a.touched {
		g.touched = false
		v, ok, err := g.acc.Value()
		if err != nil {
			a.st.fail(err)
			return
		}
		if ok != g.ok || ok && !sameValue(v, g.val) {
			g.val, g.ok = v, ok
			if len(g.outers) == 0 {
				continue // nobody open reads it (an event's outer tuples)
			}
			for ent := range g.outers {
				if !ent.dirty {
					ent.dirty = true
					changed = append(changed, ent)
				}
			}
		}
	}
	for _, g := range a.touched {
		a.drop(g)
	}
	a.touched = a.touched[:0]
	if len(changed) > 0 {
		slices.SortFunc(changed, func(x, y *outerEnt) int { return cmp.Compare(x.seq, y.seq) })
		for _, ent := range changed {
			ent.dirty = false
			if t != algebra.Forever { // an interval's last piece runs to Forever
				a.eval(ent, t)
			}
		}
		clear(changed)
		a.changed = changed[:0]
	}
	// Outer tuples beginning at t.
	for _, e := range outer {
		switch e.Kind {
		case stream.Begin:
			a.seq++
			ent := a.entBlk.one()
			*ent = outerEnt{rec: e.Rec, groups: a.groupsOf(e.Rec.Vals), seq: a.seq}
			a.open.put(e.Rec, ent)
			for _, g := range ent.groups {
				g.outers[ent] = struct{}{}
			}
			a.eval(ent, t)
		case stream.Event:
			// An event is evaluated once and not kept: its entry and
			// group list are scratch.
			ent := &a.evEnt
			*ent = outerEnt{rec: e.Rec, groups: a.groupsInto(a.evGroups[:0], e.Rec.Vals)}
			a.evGroups = ent.groups
			if row, ok := a.row(ent); ok {
				a.out.Push(stream.Elem{Kind: stream.Event, T: t, Rec: a.keep(row, t)})
			}
			for _, g := range ent.groups {
				a.drop(g)
			}
			ent.rec = nil
		}
	}
}

// inner finds the group of an inner tuple and its argument.
func (a *Apply) inner(s *aggState, vals []algebra.Value) (*aggGroup, algebra.Value) {
	return a.group(s, vals[:s.spec.NBy]), vals[s.spec.NBy]
}

// group returns the group of key, making it (empty) if need be; key is
// copied when kept.
func (a *Apply) group(s *aggState, key []algebra.Value) *aggGroup {
	return s.group(key, a.st.hash, a.byHash)
}

// group returns the group of key (hash is the run's hash; byHash finds
// every group by hash, see Apply.byHash), making it (empty) if need be;
// key is copied when kept.
func (s *aggState) group(key []algebra.Value, hash func([]algebra.Value) uint64, byHash bool) *aggGroup {
	if len(key) == 0 && s.whole != nil {
		return s.whole
	}
	s.manyGroups = s.manyGroups || byHash
	if !s.manyGroups {
		// Identical values have equal keys: most lookups end in the
		// first pass, which compares without a call.
		if len(key) == 1 {
			for _, g := range s.few {
				if sameValue(g.key[0], key[0]) {
					return g
				}
			}
		}
		for _, g := range s.few {
			if algebra.KeysEqual(g.key, key) {
				return g
			}
		}
	}
	h := hash(key)
	if s.manyGroups {
		for g := s.groups.get(h); g != nil; g = g.next {
			if algebra.KeysEqual(g.key, key) {
				return g
			}
		}
	}
	kept := s.keys.take(len(key))
	copy(kept, key)
	g := &aggGroup{hash: h, key: kept, next: s.groups.get(h), st: s, acc: *agg.New(s.spec.Func, s.spec.ArgType, s.spec.Param), outers: map[*outerEnt]struct{}{}}
	g.val, g.ok, _ = g.acc.Value() // an empty group's value: 0, false or none
	s.groups.put(h, g)
	s.nGroups++
	if !s.manyGroups {
		if s.manyGroups = s.nGroups > fewGroups; s.manyGroups {
			clear(s.few)
			s.few = nil
		} else {
			s.few = append(s.few, g)
		}
	}
	if len(key) == 0 {
		s.whole = g
	}
	return g
}

// groupsOf returns the groups an outer tuple picks, one per aggregate.
func (a *Apply) groupsOf(vals []algebra.Value) []*aggGroup {
	return a.groupsInto(a.grpBlk.take(len(a.aggs))[:0], vals)
}

// groupsInto appends the groups an outer tuple picks to gs.
func (a *Apply) groupsInto(gs []*aggGroup, vals []algebra.Value) []*aggGroup {
	for _, s := range a.aggs {
		a.keyVals = a.keyVals[:0]
		for _, c := range s.spec.Group {
			a.keyVals = append(a.keyVals, vals[c])
		}
		gs = append(gs, a.group(s, a.keyVals))
	}
	return gs
}

func (a *Apply) touch(g *aggGroup) {
	if !g.touched {
		g.touched = true
		a.touched = append(a.touched, g)
	}
}

// drop forgets a group that holds nothing and nobody reads.
func (a *Apply) drop(g *aggGroup) { g.dropIfIdle() }

// dropIfIdle forgets g if it holds nothing and nobody reads it.
func (g *aggGroup) dropIfIdle() {
	if g.acc.Len() == 0 && g.pending == 0 && len(g.outers) == 0 && !g.touched {
		g.st.unlink(g)
	}
}

// unlink takes g out of the groups. A dropped group's key stays in its
// block (slab) until the block is unreferenced.
func (s *aggState) unlink(g *aggGroup) {
	head := s.groups.get(g.hash)
	switch {
	case head == g && g.next == nil:
		s.groups.del(g.hash)
	case head == g:
		s.groups.put(g.hash, g.next)
	default:
		p := head
		for p != nil && p.next != g {
			p = p.next
		}
		if p == nil {
			return // not a group (any more)
		}
		p.next = g.next
	}
	g.next = nil
	s.nGroups--
	if !s.manyGroups {
		for i, f := range s.few {
			if f == g {
				last := len(s.few) - 1
				s.few[i], s.few[last] = s.few[last], nil
				s.few = s.few[:last]
				break
			}
		}
	}
	if s.whole == g {
		s.whole = nil
	}
}

func (a *Apply) schedule(s *aggState, g *aggGroup, v algebra.Value, at algebra.Time) {
	if at >= algebra.Forever {
		return // contributes for ever
	}
	g.pending++
	s.removals.push(removal{t: at, g: g, v: v})
}

// row evaluates an outer tuple's targets with the aggregates' current
// values; ok is false when it does not qualify now (an aggregate without a
// value, or the where clause false).
func (a *Apply) row(ent *outerEnt) ([]algebra.Value, bool) {
	a.binding[0] = ent.rec.Vals
	aggVals := a.binding[1]
	for j, g := range ent.groups {
		if !g.ok {
			return nil, false
		}
		aggVals[j] = g.val
	}
	if a.pred != nil {
		v, err := a.pred(a.binding)
		if err != nil {
			a.st.fail(err)
			return nil, false
		}
		if !v.B() {
			return nil, false
		}
	}
	row := a.valBlk.peek(len(a.targets)) // taken by keep
	for i, f := range a.targets {
		v, err := f(a.binding)
		if err != nil {
			a.st.fail(err)
			return nil, false
		}
		row[i] = v
	}
	return row, true
}

// eval brings an open outer tuple's output up to date at t: the current
// piece goes on while the row is the same, and is ended (and a new one
// begun) when it changes.
func (a *Apply) eval(ent *outerEnt, t algebra.Time) {
	row, ok := a.row(ent)
	if ok && ent.piece != nil && sameRow(row, ent.piece.Vals) {
		return
	}
	if ent.piece != nil {
		a.out.Push(stream.Elem{Kind: stream.End, T: t, Rec: ent.piece})
		ent.piece = nil
	}
	if ok {
		ent.piece = a.keep(row, t)
		a.out.Push(stream.Elem{Kind: stream.Begin, T: t, Rec: ent.piece})
	}
}

// keep makes the row row just computed (at the head of valBlk) an output
// record from t.
func (a *Apply) keep(row []algebra.Value, from algebra.Time) *stream.Rec {
	return newRec(&a.recBlk, a.valBlk.take(len(row)), from)
}

func sameValue(a, b algebra.Value) bool { return a.K == b.K && a.N == b.N && a.S == b.S }

// sameRow reports value equivalence (as coalescing decides it).
func sameRow(a, b []algebra.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameValue(a[i], b[i]) && !algebra.KeysEqual(a[i:i+1], b[i:i+1]) {
			return false
		}
	}
	return true
}
