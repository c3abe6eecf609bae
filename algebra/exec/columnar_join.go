package exec

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// The columnar overlap equi-join: RunHistory evaluates a statement whose
// block is the join the sweep evaluates (join_sweep.go's sweepable: two
// interval inputs, equalities between their columns, conjuncts over one
// variable, when a overlap b and the default valid clause) over two
// recorded relations, coalesced and read by nothing but its result, over
// the relations' columns (columnar.go) instead of playing their tuples
// through the Join:
//
//   - Each side's conjuncts narrow selection vectors over its columns
//     (colFilter, selectBatch), and the selected tuples' join columns are
//     numbered as keys: densely over the union of both sides' code ranges
//     when it is small (denseLayout), otherwise by colGroups' hash
//     numbering, one numbering for both sides — codes are equal exactly
//     when values are, the two columns being of one type (and, for
//     entities and strings, of one dictionary).
//   - The sweep is join_sweep's, over positions in those vectors: the
//     selected tuples of both sides in order of start (the columns are in
//     order of From); a tuple x beginning at T binds the other side's
//     tuples y of its key still open — begun at or before T and ending
//     after T — and the result is valid from T = max(begins) to
//     min(ends). A tuple found ended is unlinked as it is met (it overlaps
//     nothing still to begin), so each is passed over once at most and
//     the work is the tuples plus the results. The history being whole,
//     a result's end is known as it begins: no End elements, no pairs
//     kept.
//   - Results come in order of start, in batches of colBatch: the targets
//     (each over one variable) are evaluated over the bound tuples'
//     positions, their codes numbered as groups and coalesced as the
//     Select's are (coalesceCodes), and decoded once (collect).
//
// Exactness: the results are the sweep's (TestSweepJoinAgrees holds it to
// the general path and the reference), coalesced as Coalesce does. A
// chain holds every tuple of its side and key that has begun and has not
// been found ended (one is unlinked only when met at a T' ≥ its end, and
// T only grows), so the tuples bound at T are exactly those open at T;
// of two tuples beginning at one T, the second binds the first, filed
// before it. Each pair is bound once, by its later tuple, and results
// come in order of start, as coalesceCodes needs. A tuple that begins at
// or after its end, which a valid history does not hold
// (Table.Validate), is bound by nothing. Anything else falls back to the
// row operators, decided before the run: other conjuncts over both
// variables, a target over both, targets the Select's path does not
// decode, a side fed by anything but a recorded relation, and whatever
// colCompile refuses for a Select. An arithmetic error in a side's
// conjuncts or a target abandons the path, as for a Select.
//
// Bounds: a run holds, per side, the selected tuples' rows and key
// numbers (8 bytes a tuple of the relation, reserved; rows are int32, as
// the Select's selection vectors), a slot of 16 bytes per tuple that may
// still be open (filed and not yet found ended), a head per key and side, one batch of bindings, and the
// Select's result state (columnar.go), which grows with the results. A
// memory budget (Options.Budget) is checked once per batch of colBatch
// bindings, as the Join checks it at a stride of its bindings: over it,
// the run stops with its *MemoryError (the statement is left to the row
// operators, which stop at once).

// colJoin is the join part of a columnar statement.
type colJoin struct {
	sides [2]colSide
	tvar  []int // per target, the side it reads
	// Key numbering: dense (klo, kstride, nKeys) or, when !kdense, by
	// hash; no key columns: one key.
	kdense       bool
	klo, kstride []int64
	nKeys        int
	nk           int
	st           *runState // its budget, checked per batch of results
}

// colLink is a tuple filed in its key's chain: the slot of the one filed
// before it (−1: none), its row and its end.
type colLink struct {
	next, row int32
	to        algebra.Time
}

// colSide is one input of the join: its relation and feeding tee, its
// conjuncts and its join columns (in the order of the equalities).
type colSide struct {
	colIn
	conds []colFilter
	keys  []*colVec
}

// colJoinCompile compiles s, whose block is a Join, for the columnar
// path, or returns nil when the path does not take it.
func (n *Network) colJoinCompile(s *Stmt, columns func(name string) (*algebra.Columns, []algebra.Attr)) *colStmt {
	j := s.Join
	if !s.coalescedToResult() || j.sw == nil || len(j.sw.checks) > 0 || len(j.in) != 2 {
		return nil
	}
	cj := &colJoin{nk: len(j.sw.cols[0]), st: n.st}
	var comp [2]*colCompiler
	rows := 0
	for v := range 2 {
		tee, name := n.sourceOf(j.Input(v))
		if tee == nil {
			return nil
		}
		cols, attrs := columns(name)
		if cols == nil {
			return nil
		}
		cj.sides[v].colIn = colIn{tee: tee, cols: cols, recv: j.Input(v)}
		comp[v] = &colCompiler{cols: cols, attrs: attrs, v: v}
		rows += cols.Len
	}
	for _, e := range j.spec.Conds {
		vars := expr.Vars(e)
		switch vars {
		case 0:
			return nil // not sweepable: none
		case 3:
			continue // an equality between the sides (no other: sw.checks)
		}
		v := int(vars >> 1)
		f := comp[v].filter(e)
		if f.keep == nil {
			return nil
		}
		cj.sides[v].conds = append(cj.sides[v].conds, f)
	}
	ranges := make([][2]int64, cj.nk)
	for k := range cj.nk {
		var kv [2]*colVec
		for v := range 2 {
			a := j.sw.cols[v][k]
			kv[v] = comp[v].vec(&expr.Col{Var: v, Attr: a})
			if kv[v] == nil || kv[v].eval == nil || !kv[v].ranged {
				return nil
			}
			cj.sides[v].keys = append(cj.sides[v].keys, kv[v])
		}
		switch kv[0].kind {
		case algebra.KindEntity, algebra.KindString:
			if kv[0].dict == nil || kv[0].dict != kv[1].dict {
				return nil
			}
		case algebra.KindFloat:
			return nil
		}
		ranges[k] = [2]int64{min(kv[0].lo, kv[1].lo), max(kv[0].hi, kv[1].hi)}
	}
	cj.klo, cj.kstride, cj.nKeys, cj.kdense = denseLayout(ranges, rows)
	cs := &colStmt{s: s, join: cj}
	for _, e := range j.spec.Targets {
		v := 0
		switch expr.Vars(e) {
		case 0, 1:
		case 2:
			v = 1
		default:
			return nil
		}
		tv := comp[v].vec(e)
		if tv == nil || !decodable(tv) {
			return nil
		}
		cs.targets = append(cs.targets, tv)
		cj.tvar = append(cj.tvar, v)
	}
	cs.number(rows)
	return cs
}

// keyed selects a side's tuples (marking them) and numbers their keys:
// rows are the selected tuples in order of start, kids their keys'
// numbers. false when a conjunct failed.
func (cj *colJoin) keyed(sd *colSide, mark []uint64, kg *colGroups) (rows, kids []int32, ok bool) {
	sel := make([]int32, colBatch)
	rows = make([]int32, 0, sd.cols.Len)
	kids = make([]int32, 0, sd.cols.Len)
	kouts := make([][]int64, cj.nk)
	for k := range kouts {
		kouts[k] = make([]int64, colBatch)
	}
	for lo := 0; lo < sd.cols.Len; lo += colBatch {
		hi := min(lo+colBatch, sd.cols.Len)
		var err error
		if sel, err = selectBatch(sd.conds, lo, hi, sel[:colBatch], mark); err != nil {
			return nil, nil, false
		}
		at := len(rows)
		rows = append(rows, sel...)
		kids = kids[:len(rows)]
		gs := kids[at:]
		for k, v := range sd.keys {
			if err := v.eval(sel, kouts[k][:len(sel)]); err != nil {
				return nil, nil, false
			}
		}
		switch {
		case cj.nk == 0:
			clear(gs)
		case cj.kdense:
			clear(gs)
			for k, o := range kouts {
				lo, stride := cj.klo[k], cj.kstride[k]
				for i, c := range o[:len(gs)] {
					gs[i] += int32((c - lo) * stride)
				}
			}
		default:
			kg.hashGroups(kouts, gs)
		}
	}
	return rows, kids, true
}

// runJoin is run for a join: marks are the sides'.
func (cs *colStmt) runJoin(marks [][]uint64) bool {
	cj := cs.join
	var rows, kids [2][]int32
	var kg colGroups
	for v := range 2 {
		var ok bool
		if rows[v], kids[v], ok = cj.keyed(&cj.sides[v], marks[v], &kg); !ok {
			return false
		}
	}
	nKeys := 1
	switch {
	case cj.nk == 0:
	case cj.kdense:
		nKeys = cj.nKeys
	default:
		nKeys = len(kg.next)
	}
	// head[v][k]: the slot of the last tuple of side v and key k filed,
	// −1 when none. A slot holds a tuple filed — the slot of the one of
	// its key and side filed before it, its row and its end, in one entry
	// — from its arrival until it is found ended, when the slot is freed
	// for the next arrival: the slots in use are the tuples that may still
	// be open, few and reused, so that a chain's walk stays in cache
	// (join_sweep's slot-indexed open tuples). A chain holds the side's
	// tuples of its key that may still be open.
	var head [2][]int32
	for v := range 2 {
		head[v] = make([]int32, nKeys)
		for k := range head[v] {
			head[v][k] = -1
		}
	}
	var slots []colLink
	var free []int32
	from := [2][]algebra.Time{cj.sides[0].cols.From, cj.sides[1].cols.From}
	to := [2][]algebra.Time{cj.sides[0].cols.To, cj.sides[1].cols.To}

	// A batch of results: the tuples bound (by side) and the valid time.
	var bound [2][]int32
	bound[0], bound[1] = make([]int32, colBatch), make([]int32, colBatch)
	bFrom, bTo := make([]algebra.Time, colBatch), make([]algebra.Time, colBatch)
	iota := make([]int32, colBatch)
	for i := range iota {
		iota[i] = int32(i)
	}
	outs := make([][]int64, len(cs.targets))
	for i := range outs {
		outs[i] = make([]int64, colBatch)
	}
	gids := make([]int32, colBatch)
	var g colGroups
	if cs.dense {
		g.open = make([]colOpen, cs.nDense)
	}
	var spans []colSpan
	nb, sized := 0, false
	var at [2]int // the next position of each side
	flush := func() bool {
		// The results held grow with the bindings, which may be many
		// more than the tuples: the budget is checked per batch, as the
		// Join polls it per binding (at a stride).
		if cj.st.check != nil {
			cj.st.check()
		}
		if cj.st.err != nil {
			return false
		}
		for t, tv := range cs.targets {
			if err := tv.eval(bound[cj.tvar[t]][:nb], outs[t][:nb]); err != nil {
				return false
			}
		}
		gs := gids[:nb]
		if cs.dense {
			cs.denseGroups(outs, gs)
		} else {
			g.hashGroups(outs, gs)
		}
		spans = coalesceCodes(&g, spans, gs, iota[:nb], bFrom, bTo, false)
		nb = 0
		if !sized {
			// Room for the results at the first batch's rate, and some.
			sized = true
			done, all := at[0]+at[1], len(rows[0])+len(rows[1])
			spans = slices.Grow(spans, len(spans)*(all/max(done, 1)+1)*9/8)
		}
		return true
	}

	for at[0] < len(rows[0]) || at[1] < len(rows[1]) {
		// The next tuple to begin, of either side (ties: side 0 first,
		// which binds nothing the other order would not).
		x := 0
		if at[0] == len(rows[0]) || at[1] < len(rows[1]) && from[1][rows[1][at[1]]] < from[0][rows[0][at[0]]] {
			x = 1
		}
		p := int32(at[x])
		at[x]++
		r := rows[x][p]
		t, end := from[x][r], to[x][r]
		if end <= t {
			continue // empty: overlaps nothing
		}
		k := kids[x][p]
		o := 1 - x
		prev := int32(-1)
		for q := head[o][k]; q >= 0; {
			y := &slots[q]
			if y.to <= t {
				// Ended: unlinked and freed, prev stays.
				if prev < 0 {
					head[o][k] = y.next
				} else {
					slots[prev].next = y.next
				}
				free = append(free, q)
				q = y.next
				continue
			}
			prev, q = q, y.next
			bound[x][nb], bound[o][nb] = r, y.row
			bFrom[nb], bTo[nb] = t, min(end, y.to)
			if nb++; nb == colBatch && !flush() {
				return false
			}
		}
		var q int32
		if n := len(free); n > 0 {
			q, free = free[n-1], free[:n-1]
		} else {
			q = int32(len(slots))
			slots = append(slots, colLink{})
		}
		slots[q], head[x][k] = colLink{next: head[x][k], row: r, to: end}, q
	}
	if nb > 0 && !flush() {
		return false
	}
	closeSpans(&g, spans, false)
	return cs.collect(&g, spans)
}
