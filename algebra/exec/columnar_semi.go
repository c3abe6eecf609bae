package exec

import (
	"cmp"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// The columnar semi-join over a stream (RunSemi): what a whole command
// over a history directory runs when its program is one statement that
// joins two recorded relations, one of whose variables is existential
// (JoinSpec.Exists; join_semi.go) and summarized by its earliest or latest
// begin (timeDir) — ResumedbyP1's `S precede end of W` — with where
// conjuncts over one variable and equalities between the two (the join
// key), and nothing else. It reads each relation whole, in chunks
// (ChunkSource), encoded in columns with one history's dictionaries
// (chunkEncoder), the existential relation first:
//
//   - The existential side's conjuncts narrow selection vectors over each
//     chunk (selectBatch), its key columns are numbered (colGroups, by
//     codes, stable across chunks and equal across the sides: one
//     dictionary per entity type), and each key keeps one witness: the
//     selected tuple of least begin (or greatest, as timeDir says), its
//     begin and end.
//   - Then one pass over the other side, in order of start: a selected
//     tuple whose key has a witness is tested once, the when clause
//     evaluated over its span and the witness's (evalP over exact spans,
//     as the Join's decide does once every end is known); its valid time
//     (evalT, stop) and targets make a result, coalesced and handed to the
//     collector as the σ/π chunk path does (chunkStmt), in order of start.
//     A result's start is at or after its tuple's when the valid clause
//     reads only that variable (atOrAfterBegin), so results starting
//     before the last tuple read are final and go out at each chunk
//     (sorted by start); otherwise they go out at the end.
//
// Exactness: a binding of the non-existential variable has a result
// exactly when some tuple of the existential relation satisfies the where
// conjuncts and the when clause with it (join_semi.go: the result does not
// depend on which). The where conjuncts read the existential variable only
// alone (its selection) or in equalities with the other (its key): the
// tuples that satisfy them with a binding are the selected tuples of its
// key. By timeDir the when clause holds with some of them exactly when it
// holds with the dominant one (an earlier begin satisfies it whenever a
// later one does, or the reverse, for every binding); ties in begin are
// one span to the clause (an event's end is its begin's next chronon, an
// interval is read only as begin of it). The history is whole: every end
// is known (an open tuple ends at Forever, as the row network's do when
// its stream ends), so the clause is true or false, never unknown. The
// results are then those of a σ/π statement over the other relation, and
// coalesce as chunkStmt coalesces those (subject.TestSemiChunksMatchRows holds
// it to the row operators, element for element, over random histories
// and databases).
//
// Bounds: a run holds one witness (17 bytes) and one key (8 bytes per key
// column) per key met on either side, a chunk's columns, the results not
// yet final — those starting at or after the last start read, at most one
// per outer tuple then open or begun then, when the valid clause reads
// only the outer variable (otherwise every result, until the end) — and
// the coalescer's state (chunkStmt). The memory budget is checked once
// per chunk, as in RunChunks.

// semiJoin is a statement RunSemi runs: the join's variables by role and
// what is decided before the run.
type semiJoin struct {
	s        *Stmt
	x, o     int       // the existential variable and the other
	rels     [2]string // per variable, its relation
	keys     [2][]int  // per variable, its key attributes (in the equalities' order)
	dir      int       // timeDir's: −1 the least begin dominates, +1 the greatest, 0 any
	event    [2]bool
	streamed bool // results never start before their tuple (atOrAfterBegin)
}

// SemiRelations returns the relations RunSemi reads — the existential
// variable's first — or nil when it does not take the network (see
// RunSemi): a caller asks before it opens its source.
func (n *Network) SemiRelations(cat *algebra.Catalog) []string {
	sj := n.semiPlan(cat)
	if sj == nil {
		return nil
	}
	return []string{sj.rels[sj.x], sj.rels[sj.o]}
}

// semiPlan decides whether RunSemi takes the network, compiling its
// statement over probe tuples.
func (n *Network) semiPlan(cat *algebra.Catalog) *semiJoin {
	if n.opts.Gaps != nil || n.opts.collide || n.opts.NoColumnar || len(n.Alphas) > 0 ||
		len(n.Clocks) > 0 || len(n.Sources) != 2 || len(n.Stmts) != 1 || cat == nil {
		return nil
	}
	s := n.Stmts[0]
	j := s.Join
	if j == nil || !s.coalescedToResult() || !j.semi || len(j.in) != 2 || len(j.exVars) != 1 ||
		len(j.keyVars) != 0 || len(j.spec.Times) > 0 || len(j.spec.TimeConds) > 0 || j.spec.Valid == nil {
		return nil
	}
	for _, l := range j.spec.MaxLate {
		if l != 0 {
			return nil
		}
	}
	sj := &semiJoin{s: s, x: j.exVars[0], o: j.owner}
	var rels [2]*algebra.Relation
	for v := range 2 {
		tee, name := n.sourceOf(j.Input(v))
		if tee == nil {
			return nil
		}
		sj.rels[v], sj.event[v] = name, j.spec.Events[v]
		if rels[v] = cat.Lookup(name); rels[v] == nil {
			return nil
		}
	}
	if sj.rels[0] == sj.rels[1] {
		return nil // a self-join: one relation read twice
	}
	dir, ok := timeDir(j.spec.When, sj.x, sj.event[sj.x])
	if !ok || !noArithIn(j.spec.Conds) || !noArithIn(j.spec.Targets) {
		return nil
	}
	sj.dir = dir
	for _, c := range j.spec.Conds {
		switch vars := expr.Vars(c); vars {
		case 1, 2:
		case 3:
			e, ok := splitEq(c)
			if !ok {
				return nil // another conjunct over both
			}
			a, b := e.a, e.b
			if a.Var != 0 {
				a, b = b, a
			}
			sj.keys[0] = append(sj.keys[0], a.Attr)
			sj.keys[1] = append(sj.keys[1], b.Attr)
		default:
			return nil // a constant conjunct
		}
	}
	v := j.spec.Valid
	sj.streamed = v.At != nil && atOrAfterBegin(v.At, sj.o) ||
		v.At == nil && atOrAfterBegin(v.From, sj.o)
	// The conjuncts, keys and targets must compile over columns: tried
	// over one probe tuple of each relation.
	h := chunkHistory(rels[0], rels[1])
	for v := range 2 {
		probe := probeRow(rels[v])
		if probe == nil {
			return nil
		}
		h.Tables[rels[v].Name].Add(probe, 0, 1)
	}
	var sc [2]*semiSide
	for v := range 2 {
		if sc[v] = sj.compile(v, h.Columns(sj.rels[v]), rels[v].Attrs); sc[v] == nil {
			return nil
		}
	}
	for k := range sc[0].keys {
		// Codes equal exactly when values are: one dictionary for both.
		if a, b := sc[0].keys[k], sc[1].keys[k]; a.kind != b.kind || a.dict != b.dict {
			return nil
		}
	}
	return sj
}

// atOrAfterBegin reports whether e, a temporal expression over variable v
// only (no constants), begins at or after v does: begin of, end of and
// after of such an expression, the overlap of two and their extension all
// do.
func atOrAfterBegin(e expr.TExpr, v int) bool {
	switch e := e.(type) {
	case *expr.TVar:
		return e.Var == v
	case *expr.TBeginEnd:
		return atOrAfterBegin(e.X, v)
	case *expr.TAfter:
		return atOrAfterBegin(e.X, v)
	case *expr.TBinary:
		return atOrAfterBegin(e.X, v) && atOrAfterBegin(e.Y, v)
	}
	return false
}

// semiSide is a side of the join compiled over a chunk's columns.
type semiSide struct {
	cols    *algebra.Columns
	conds   []colFilter
	keys    []*colVec
	targets []*colVec // the other side's only
}

// compile compiles variable v's conjuncts, keys and (for the other
// variable) targets over cols, or returns nil.
func (sj *semiJoin) compile(v int, cols *algebra.Columns, attrs []algebra.Attr) *semiSide {
	if cols == nil {
		return nil
	}
	spec := &sj.s.Join.spec
	c := &colCompiler{cols: cols, attrs: attrs, v: v}
	sc := &semiSide{cols: cols}
	for _, e := range spec.Conds {
		if expr.Vars(e) != 1<<uint(v) {
			continue
		}
		f := c.filter(e)
		if f.keep == nil {
			return nil
		}
		sc.conds = append(sc.conds, f)
	}
	for _, a := range sj.keys[v] {
		kv := c.vec(&expr.Col{Var: v, Attr: a})
		if kv == nil || kv.eval == nil || kv.kind == algebra.KindFloat {
			return nil
		}
		sc.keys = append(sc.keys, kv)
	}
	if v == sj.o {
		for _, e := range spec.Targets {
			if expr.Vars(e)&^(1<<uint(v)) != 0 {
				return nil
			}
			tv := c.vec(e)
			if tv == nil || !decodable(tv) {
				return nil
			}
			sc.targets = append(sc.targets, tv)
		}
	}
	return sc
}

// semiResult is a result not yet final: its targets' codes (at codes in
// the run's buffer) and its valid time.
type semiResult struct {
	at       int
	from, to algebra.Time
}

// RunSemi runs the network over src's chunks of the relations
// SemiRelations returned (rels), as RunSource would over their elements:
// the statement's result elements are pushed to its collector (and its
// OnElem) as they settle, in time order. Tuples a side's conjuncts reject
// count as Skipped.
func (n *Network) RunSemi(cat *algebra.Catalog, rels []string, src ChunkSource) error {
	sj := n.semiPlan(cat)
	if sj == nil || len(rels) != 2 || rels[0] != sj.rels[sj.x] || rels[1] != sj.rels[sj.o] {
		return chunkError("exec: RunSemi: the network is not a semi-join it runs")
	}
	s := sj.s
	s.Columnar = true
	var rs [2]*algebra.Relation
	for v := range 2 {
		rs[v] = cat.Lookup(sj.rels[v])
	}
	h := chunkHistory(rs[0], rs[1])
	nk := len(sj.keys[0])
	var kg colGroups // key numbers, both sides
	kouts := make([][]int64, nk)
	for k := range kouts {
		kouts[k] = make([]int64, colBatch)
	}
	if nk == 0 {
		kouts = [][]int64{make([]int64, colBatch)} // one key: all zero
	}
	gs := make([]int32, colBatch)
	sel := make([]int32, colBatch)
	var mark []uint64
	var buf []algebra.Tuple

	// keysOf numbers the keys of sel's tuples into gs.
	keysOf := func(sc *semiSide, sel []int32) ([]int32, error) {
		for k, kv := range sc.keys {
			if err := kv.eval(sel, kouts[k][:len(sel)]); err != nil {
				return nil, err
			}
		}
		outs := make([][]int64, len(kouts))
		for k := range kouts {
			outs[k] = kouts[k][:len(sel)]
		}
		g := gs[:len(sel)]
		kg.hashGroups(outs, g)
		return g, nil
	}
	// each reads relation v's chunks, calling f with each chunk's
	// compiled side and selection batches.
	each := func(v int, f func(sc *semiSide, sel []int32) error) error {
		enc := &chunkEncoder{h: h, rel: rs[v], memo: map[*algebra.Value]int32{}}
		for {
			var err error
			if buf, err = src.Chunk(sj.rels[v], buf[:0]); err != nil {
				return err
			}
			if len(buf) == 0 {
				return nil
			}
			cols := enc.encode(buf)
			sc := sj.compile(v, cols, rs[v].Attrs)
			if sc == nil {
				return errNotEncoded
			}
			mark = mark[:0]
			for range (len(buf) + 63) / 64 {
				mark = append(mark, 0)
			}
			for lo := 0; lo < cols.Len; lo += colBatch {
				hi := min(lo+colBatch, cols.Len)
				got, err := selectBatch(sc.conds, lo, hi, sel[:colBatch], mark)
				if err != nil {
					return err // (no arithmetic: not met)
				}
				if err := f(sc, got); err != nil {
					return err
				}
			}
			for i := range buf {
				if mark[i>>6]&(1<<(i&63)) == 0 {
					n.Skipped++
				}
			}
			if n.st.check != nil {
				n.st.check()
			}
			if err := n.Err(); err != nil {
				return err
			}
		}
	}

	// The witnesses: per key number, the dominant selected tuple's span.
	var wb, we []algebra.Time
	var has []bool
	err := each(sj.x, func(sc *semiSide, sel []int32) error {
		g, err := keysOf(sc, sel)
		if err != nil {
			return err
		}
		for i, r := range sel {
			k := g[i]
			for int(k) >= len(has) {
				wb, we, has = append(wb, 0), append(we, 0), append(has, false)
			}
			b := sc.cols.From[r]
			if has[k] && (sj.dir == 0 || sj.dir < 0 && wb[k] <= b || sj.dir > 0 && wb[k] >= b) {
				continue
			}
			wb[k], we[k], has[k] = b, sc.cols.To[r], true
		}
		return nil
	})
	if err != nil {
		return err
	}

	// The pass over the other side.
	spec := &s.Join.spec
	valid := spec.Valid
	vs := make([]varSpan, 2)
	st := &chunkStmt{s: s}
	var targets []*colVec
	var codes, spare []int64 // the pending results' targets' codes (and a spare buffer)
	var pend []semiResult
	nt := len(spec.Targets)
	tbuf := make([][]int64, nt)
	for t := range tbuf {
		tbuf[t] = make([]int64, colBatch)
	}
	evt := valid.At != nil
	// release hands the pending results starting before t to the
	// coalescer, in order of start, and keeps the others.
	release := func(t algebra.Time, all bool) {
		slices.SortStableFunc(pend, func(a, b semiResult) int { return cmp.Compare(a.from, b.from) })
		k := len(pend)
		if !all {
			k, _ = slices.BinarySearchFunc(pend, t, func(r semiResult, t algebra.Time) int { return cmp.Compare(r.from, t) })
		}
		for lo := 0; lo < k; lo += colBatch {
			hi := min(lo+colBatch, k)
			outs := make([][]int64, nt)
			for ti := range outs {
				outs[ti] = tbuf[ti][:hi-lo]
				for i := lo; i < hi; i++ {
					outs[ti][i-lo] = codes[pend[i].at+ti]
				}
			}
			g := st.gids[:hi-lo]
			st.g.hashGroups(outs, g)
			for i := lo; i < hi; i++ {
				st.ensure(g[i-lo], targets, outs, i-lo)
				st.add(g[i-lo], pend[i].from, pend[i].to, evt)
			}
		}
		// The rest, their codes copied out in their new order.
		rest := pend[k:]
		spare = spare[:0]
		for i := range rest {
			at := rest[i].at
			rest[i].at = len(spare)
			spare = append(spare, codes[at:at+nt]...)
		}
		codes, spare = spare, codes
		pend = append(pend[:0], rest...)
		n.peak = max(n.peak, len(st.vals)+len(pend))
		st.compact(nt)
	}
	st.gids = make([]int32, colBatch)
	err = each(sj.o, func(sc *semiSide, sel []int32) error {
		targets = sc.targets
		if len(sel) == 0 {
			return nil
		}
		lastFrom := sc.cols.From[sel[len(sel)-1]]
		g, err := keysOf(sc, sel)
		if err != nil {
			return err
		}
		// Bindings with a result, compacted in sel.
		kept := sel[:0]
		var froms, tos []algebra.Time
		for i, r := range sel {
			k := g[i]
			if int(k) >= len(has) || !has[k] {
				continue
			}
			vs[sj.x] = varSpan{b: point(wb[k]), e: point(we[k])}
			vs[sj.o] = varSpan{b: point(sc.cols.From[r]), e: point(sc.cols.To[r])}
			if evalP(spec.When, vs) != yes {
				continue
			}
			var from, to algebra.Time
			if evt {
				at := evalT(valid.At, vs)
				if at.empty != no {
					continue
				}
				from = at.b.lo
			} else {
				f, t := evalT(valid.From, vs), evalT(valid.To, vs)
				if f.empty != no || t.empty != no {
					continue
				}
				from, to = f.b.lo, stop(valid.To, t).lo
				if to <= from {
					continue
				}
			}
			kept = append(kept, r)
			froms, tos = append(froms, from), append(tos, to)
		}
		for t, tv := range sc.targets {
			if err := tv.eval(kept, tbuf[t][:len(kept)]); err != nil {
				return err
			}
		}
		for i := range kept {
			at := len(codes)
			for t := range nt {
				codes = append(codes, tbuf[t][i])
			}
			pend = append(pend, semiResult{at: at, from: froms[i], to: tos[i]})
		}
		if sj.streamed {
			// Every later tuple begins at or after lastFrom, and so do
			// its results: those before it are final.
			release(lastFrom, false)
		}
		return nil
	})
	if err != nil {
		return err
	}
	release(algebra.Forever, true)
	st.finish()
	return n.Err()
}
