package exec

import (
	"cmp"
	"slices"

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
	// Exists[v] says that variable v is existential (nil: none is): no
	// target, no valid clause and no TimeCond reads it, the result is a
	// set, and some variable is not existential. The join then forms one
	// candidate per binding of the other variables, holding the witnesses
	// that may still satisfy the where and when conjuncts (join_semi.go).
	Exists []bool
	// InOrder says that every input delivers only Begin, End and Event
	// elements (no Whole or Late: no α delivers tuples late), so that an
	// input's tuples begin in the order they arrive. It admits the
	// special paths (join_sweep.go).
	InOrder bool
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
	merge   merge // of the inputs' buffers, in the order of in
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

	// Existential variables (join_semi.go): semi is set when there are
	// some; exVars are they, owner the first other variable and keyVars
	// the rest; groups holds the groups by their entries of those. grpDone
	// tells enumeration that the group of the current binding is settled.
	semi    bool
	exVars  []int
	owner   int
	keyVars []int
	groups  map[groupKey]*cand
	grpDone bool

	// sw is the overlap equi-join sweep, when the spec is one
	// (join_sweep.go); nil: the general path.
	sw *eqSweep

	// scratch
	entBlk  slab[entry]
	keybuf  []byte
	keyVals []algebra.Value // hashCols' scratch
	depPool [][]*cand       // emptied deps lists, for reuse (recycleDeps)
	candBlk slab[cand]
	valBlk  slab[algebra.Value]
	recBlk  slab[stream.Rec]
	vs      []varSpan
	bind    []*entry
	vals    expr.Binding
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
			threshold: sweepMin, sweepMin: sweepMin}
		if i < len(spec.MaxLate) {
			in.maxLate = spec.MaxLate[i]
		}
		in.minB = algebra.Forever
		j.in = append(j.in, in)
	}
	if k == 0 {
		// No variables: one empty binding. A pseudo input, fed only with
		// Advance, tells the operator how time passes.
		j.in = append(j.in, &joinInput{j: j})
	}
	for _, in := range j.in {
		j.merge.in = append(j.merge.in, &in.inbuf)
	}
	for _, t := range spec.Targets {
		j.targets = append(j.targets, expr.Compile(t))
	}
	for _, c := range spec.TimeConds {
		j.tconds = append(j.tconds, expr.Compile(c))
	}
	j.toHasConst = spec.Valid.To == nil || hasConst(spec.Valid.To)
	j.setupSemi()
	eqs, others := j.splitConds()
	j.compilePlans(eqs, others)
	if sweepable(&spec, eqs, others) {
		j.sw = newSweep(eqs, others)
	}
	return j
}

// Input returns the receiver of input i.
func (j *Join) Input(i int) stream.Receiver { return j.in[i] }

// Held counts stored tuples, live candidates and buffered outputs.
func (j *Join) Held() int {
	pending, stored, buffered := j.heldCounts()
	return pending + stored + buffered
}

// heldCounts breaks Held down for the memory budget: pending bindings
// (live candidates), stored tuples (with the inputs' buffers) and
// buffered results.
func (j *Join) heldCounts() (pending, stored, buffered int) {
	stored = j.merge.held()
	for _, in := range j.in {
		stored += in.nLive
		if !in.stored {
			stored += in.open.len()
		}
	}
	return j.live, stored, j.outBuf.len()
}

// heldBytes estimates the bytes the join holds.
func (j *Join) heldBytes() int64 {
	pending, stored, buffered := j.heldCounts()
	perBinding := int64(bytesBinding)
	if j.k > 3 {
		perBinding += int64(j.k) * bytesVar
	}
	return int64(pending)*perBinding + int64(stored+buffered)*bytesTuple
}

// parts names what the join holds, most first.
func (j *Join) parts() []Part {
	pending, stored, buffered := j.heldCounts()
	var parts []Part
	for _, p := range []Part{{pending, "pending bindings"}, {stored, "stored tuples"}, {buffered, "buffered results"}} {
		if p.N > 0 {
			parts = append(parts, p)
		}
	}
	slices.SortStableFunc(parts, func(x, y Part) int { return cmp.Compare(y.N, x.N) })
	return parts
}
