package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// The columnar path over a stream (RunChunks): what a whole command over
// a history directory runs when every statement of its program is σ, π
// and coalescing over one relation (colCompile takes it). The relation is
// read whole — each tuple with its start and end — a chunk at a time in
// order of start (ChunkSource); each chunk is encoded in columns with the
// dictionaries of one history kept for the run (algebra.History.Columns:
// codes compare across chunks), the statements' conjuncts and targets are
// compiled over it (columnar_expr.go) and its selected tuples coalesce
// into results by group, as in columnar.go, but streamed: each result's
// elements go to the statement's collector as soon as they are final, so
// a printer shows answers as they settle.
//
// Exactness (the elements are the row operators', element for element):
// the tuples come in order of start, so when a tuple starting at f is
// read no tuple still to come starts before f.
//   - A group's result begins at the start of the first tuple that does
//     not overlap or meet its previous result: its Begin (or an event's
//     Event, one per group and chronon) is final when that tuple is read.
//   - A result ending at t is final once a tuple starting after t is read
//     (one starting at t meets it and extends it), or at the end of the
//     input; a result ending at Forever never ends.
//   - At one time the row network delivers Ends before Begins and Events
//     (stream order): the Begins and Events at f wait until every tuple
//     starting at f is read, then go after the Ends at or before f and
//     before those after f.
//
// Pending ends are kept in a heap keyed by the end a result had when it
// was pushed; a result extended since is pushed again at its new end when
// the old one comes up (lazily: extending touches only the group's
// entry). What a run holds is a chunk's columns, per group its values and
// open result, and the results begun at the current time; groups without
// an open result are forgotten now and then (compact), so that what has
// been delivered is not kept. PeakHeld reports the most groups held.
//
// It does not run (RunChunks reports false, having read nothing) for a
// program with any other statement, statements over more than one
// relation, a cut for gaps, clocks, or arithmetic in a where clause or
// target (an arithmetic error must be the row operators', met in their
// order, and results already delivered cannot be taken back).

// ChunkSource offers a relation's tuples whole, in order of their starts,
// a chunk at a time (store/history.Source does).
type ChunkSource interface {
	// Chunk appends to buf the relation's next tuples — values, start
	// and end (Forever while open) — in order of start, and returns it;
	// buf unchanged at the end of the relation.
	Chunk(rel string, buf []algebra.Tuple) ([]algebra.Tuple, error)
}

// ChunkRelation returns the relation RunChunks would read, or "" when it
// does not take the network (see RunChunks): a caller asks before it opens
// its source.
func (n *Network) ChunkRelation(cat *algebra.Catalog) string {
	if n.opts.Gaps != nil || n.opts.collide || n.opts.NoColumnar || len(n.Alphas) > 0 ||
		len(n.Clocks) > 0 || len(n.Sources) != 1 || len(n.Stmts) == 0 || cat == nil {
		return ""
	}
	var name string
	for nm := range n.Sources {
		name = nm
	}
	rel := cat.Lookup(name)
	if rel == nil {
		return ""
	}
	// Compiled over a probe: one tuple of zero values (a dictionary
	// without names decodes nothing, so a target would not compile).
	h := chunkHistory(rel)
	probe := probeRow(rel)
	if probe == nil {
		return ""
	}
	h.Tables[rel.Name].Add(probe, 0, 1)
	for _, s := range n.Stmts {
		cs := n.colCompileAny(h, s)
		if cs == nil || !noArith(s) {
			return ""
		}
	}
	return name
}

// probeRow is one tuple of zero values of rel, to compile statements over
// (a dictionary without names decodes nothing, so a target would not
// compile); nil when rel has an enum without members.
func probeRow(rel *algebra.Relation) []algebra.Value {
	probe := make([]algebra.Value, len(rel.Attrs))
	for i, a := range rel.Attrs {
		switch a.Type.Kind {
		case algebra.KindEntity:
			probe[i] = algebra.Entity("?")
		case algebra.KindString:
			probe[i] = algebra.Str("")
		case algebra.KindEnum:
			if a.Type.Enum == nil || len(a.Type.Enum.Members) == 0 {
				return nil
			}
			probe[i] = algebra.Enum(a.Type.Enum.Members[0], 0)
		default:
			probe[i] = algebra.Value{K: a.Type.Kind}
		}
	}
	return probe
}

// chunkHistory is a history holding only rels' tables, whose rows
// RunChunks (and RunSemi) replace by each chunk (its columns'
// dictionaries kept across them and shared by the tables: codes compare
// across relations).
func chunkHistory(rels ...*algebra.Relation) *algebra.History {
	h := algebra.NewHistory(algebra.NewCatalog(""))
	for _, rel := range rels {
		h.Tables[rel.Name] = &algebra.Table{Rel: rel}
	}
	return h
}

// noArith reports whether s's where conjuncts and targets do no
// arithmetic (which can fail).
func noArith(s *Stmt) bool {
	return noArithIn(s.Select.spec.Conds) && noArithIn(s.Select.spec.Targets)
}

// noArithIn reports whether es do no arithmetic (which can fail).
func noArithIn(es []expr.Expr) bool {
	ok := true
	check := func(e expr.Expr) {
		expr.Walk(e, func(x expr.Expr) {
			switch x := x.(type) {
			case *expr.Binary:
				ok = ok && (x.Op < expr.OpAdd || x.Op > expr.OpNeg)
			case *expr.Unary:
				ok = ok && x.Op != expr.OpNeg
			}
		})
	}
	for _, e := range es {
		check(e)
	}
	return ok
}

// RunChunks runs the network over src's chunks of relation rel (what
// ChunkRelation returned), as RunSource would over its elements: each
// statement's result elements are pushed to its collector (and its
// OnElem) as they settle, in time order. Tuples no statement selects
// count as Skipped.
func (n *Network) RunChunks(cat *algebra.Catalog, rel string, src ChunkSource) error {
	r := cat.Lookup(rel)
	enc := &chunkEncoder{h: chunkHistory(r), rel: r, memo: map[*algebra.Value]int32{}}
	sts := make([]*chunkStmt, len(n.Stmts))
	for i, s := range n.Stmts {
		sts[i] = &chunkStmt{s: s}
		s.Columnar = true
	}
	var buf []algebra.Tuple
	var mark []uint64
	for {
		var err error
		if buf, err = src.Chunk(rel, buf[:0]); err != nil {
			return err
		}
		if len(buf) == 0 {
			break
		}
		cols := enc.encode(buf)
		mark = mark[:0]
		for range (len(buf) + 63) / 64 {
			mark = append(mark, 0)
		}
		for _, st := range sts {
			var cs *colStmt
			if cols != nil {
				cs = n.colCompileOver(st.s, func(string) (*algebra.Columns, []algebra.Attr) { return cols, r.Attrs })
			}
			if cs == nil {
				// Only a table that cannot be encoded (a value of
				// another kind than its attribute's): not from a
				// checked history.
				return errNotEncoded
			}
			if err := st.chunk(cs, mark); err != nil {
				return err
			}
			n.peak = max(n.peak, len(st.vals))
			st.compact(len(cs.targets))
		}
		for i := range buf {
			if mark[i>>6]&(1<<(i&63)) == 0 {
				n.Skipped++
			}
		}
		if n.st.check != nil {
			n.st.check() // the heap a watchdog reports (no operator holds tuples)
		}
		if err := n.Err(); err != nil {
			return err
		}
	}
	for _, st := range sts {
		st.finish()
	}
	return n.Err()
}

// chunkEncoder encodes chunks in columns with one history's dictionaries
// (algebra.History.Columns), each vector of values once: a history's
// loader hands rows alike one shared slice of values (store/history's
// vectors), so the codes of a slice, found by the address of its first
// value, are kept (memo) and copied for the rows that share it; only the
// new slices are encoded, as a table of their own. It keeps at most
// memoMax slices (then forgets them all) and stops keeping any when fewer
// than half of the first memoProbe rows share one (rows that seldom
// repeat: each would be encoded once anyway).
type chunkEncoder struct {
	h     *algebra.History
	rel   *algebra.Relation
	memo  map[*algebra.Value]int32 // a slice's first value → its slot in codes
	codes []int64                  // per slot, its attributes' codes
	off   bool
	tries int
	hits  int
	dicts []*algebra.Dict
	cols  algebra.Columns // the last chunk's, its slices reused
	miss  []algebra.Tuple
	slot  []int32 // per row of the chunk, its slot
}

const (
	memoMax   = 1 << 16
	memoProbe = 4 << 10
)

// fill makes rows the table's, in their order (Add: the table's columns
// are made again; SortRows would sort the rows at one time by value).
func (e *chunkEncoder) fill(rows []algebra.Tuple) {
	t := e.h.Tables[e.rel.Name]
	t.Rows = t.Rows[:0]
	for i := range rows {
		t.Add(rows[i].Vals, rows[i].From, rows[i].To)
	}
}

// encode returns the chunk's columns (valid until the next call), or nil
// when it cannot be encoded.
func (e *chunkEncoder) encode(rows []algebra.Tuple) *algebra.Columns {
	k := len(e.rel.Attrs)
	if e.off || k == 0 {
		e.fill(rows)
		return e.h.Columns(e.rel.Name)
	}
	if len(e.memo) > memoMax {
		clear(e.memo)
		e.codes = e.codes[:0]
	}
	// Slots for the rows, the new slices to encode (slot −1−i: miss i).
	e.miss, e.slot = e.miss[:0], e.slot[:0]
	for i := range rows {
		vals := rows[i].Vals
		if len(vals) != k {
			return nil
		}
		p := &vals[0]
		s, ok := e.memo[p]
		if !ok {
			s = int32(-1 - len(e.miss))
			e.memo[p] = s
			e.miss = append(e.miss, algebra.Tuple{Vals: vals})
		} else {
			e.hits++ // (a slice met earlier in this chunk too)
		}
		e.slot = append(e.slot, s)
	}
	e.tries += len(rows)
	if len(e.miss) > 0 {
		e.fill(e.miss)
		mc := e.h.Columns(e.rel.Name)
		if mc == nil {
			return nil
		}
		e.dicts = mc.Dicts
		base := int32(len(e.codes) / k)
		for m := range e.miss {
			for a := range k {
				e.codes = append(e.codes, mc.Codes[a][m])
			}
			e.memo[&e.miss[m].Vals[0]] = base + int32(m)
		}
		for i, s := range e.slot {
			if s < 0 {
				e.slot[i] = base + (-1 - s)
			}
		}
	}
	c := &e.cols
	n := len(rows)
	c.Len, c.Dicts = n, e.dicts
	c.From, c.To = c.From[:0], c.To[:0]
	for i := range rows {
		c.From = append(c.From, rows[i].From)
		c.To = append(c.To, algebra.Clamp(rows[i].To))
	}
	if c.Codes == nil {
		c.Codes, c.Min, c.Max = make([][]int64, k), make([]int64, k), make([]int64, k)
	}
	for a := range k {
		col := c.Codes[a][:0]
		lo, hi := int64(0), int64(-1)
		for i, s := range e.slot {
			v := e.codes[int(s)*k+a]
			col = append(col, v)
			if i == 0 || v < lo {
				lo = v
			}
			if i == 0 || v > hi {
				hi = v
			}
		}
		c.Codes[a], c.Min[a], c.Max[a] = col, lo, hi
	}
	if e.tries >= memoProbe && 2*e.hits < e.tries {
		e.off, e.memo, e.codes = true, nil, nil
	}
	return c
}

var errNotEncoded = chunkError("a history chunk cannot be encoded in columns")

type chunkError string

func (e chunkError) Error() string { return string(e) }

// compactMin is the fewest groups a statement forgets groups at: past
// it, and past twice the groups it kept the last time, the groups without
// an open result or an event at the current time are dropped (compact).
const compactMin = 1 << 16

// chunkStmt is a statement's state across chunks.
type chunkStmt struct {
	s       *Stmt
	g       colGroups // groups by codes (hashed: codes are stable across chunks)
	vals    [][]algebra.Value
	open    []*stream.Rec // per group, its open result (nil: none)
	to      []algebra.Time
	last    []algebra.Time // per group, its last event's chronon, if evented
	evented []bool
	ends    chunkEnds
	cur     algebra.Time  // the start of the tuples being read
	have    bool          // cur is set
	ready   []stream.Elem // the Begins and Events at cur
	recs    []stream.Rec
	limit   int // compact past this many groups
	outs    [][]int64
	sel     []int32
	gids    []int32
}

// chunk adds a chunk's tuples, compiled as cs, and marks those selected.
func (st *chunkStmt) chunk(cs *colStmt, mark []uint64) error {
	cols := cs.cols
	k := len(cs.targets)
	if st.outs == nil {
		st.outs = make([][]int64, k)
		for i := range st.outs {
			st.outs[i] = make([]int64, colBatch)
		}
		st.sel, st.gids = make([]int32, colBatch), make([]int32, colBatch)
	}
	for lo := 0; lo < cols.Len; lo += colBatch {
		hi := min(lo+colBatch, cols.Len)
		sel, err := selectBatch(cs.conds, lo, hi, st.sel[:colBatch], mark)
		if err != nil {
			return err // (no arithmetic: not met)
		}
		if len(sel) == 0 {
			continue
		}
		for t, v := range cs.targets {
			if err := v.eval(sel, st.outs[t][:len(sel)]); err != nil {
				return err
			}
		}
		gs := st.gids[:len(sel)]
		st.g.hashGroups(st.outs, gs)
		for i, r := range sel {
			st.ensure(gs[i], cs.targets, st.outs, i)
			st.add(gs[i], cols.From[r], cols.To[r], cs.point)
		}
	}
	return nil
}

// ensure makes group g, when new (numbered next), with its values decoded
// from the targets' codes outs[·][i].
func (st *chunkStmt) ensure(g int32, targets []*colVec, outs [][]int64, i int) {
	if int(g) < len(st.vals) {
		return
	}
	v := make([]algebra.Value, len(targets))
	for t, tv := range targets {
		v[t] = tv.decode(outs[t][i])
	}
	st.vals = append(st.vals, v)
	st.open = append(st.open, nil)
	st.to = append(st.to, 0)
	st.last = append(st.last, 0)
	st.evented = append(st.evented, false)
}

// compact forgets the groups that have no open result and no event at
// the current time, once there are more than limit: their numbers and
// values are made again if they come back. Every result printed is then
// forgotten, and the groups held are at most max(compactMin, twice those
// kept at the last compaction) plus a chunk's. k is the targets' number.
func (st *chunkStmt) compact(k int) {
	st.limit = max(st.limit, compactMin)
	if len(st.vals) <= st.limit {
		return
	}
	var keep []int32
	for g := range st.vals {
		if st.open[g] != nil || st.evented[g] && st.last[g] == st.cur {
			keep = append(keep, int32(g))
		}
	}
	remap := make([]int32, len(st.vals))
	for i := range remap {
		remap[i] = -1
	}
	outs := make([][]int64, k)
	for t := range outs {
		outs[t] = make([]int64, len(keep))
		for i, g := range keep {
			outs[t][i] = st.g.keys[int(g)*k+t]
		}
	}
	var ng colGroups
	gs := make([]int32, len(keep))
	if len(keep) > 0 {
		ng.hashGroups(outs, gs) // new numbers 0, 1, … in order: the keys differ
	}
	vals, open := make([][]algebra.Value, len(keep)), make([]*stream.Rec, len(keep))
	to, last, evented := make([]algebra.Time, len(keep)), make([]algebra.Time, len(keep)), make([]bool, len(keep))
	for i, g := range keep {
		remap[g] = gs[i]
		vals[i], open[i], to[i], last[i], evented[i] = st.vals[g], st.open[g], st.to[g], st.last[g], st.evented[g]
	}
	ends := st.ends
	st.ends = nil
	for _, e := range ends {
		if g := remap[e.g]; g >= 0 && open[g] == e.rec {
			st.ends.push(chunkEnd{t: e.t, g: g, rec: e.rec})
		}
	}
	st.g, st.vals, st.open, st.to, st.last, st.evented = ng, vals, open, to, last, evented
	st.limit = 2 * len(keep)
}

// add adds a selected tuple of group g, valid from f to t.
func (st *chunkStmt) add(g int32, f, t algebra.Time, point bool) {
	if !st.have || f != st.cur {
		st.advance(f)
	}
	if point {
		if st.evented[g] && st.last[g] == f {
			return // one event per group and chronon
		}
		st.last[g], st.evented[g] = f, true
		st.ready = append(st.ready, stream.Elem{Kind: stream.Event, T: f, Rec: st.rec(g, f)})
		return
	}
	if o := st.open[g]; o != nil {
		// Open: it ends at or after cur = f (advance ended the others).
		st.to[g] = max(st.to[g], t)
		return
	}
	rec := st.rec(g, f)
	st.open[g], st.to[g] = rec, t
	st.ready = append(st.ready, stream.Elem{Kind: stream.Begin, T: f, Rec: rec})
	if t != algebra.Forever {
		st.ends.push(chunkEnd{t: t, g: g, rec: rec})
	}
}

// rec is a new result record of group g from f.
func (st *chunkStmt) rec(g int32, f algebra.Time) *stream.Rec {
	if len(st.recs) == 0 {
		st.recs = make([]stream.Rec, 256)
	}
	r := &st.recs[0]
	st.recs = st.recs[1:]
	*r = stream.Rec{Vals: st.vals[g], From: f}
	return r
}

// advance moves the reading to tuples starting at f (after cur): the
// results ending at or before cur end, then the Begins and Events at cur
// go, then the results ending before f end.
func (st *chunkStmt) advance(f algebra.Time) {
	if st.have {
		st.endBefore(st.cur, true)
		for _, e := range st.ready {
			st.s.Result.Push(e)
		}
		clear(st.ready)
		st.ready = st.ready[:0]
	}
	st.endBefore(f, false)
	st.cur, st.have = f, true
}

// endBefore ends the results whose ends are before t (or at t, when
// at), in time order.
func (st *chunkStmt) endBefore(t algebra.Time, at bool) {
	for len(st.ends) > 0 && (st.ends[0].t < t || at && st.ends[0].t == t) {
		e := st.ends[0]
		st.ends.pop()
		if st.open[e.g] != e.rec {
			continue // ended already
		}
		if to := st.to[e.g]; to != e.t {
			if to != algebra.Forever {
				st.ends.push(chunkEnd{t: to, g: e.g, rec: e.rec}) // extended since
			}
			continue
		}
		st.open[e.g] = nil
		st.s.Result.Push(stream.Elem{Kind: stream.End, T: e.t, Rec: e.rec})
	}
}

// finish ends the input: every result that ends, ends.
func (st *chunkStmt) finish() {
	if st.have {
		st.advance(algebra.Forever)
	}
}

// chunkEnds is a heap of pending result ends, least time first, then in
// the order the results began.
type chunkEnds []chunkEnd

type chunkEnd struct {
	t   algebra.Time
	g   int32
	rec *stream.Rec
}

func (h chunkEnds) less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].rec.From < h[j].rec.From
}

func (h *chunkEnds) push(e chunkEnd) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *chunkEnds) pop() {
	q := *h
	n := len(q) - 1
	q[0] = q[n]
	q[n] = chunkEnd{}
	q = q[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && q.less(l, m) {
			m = l
		}
		if l+1 < n && q.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
}
