package exec

import (
	"fmt"
	"math/bits"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// The overlap join sweep: the special path of the most common join,
// docs/tquel.md's example 1 — two interval relations joined on equal
// columns (or on none) under the default when and valid clauses:
//
//	range of p is Process
//	range of r is RunningOn
//	retrieve (p.Process, r.Cpu) where p.Process = r.Process
//
// (when p overlap r, valid from begin of (p overlap r) to end of
// (p overlap r)). Its general evaluation (bounds, candidates, purging)
// reduces here to a sweep over the two inputs in time order:
//
//   - A binding is formed when its later tuple x begins at T, with the
//     tuples y of the other input still open: y began at or before T and
//     its End, which comes after T (Ends at T are processed before Begins
//     at T), is not in, and x ends after T. So x and y overlap, the result
//     begins at max(begins) = T, and it is emitted at once — the verdict
//     the general path reaches (vBegin) at the same point.
//   - The result ends at min(ends): at the End of whichever of x, y ends
//     first, when it is emitted (vEnd); at Forever, never.
//   - A tuple that has ended overlaps nothing still to begin: it leaves
//     the store at its End (the general path purges it there too).
//
// So every result is emitted as the element that decides it is processed,
// in processing order, which is the order of time with Ends first — the
// order the general path's output heap restores — and the output
// watermark is the input watermark (the general path's futureLow is h).
//
// State is structure-of-arrays slabs indexed by int32, no pointer graph:
// per input, its open tuples (values, key node, the chain of its key
// node, the list of its results), found at their End by record (recMap);
// a node per distinct key open (its values and both inputs' chains),
// found by the key's hash (hashMap; equal hashes chained, keys compared
// with algebra.KeysEqual, as the general path's index does); and the
// results (pairs), each in the lists of both its tuples. A tuple's key is
// hashed and looked up once, on arrival: its node both files it and holds
// the other input's tuples it binds with.
//
// The path is taken only when the spec says exactly this (sweepable).
// TestSweepJoinAgrees runs joins of this shape with it, without it
// (Options.generalJoin) and under colliding hashes against the reference
// evaluator; TestDifferential runs its corpus with it.
type eqSweep struct {
	cols   [2][]int  // key columns of each input, in the order of the equalities
	checks []expr.Fn // where conjuncts over both variables other than the keys
	side   [2]sweepSide
	// Key nodes, one per distinct key with open tuples: its key values
	// (nk a node), the first open tuple of each input with that key (a
	// chain, −1 when none), how many there are and its hash. keys finds
	// them by hash (keyTable).
	keys   keyTable
	nk     int
	knKey  []algebra.Value
	knHead [][2]int32
	knLen  []int32
	knHash []uint64
	knFree []int32
	// Key nodes left without open tuples wait in knIdle (knIsIdle) for
	// their key to come back — most do soon — and are dropped only once
	// they outnumber the others, all at once (dropIdle): the nodes held
	// stay within twice the keys open, plus idleMin.
	knIdle   []int32
	knIsIdle []bool
	// pairs: the results, begun; a pair is in the lists of both its
	// tuples (next[p][i] is the next pair of input i's tuple), ended when
	// the first ends and freed when the second does.
	pairOut  []*stream.Rec
	pairNext [][2]int32
	pairEnd  []bool
	pairFree []int32
}

// sweepSide is one input's open tuples, slot-indexed.
type sweepSide struct {
	open  recMap[int32]     // record → slot
	vals  [][]algebra.Value // per slot: its values (read here, not through its record)
	kn    []int32           // its key node
	prev  []int32           // the key node's chain of this input, −1 at the ends
	next  []int32
	pairs []int32 // its first pair, −1 when none
	free  []int32 // free slots
}

// sweepable reports whether the spec is the join the sweep evaluates: two
// interval inputs that deliver only Begins and Ends in order (InOrder),
// any key equalities between them (none: one key node, the empty key,
// holds every open tuple), no constant conjunct, no Times,
// no existential variable, when `a overlap b` (or the ordered overlap
// product with no when clause), and the default valid clause over a
// overlap b.
func sweepable(spec *JoinSpec, eqs []eq, others []expr.Expr) bool {
	if len(spec.Events) != 2 || spec.Events[0] || spec.Events[1] || !spec.InOrder ||
		len(spec.Times) > 0 || len(spec.TimeConds) > 0 || spec.Valid == nil {
		return false
	}
	for _, e := range spec.Exists {
		if e {
			return false
		}
	}
	for _, c := range others {
		if expr.Vars(c) == 0 {
			return false // checked per arriving tuple by the general path
		}
	}
	switch w := spec.When.(type) {
	case *expr.PTrue:
		if !spec.OverlapPurge {
			return false
		}
	case *expr.PCmp:
		if w.Op != expr.Overlap || !overlapOfBoth(w.X, w.Y) {
			return false
		}
	default:
		return false
	}
	from, ok1 := spec.Valid.From.(*expr.TBeginEnd)
	to, ok2 := spec.Valid.To.(*expr.TBeginEnd)
	if spec.Valid.At != nil || !ok1 || !ok2 || from.End || !to.End {
		return false
	}
	fx, ok1 := from.X.(*expr.TBinary)
	tx, ok2 := to.X.(*expr.TBinary)
	return ok1 && ok2 && !fx.Extend && !tx.Extend && overlapOfBoth(fx.X, fx.Y) && overlapOfBoth(tx.X, tx.Y)
}

// overlapOfBoth reports whether x and y are the valid times of variables
// 0 and 1, in either order, both intervals.
func overlapOfBoth(x, y expr.TExpr) bool {
	a, ok1 := x.(*expr.TVar)
	b, ok2 := y.(*expr.TVar)
	return ok1 && ok2 && !a.Event && !b.Event && a.Var+b.Var == 1 && a.Var*b.Var == 0
}

// newSweep sets up the sweep of j (sweepable).
func newSweep(eqs []eq, others []expr.Expr) *eqSweep {
	s := &eqSweep{}
	for _, e := range eqs {
		a, b := e.a, e.b
		if a.Var == 1 {
			a, b = b, a
		}
		s.cols[0] = append(s.cols[0], a.Attr)
		s.cols[1] = append(s.cols[1], b.Attr)
	}
	s.nk = len(eqs)
	for _, c := range others {
		s.checks = append(s.checks, expr.Compile(c))
	}
	return s
}

// sweepProcess is process for the sweep.
func (j *Join) sweepProcess(in *joinInput, e stream.Elem) {
	s, i := j.sw, in.i
	side := &s.side[i]
	switch e.Kind {
	case stream.End:
		if slot, ok := side.open.take(e.Rec); ok {
			j.sweepEnd(i, slot, e.T)
		}
		return
	case stream.Begin:
	default:
		j.st.fail(fmt.Errorf("internal error: a %v element at an in-order join input", e.Kind))
		return
	}
	vals := e.Rec.Vals
	if fs := j.filters[i]; len(fs) > 0 {
		j.vals[1-i] = nil
		j.vals[i] = vals
		if !j.checks(fs) {
			return
		}
	}
	var h uint64
	h, j.keyVals = j.hashCols(vals, s.cols[i])
	kn := s.keyNode(h, j.keyVals)
	slot := side.add(e.Rec, kn, &s.knHead[kn][i])
	s.knLen[kn]++
	in.nLive++
	// Bind the other input's open tuples of the same key.
	o := 1 - i
	other := &s.side[o]
	j.vals[i] = vals
	for t := s.knHead[kn][o]; t >= 0; t = other.next[t] {
		if !j.st.poll() {
			return
		}
		j.vals[o] = other.vals[t]
		if len(s.checks) > 0 && !j.checks(s.checks) {
			if j.st.err != nil {
				return
			}
			continue
		}
		rec := j.record(j.vals, e.T)
		if rec == nil {
			return
		}
		j.out.Push(stream.Elem{Kind: stream.Begin, T: e.T, Rec: rec})
		p := s.newPair(rec)
		s.pairNext[p][i], side.pairs[slot] = side.pairs[slot], p
		s.pairNext[p][o], other.pairs[t] = other.pairs[t], p
		j.live++
	}
}

// sweepEnd ends the tuple in slot of input i at t: its results still
// begun end at t (at Forever, with the stream: no End), and it leaves the
// store.
func (j *Join) sweepEnd(i int, slot int32, t algebra.Time) {
	s := j.sw
	side := &s.side[i]
	for p := side.pairs[slot]; p >= 0; {
		next := s.pairNext[p][i]
		if s.pairEnd[p] {
			s.freePair(p) // ended by its other tuple, out of that list
		} else {
			if t != algebra.Forever {
				j.out.Push(stream.Elem{Kind: stream.End, T: t, Rec: s.pairOut[p]})
			}
			s.pairEnd[p] = true
			j.live--
		}
		p = next
	}
	kn := side.kn[slot]
	side.remove(slot, &s.knHead[kn][i])
	if s.knLen[kn]--; s.knLen[kn] == 0 {
		s.idle(kn)
	}
	j.in[i].nLive--
}

// sweepFinish ends, at the end of the stream, every tuple still open: their
// results stay valid until Forever.
func (j *Join) sweepFinish() {
	for i := range j.sw.side {
		side := &j.sw.side[i]
		for side.open.len() > 0 {
			rec, slot, _ := side.open.any()
			side.open.del(rec)
			j.sweepEnd(i, slot, algebra.Forever)
		}
	}
}

// keyNode is the node of key (hash h), made if there is none.
func (s *eqSweep) keyNode(h uint64, key []algebra.Value) int32 {
	mask := len(s.keys.slots) - 1
	if s.keys.n > 0 {
		for i := s.keys.home(h); s.keys.slots[i] != 0; i = (i + 1) & mask {
			if n := s.keys.slots[i] - 1; s.knHash[n] == h && algebra.KeysEqual(s.knKey[int(n)*s.nk:int(n+1)*s.nk], key) {
				return n
			}
		}
	}
	var n int32
	if f := len(s.knFree); f > 0 {
		n, s.knFree = s.knFree[f-1], s.knFree[:f-1]
		copy(s.knKey[int(n)*s.nk:], key)
		s.knHead[n], s.knHash[n] = [2]int32{-1, -1}, h
		s.knIsIdle[n] = false
	} else {
		n = int32(len(s.knHead))
		s.knKey = append(s.knKey, key...)
		s.knHead = append(s.knHead, [2]int32{-1, -1})
		s.knLen = append(s.knLen, 0)
		s.knHash = append(s.knHash, h)
		s.knIsIdle = append(s.knIsIdle, false)
	}
	s.keys.insert(n, s.knHash)
	return n
}

// idle notes that key node n has no open tuple left.
func (s *eqSweep) idle(n int32) {
	if !s.knIsIdle[n] {
		s.knIsIdle[n] = true
		s.knIdle = append(s.knIdle, n)
	}
	if live := len(s.knHead) - len(s.knFree) - len(s.knIdle); len(s.knIdle) > max(idleMin, live) {
		s.dropIdle()
	}
}

// idleMin is how many idle key nodes the sweep keeps at least.
const idleMin = 1024

// dropIdle drops the idle key nodes that are still without open tuples.
func (s *eqSweep) dropIdle() {
	for _, n := range s.knIdle {
		s.knIsIdle[n] = false
		if s.knLen[n] == 0 {
			s.dropKeyNode(n)
		}
	}
	clear(s.knIdle)
	s.knIdle = s.knIdle[:0]
}

// dropKeyNode frees key node n, which has no open tuple left.
func (s *eqSweep) dropKeyNode(n int32) {
	s.keys.remove(n, s.knHash)
	clear(s.knKey[int(n)*s.nk : int(n+1)*s.nk])
	s.knFree = append(s.knFree, n)
}

// keyTable finds key nodes by their hashes: hashMap's scheme (open
// addressing, home slot by the hash's top bits, linear probing, deletion
// by backward shift; load at most 1/2, so a probe ends at an empty slot),
// but a slot is only a node's number plus one (0: empty) — the hash is the
// node's own (knHash, passed in) — so the table is 4 bytes a slot, not
// 16, and stays in cache. Nodes of equal hashes each have a slot; a lookup
// compares the keys of those in its run.
type keyTable struct {
	slots []int32
	n     int
	shift uint // 64 − log2(len(slots))
}

func (t *keyTable) home(h uint64) int { return int(h >> t.shift) }

// insert gives node n (hash hash[n]) a slot.
func (t *keyTable) insert(n int32, hash []uint64) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		size := max(16, 2*len(old))
		t.slots = make([]int32, size)
		t.shift = uint(64 - bits.Len(uint(size-1)))
		t.n = 0
		for _, x := range old {
			if x != 0 {
				t.insert(x-1, hash)
			}
		}
	}
	mask := len(t.slots) - 1
	i := t.home(hash[n])
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = n + 1
	t.n++
}

// remove takes node n (hash hash[n]) out: its slot is emptied and the
// entries after it that probed past it shift back, as hashMap.remove.
func (t *keyTable) remove(n int32, hash []uint64) {
	mask := len(t.slots) - 1
	i := t.home(hash[n])
	for t.slots[i] != n+1 {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		if h := t.home(hash[t.slots[j]-1]); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
}

// add files a tuple of key node kn at the head of its chain (*head) and
// returns its slot.
func (sd *sweepSide) add(rec *stream.Rec, kn int32, head *int32) int32 {
	var slot int32
	if n := len(sd.free); n > 0 {
		slot, sd.free = sd.free[n-1], sd.free[:n-1]
		sd.vals[slot], sd.kn[slot], sd.pairs[slot] = rec.Vals, kn, -1
	} else {
		slot = int32(len(sd.vals))
		sd.vals = append(sd.vals, rec.Vals)
		sd.kn = append(sd.kn, kn)
		sd.prev = append(sd.prev, -1)
		sd.next = append(sd.next, -1)
		sd.pairs = append(sd.pairs, -1)
	}
	sd.open.put(rec, slot)
	sd.prev[slot], sd.next[slot] = -1, *head
	if *head >= 0 {
		sd.prev[*head] = slot
	}
	*head = slot
	return slot
}

// remove takes the tuple in slot out of its chain (head *head) and frees
// the slot.
func (sd *sweepSide) remove(slot int32, head *int32) {
	p, n := sd.prev[slot], sd.next[slot]
	if n >= 0 {
		sd.prev[n] = p
	}
	if p >= 0 {
		sd.next[p] = n
	} else {
		*head = n
	}
	sd.vals[slot] = nil
	sd.free = append(sd.free, slot)
}

// newPair takes a pair slot for result rec.
func (s *eqSweep) newPair(rec *stream.Rec) int32 {
	if n := len(s.pairFree); n > 0 {
		p := s.pairFree[n-1]
		s.pairFree = s.pairFree[:n-1]
		s.pairOut[p], s.pairEnd[p] = rec, false
		return p
	}
	s.pairOut = append(s.pairOut, rec)
	s.pairNext = append(s.pairNext, [2]int32{-1, -1})
	s.pairEnd = append(s.pairEnd, false)
	return int32(len(s.pairOut) - 1)
}

func (s *eqSweep) freePair(p int32) {
	s.pairOut[p] = nil
	s.pairFree = append(s.pairFree, p)
}
