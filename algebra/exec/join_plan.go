package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// index is a hash index on columns cols of an input's stored tuples.
type index struct {
	cols []int
	m    map[string][]*entry
}

// step binds one more variable while enumerating bindings.
type step struct {
	v      int
	index  int       // index of input v to probe, or -1 to scan its store
	keys   []expr.Fn // probe key, from variables already bound
	checks []expr.Fn // conjuncts whose variables are all bound after this step
}

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
