package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// index is a hash index on columns cols of an input's stored tuples, by
// the algebra.HashTuple of their values there: a list may hold entries
// whose keys only collide, so a probe compares keys (keyMatch). Emptied
// lists are kept for reuse (free), so steady state allocates none.
type index struct {
	cols []int
	m    hashMap[[]*entry]
	free [][]*entry
}

// add stores e under hash h.
func (ix *index) add(h uint64, e *entry) {
	list := ix.m.ref(h)
	if *list == nil {
		if n := len(ix.free); n > 0 {
			*list, ix.free = ix.free[n-1], ix.free[:n-1]
		}
	}
	*list = append(*list, e)
}

// remove takes e out of the list of hash h.
func (ix *index) remove(h uint64, e *entry) {
	list := ix.m.get(h)
	for i, x := range list {
		if x == e {
			last := len(list) - 1
			list[i] = list[last]
			list[last] = nil
			list = list[:last]
			break
		}
	}
	if len(list) > 0 {
		ix.m.put(h, list)
		return
	}
	ix.m.del(h)
	if cap(list) <= maxFreeList && len(ix.free) < maxFreeLists {
		ix.free = append(ix.free, list)
	}
}

// Bounds on the lists an index keeps for reuse: at most maxFreeLists,
// each of at most maxFreeList entries (a longer one is left to the
// collector).
const (
	maxFreeList  = 64
	maxFreeLists = 4096
)

// hashCols is the hash of vals at cols (the run's hash of those values,
// gathered in j.keyVals, which it returns).
func (j *Join) hashCols(vals []algebra.Value, cols []int) (uint64, []algebra.Value) {
	buf := j.keyVals[:0]
	for _, c := range cols {
		buf = append(buf, vals[c])
	}
	return j.st.hash(buf), buf
}

// keyMatch reports whether vals at cols have the keys of key.
func keyMatch(vals []algebra.Value, cols []int, key []algebra.Value) bool {
	for i, c := range cols {
		if !algebra.KeysEqual(vals[c:c+1], key[i:i+1]) {
			return false
		}
	}
	return true
}

// step binds one more variable while enumerating bindings.
type step struct {
	v      int
	index  int             // index of input v to probe, or -1 to scan its store
	keys   []expr.Fn       // probe key, from variables already bound
	probe  []algebra.Value // the probe key's values (scratch)
	checks []expr.Fn       // conjuncts whose variables are all bound after this step
	// exTail: this step and every later one bind existential variables.
	exTail bool
}

// compilePlans decides, for a tuple arriving at each input, the order in
// which the other inputs are bound, which index each probes and where every
// where conjunct is checked.
func (j *Join) compilePlans(eqs []eq, others []expr.Expr) {
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
				// Existential variables last, among equally connected
				// ones: a settled group then cuts enumeration short.
				cnt *= 2
				if !j.isExist(v) {
					cnt++
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
		for s := len(plan) - 1; s > 0 && j.isExist(plan[s].v); s-- {
			plan[s].exTail = true
		}
		j.plans[start] = plan
	}
}

// eq is a where conjunct a = b between columns of two variables, of one
// type that is not float: it is decided by the values' keys
// (algebra.KeysEqual), so a hash index can probe it.
type eq struct {
	a, b *expr.Col
}

// splitConds sorts the where conjuncts: equalities between two variables
// (eqs), conjuncts over one variable (compiled into j.filters, checked as
// a tuple arrives) and the others.
func (j *Join) splitConds() (eqs []eq, others []expr.Expr) {
	j.filters = make([][]expr.Fn, j.k)
	for _, c := range j.spec.Conds {
		vars := expr.Vars(c)
		if e, ok := splitEq(c); ok {
			eqs = append(eqs, e)
			continue
		}
		if vars != 0 && vars&(vars-1) == 0 { // exactly one variable
			v := trailingZeros(vars)
			j.filters[v] = append(j.filters[v], expr.Compile(c))
			continue
		}
		others = append(others, c)
	}
	return eqs, others
}

// splitEq returns c as an eq, if it is one.
func splitEq(c expr.Expr) (eq, bool) {
	if b, ok := c.(*expr.Binary); ok && b.Op == expr.OpEq {
		ca, oka := b.X.(*expr.Col)
		cb, okb := b.Y.(*expr.Col)
		if oka && okb && ca.Var != cb.Var && algebra.Identical(ca.T, cb.T) && ca.T.Kind != algebra.KindFloat {
			return eq{ca, cb}, true
		}
	}
	return eq{}, false
}

// isExist reports whether variable v is existential.
func (j *Join) isExist(v int) bool { return j.semi && j.spec.Exists[v] }

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
	in.idx = append(in.idx, &index{cols: cols})
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
