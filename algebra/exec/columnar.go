package exec

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// The columnar path: RunHistory evaluates a statement that is σ, π and
// coalescing over one recorded relation — a Select feeding the block's
// Coalesce and nothing but the result — over the relation's columns
// (algebra.History.Columns: dictionary-encoded, built once per table and
// kept with the history) instead of playing its tuples through the
// operators one by one.
//
// The where conjuncts and targets are compiled (columnar_expr.go) to
// closures over columns: a conjunct narrows a selection vector (the
// indexes of a batch's tuples still selected), a target fills an output
// column of codes for the selected tuples. A result group is the tuple of
// its targets' codes, numbered by a dense array when the targets' ranges
// are known and small (mixed radix), otherwise by the interpreter's
// open-addressing table (hashMap) over a hash of the codes, keys compared
// in a flat array. Coalescing is over group numbers: the tuples come in
// order of their start, so a group's intervals do too, and each extends
// its group's open result or starts the next one (an event is one per
// group and chronon). A result's values are decoded once per group, into
// one block, and the results are handed to the collector in order of
// start.
//
// Exactness: the result is the one the row operators compute — the same
// tuples (the Select's where conjuncts and targets, a tuple that ends at
// Forever never ending), coalesced as Coalesce does (value-equivalent
// intervals that overlap or meet merge; equal events at a chronon are
// one; codes are equal exactly when values are, the dictionaries being
// per entity type and Equal on enums being equal ordinals for member
// values). Anything it does not support is left to the row operators,
// decided before it runs: a when clause or begin/end of in the where
// clause or targets, a statement read by a later one, a cut for gaps,
// streaming output (OnElem), comparisons in an order codes do not keep
// (entities and strings other than = and !=), float or computed entity and
// string targets, a table that cannot be encoded. An arithmetic error
// (overflow, division by zero) abandons it when met: conjuncts are
// evaluated for every tuple a batch still selects, not one conjunct at a
// time per tuple, so the row operators run the statement again and report
// the error they meet first, exactly as without this path.
//
// Bounds: a run holds its result, one entry per group (a dense array of
// at most denseMax entries and at most the larger of 4,096 and twice the
// relation's tuples, else the hash table's, one per group met), a batch's vectors and the results' spans; a
// memory budget (Options.Budget) is not polled during a Select's, as no
// operator holds tuples (a join's is: columnar_join.go).
//
// It is for recorded histories (RunHistory, and streamed over a
// history's chunks, RunChunks in columnar_stream.go): live runs and
// RunSource play tuples as they come, with watermarks and the
// Begin/End/Event deltas, through the row operators.

// colBatch is how many tuples a selection vector holds.
const colBatch = 1024

// denseMax bounds the groups numbered by a dense array (and the array's
// size, reset per run): at most this many, and at most twice the tuples.
const denseMax = 1 << 22

// colSpan is a result being built: its group, the group's number among
// the groups with a result (colOpen.u, negated in the group's first
// result: collect decodes its values there) and its valid time.
type colSpan struct {
	g, u     int32
	from, to algebra.Time
}

// colStmt is a statement compiled for the columnar path.
type colStmt struct {
	s       *Stmt
	tee     *stream.Tee // the relation's, which feeds s.Select
	cols    *algebra.Columns
	conds   []colFilter
	targets []*colVec
	// keys are what results are grouped by, per target: the target, or
	// the column it is a function of one to one and in order (keyOf);
	// codesOf gives the keys' codes, value the targets' values.
	keys  []*colVec
	point bool // results are events at their tuples' starts

	// dense numbering: group = Σ (key_t − lo_t)·stride_t, where a
	// target's key is its code or, for an entity or string, the code's
	// rank (colVec.ranks): groups are then numbered in the order of their
	// values, the first target most significant.
	dense  bool
	lo     []int64
	stride []int64
	nDense int

	join *colJoin // an overlap equi-join's (columnar_join.go); nil: a Select's
}

// columnar runs every statement the columnar path takes, and detaches its
// Select from its relation's tee: it returns the tees no row operator
// reads any more (the driver need not play them) and, for each, the
// tuples no columnar statement selected (Skipped counts them).
func (n *Network) columnar(h *algebra.History) map[*stream.Tee]int {
	if n.opts.Gaps != nil || n.opts.collide || n.opts.NoColumnar {
		return nil
	}
	// kept marks, per relation, the tuples some columnar statement
	// selected.
	kept := map[*stream.Tee][]uint64{}
	rows := map[*stream.Tee]int{}
	for _, s := range n.Stmts {
		cs := n.colCompile(h, s)
		if cs == nil {
			continue
		}
		ins := cs.inputs()
		marks := make([][]uint64, len(ins))
		for i, in := range ins {
			if marks[i] = kept[in.tee]; marks[i] == nil {
				marks[i] = make([]uint64, (in.cols.Len+63)/64)
				for k := range i {
					if ins[k].tee == in.tee { // a self-join: one mark
						marks[i] = marks[k]
					}
				}
			}
		}
		if cs.exec(marks) {
			s.Columnar = true
			for i, in := range ins {
				kept[in.tee], rows[in.tee] = marks[i], in.cols.Len
				in.tee.Outs = slices.DeleteFunc(slices.Clone(in.tee.Outs), func(r stream.Receiver) bool { return r == in.recv })
			}
		}
		if n.st.err != nil {
			break // the budget stopped the run: RunHistory reports it
		}
	}
	quiet := map[*stream.Tee]int{}
	for tee, mark := range kept {
		if len(tee.Outs) > 0 {
			continue
		}
		// Not played: a tuple no selection kept is one every reader
		// rejects for its values (the screen RunHistory applies).
		skipped := rows[tee]
		for _, w := range mark {
			skipped -= bits.OnesCount64(w)
		}
		quiet[tee] = skipped
	}
	return quiet
}

// colCompile compiles s for the columnar path, or returns nil when the
// path does not take it.
func (n *Network) colCompile(h *algebra.History, s *Stmt) *colStmt {
	if s.Result.OnElem != nil {
		return nil
	}
	if s.Join != nil {
		return n.colJoinCompile(s, historyColumns(h)) // columnar_join.go
	}
	return n.colCompileAny(h, s)
}

// colCompileAny is colCompile for a result streamed or not (RunChunks
// streams it).
func (n *Network) colCompileAny(h *algebra.History, s *Stmt) *colStmt {
	return n.colCompileOver(s, historyColumns(h))
}

// historyColumns gives a recorded relation's columns and attributes by
// its name (nil: none, or it cannot be encoded).
func historyColumns(h *algebra.History) func(name string) (*algebra.Columns, []algebra.Attr) {
	return func(name string) (*algebra.Columns, []algebra.Attr) {
		t := h.Table(name)
		if t == nil {
			return nil, nil
		}
		return h.Columns(name), t.Rel.Attrs
	}
}

// coalescedToResult reports whether s's block is coalesced and its result
// read by nothing but its collector: what a columnar statement computes.
func (s *Stmt) coalescedToResult() bool {
	return s.Coalesce != nil && len(s.out.Outs) == 1 && s.out.Outs[0] == s.Result
}

// sourceOf is the source tee that feeds r and its relation's name (nil
// when none does).
func (n *Network) sourceOf(r stream.Receiver) (*stream.Tee, string) {
	for name, t := range n.Sources {
		if slices.Contains(t.Outs, r) {
			return t, name
		}
	}
	return nil, ""
}

// colCompileOver is colCompileAny over the columns (and attributes)
// columns gives for a relation's name (nil: none).
func (n *Network) colCompileOver(s *Stmt, columns func(name string) (*algebra.Columns, []algebra.Attr)) *colStmt {
	sel := s.Select
	if sel == nil || !s.coalescedToResult() {
		return nil
	}
	spec := &sel.spec
	if _, ok := spec.When.(*expr.PTrue); !ok || len(spec.Times) > 0 || len(spec.TimeConds) > 0 {
		return nil
	}
	tee, name := n.sourceOf(sel)
	if tee == nil {
		return nil
	}
	cols, attrs := columns(name)
	if cols == nil {
		return nil
	}
	cs := &colStmt{s: s, tee: tee, cols: cols, point: sel.at || sel.event}
	c := &colCompiler{cols: cols, attrs: attrs}
	// The Select's order: conjuncts over the variable, then constant ones.
	var consts []expr.Expr
	for _, e := range spec.Conds {
		if expr.Vars(e) == 0 {
			consts = append(consts, e)
			continue
		}
		f := c.filter(e)
		if f.keep == nil {
			return nil
		}
		cs.conds = append(cs.conds, f)
	}
	for _, e := range consts {
		f := c.filter(e)
		if f.keep == nil {
			return nil
		}
		cs.conds = append(cs.conds, f)
	}
	for _, e := range spec.Targets {
		v := c.vec(e)
		if v == nil || !decodable(v) {
			return nil
		}
		cs.targets = append(cs.targets, v)
		if v.keyOf != nil {
			cs.keys = append(cs.keys, v.keyOf)
		} else {
			cs.keys = append(cs.keys, v)
		}
	}
	cs.number(cols.Len)
	return cs
}

// colIn is an input of a columnar statement: the tee of its relation,
// the relation's columns and the operator the tee feeds, which the
// columnar path replaces.
type colIn struct {
	tee  *stream.Tee
	cols *algebra.Columns
	recv stream.Receiver
}

// inputs are the statement's inputs, in the order of its variables.
func (cs *colStmt) inputs() []colIn {
	if cs.join != nil {
		return []colIn{cs.join.sides[0].colIn, cs.join.sides[1].colIn}
	}
	return []colIn{{cs.tee, cs.cols, cs.s.Select}}
}

// exec evaluates the statement, marking in marks (one per input) the
// tuples it selected; false when an expression failed.
func (cs *colStmt) exec(marks [][]uint64) bool {
	if cs.join != nil {
		return cs.runJoin(marks)
	}
	return cs.run(marks[0])
}

// decodable reports whether a target's codes decode to its values.
func decodable(v *colVec) bool {
	switch v.kind {
	case algebra.KindEntity, algebra.KindString:
		return v.names != nil // a column's: its dictionary decodes it
	case algebra.KindEnum:
		return v.typ.Enum != nil
	case algebra.KindInt, algebra.KindBool, algebra.KindTime, algebra.KindDuration:
		return true
	}
	return false // floats: -0 and +0 are one value in two codes
}

// number chooses how groups are numbered: densely when every target's
// range is known and their product is small (for rows tuples read).
func (cs *colStmt) number(rows int) {
	if cs.keys == nil {
		cs.keys = cs.targets
	}
	ranges := make([][2]int64, len(cs.keys))
	for i, v := range cs.keys {
		if !v.ranged {
			return
		}
		ranges[i] = [2]int64{v.lo, v.hi}
		if v.ranks != nil {
			ranges[i] = [2]int64{0, int64(len(v.ranks)) - 1}
		}
	}
	cs.lo, cs.stride, cs.nDense, cs.dense = denseLayout(ranges, rows)
}

// denseLayout numbers tuples of codes in the given ranges densely (mixed
// radix, the first most significant): number = Σ (code_i − lo_i)·stride_i,
// when the product of the ranges' widths is at most denseMax and at most
// the larger of 4,096 and twice rows; ok false otherwise.
func denseLayout(ranges [][2]int64, rows int) (lo, stride []int64, size int, ok bool) {
	n := int64(1)
	limit := min(int64(denseMax), max(4096, 2*int64(rows)))
	lo = make([]int64, len(ranges))
	stride = make([]int64, len(ranges))
	for i := len(ranges) - 1; i >= 0; i-- {
		w, ok := checkedWidth(ranges[i][0], ranges[i][1])
		if !ok || w > limit || n*w > limit {
			return nil, nil, 0, false
		}
		lo[i], stride[i] = ranges[i][0], n
		n *= w
	}
	return lo, stride, int(n), true
}

// checkedWidth is hi − lo + 1, or false when it overflows or is not
// positive.
func checkedWidth(lo, hi int64) (int64, bool) {
	if hi < lo {
		return 1, true // no value: any width holds none
	}
	w := uint64(hi) - uint64(lo) + 1
	if w == 0 || w > math.MaxInt64 {
		return 0, false
	}
	return int64(w), true
}

// run evaluates the statement into its collector and marks the tuples it
// selected in mark (a bit per tuple). It returns false when an expression
// failed: nothing was collected (some tuples may be marked).
func (cs *colStmt) run(mark []uint64) bool {
	cols := cs.cols
	k := len(cs.keys)
	outs := make([][]int64, k)
	for i := range outs {
		outs[i] = make([]int64, colBatch)
	}
	sel := make([]int32, colBatch)
	gids := make([]int32, colBatch)
	var g colGroups
	if cs.dense {
		g.open = make([]colOpen, cs.nDense)
	}
	var spans []colSpan
	sized := false
	for lo := 0; lo < cols.Len; lo += colBatch {
		hi := min(lo+colBatch, cols.Len)
		var err error
		if sel, err = selectBatch(cs.conds, lo, hi, sel[:colBatch], mark); err != nil {
			return false
		}
		if len(sel) == 0 {
			continue
		}
		for t, v := range cs.keys {
			if err := v.eval(sel, outs[t][:len(sel)]); err != nil {
				return false
			}
		}
		gs := gids[:len(sel)]
		if cs.dense {
			cs.denseGroups(outs, gs)
		} else {
			g.hashGroups(outs, gs)
		}
		spans = coalesceCodes(&g, spans, gs, sel, cols.From, cols.To, cs.point)
		if !sized {
			// Room for the results at the first batch's rate, and some.
			sized = true
			spans = slices.Grow(spans, len(spans)*((cols.Len-lo)/(hi-lo)+1)*9/8)
		}
	}
	closeSpans(&g, spans, cs.point)
	return cs.collect(&g, spans)
}

// selectBatch selects, into sel (of room colBatch), the tuples lo..hi−1
// every conjunct of conds holds for, and marks them in mark (a bit per
// tuple); an error is an arithmetic one.
func selectBatch(conds []colFilter, lo, hi int, sel []int32, mark []uint64) ([]int32, error) {
	if len(conds) > 0 && conds[0].span != nil {
		sel = conds[0].span(lo, hi, sel)
		conds = conds[1:]
	} else {
		sel = sel[:hi-lo]
		for i := range sel {
			sel[i] = int32(lo + i)
		}
	}
	for _, f := range conds {
		var err error
		if sel, err = f.keep(sel); err != nil {
			return nil, err
		}
		if len(sel) == 0 {
			return sel, nil
		}
	}
	for _, r := range sel {
		mark[r>>6] |= 1 << (r & 63)
	}
	return sel, nil
}

// denseGroups numbers the groups of the selected tuples' codes densely.
func (cs *colStmt) denseGroups(outs [][]int64, gs []int32) {
	clear(gs)
	for t, o := range outs {
		lo, stride := cs.lo[t], cs.stride[t]
		if r := cs.keys[t].ranks; r != nil {
			for i, c := range o[:len(gs)] {
				gs[i] += r[c] * int32(stride)
			}
			continue
		}
		for i, c := range o[:len(gs)] {
			gs[i] += int32((c - lo) * stride)
		}
	}
}

// colGroups are the result groups of a run: the open result of each and,
// numbered by hash, their codes.
type colGroups struct {
	open []colOpen
	used int32 // the groups with a result

	index hashMap[int32] // hash of codes → the last group with it, +1
	next  []int32        // per group: an earlier group with its hash, +1
	keys  []int64        // per group, its codes
}

// colOpen is a group's open result: slot is its index+1 in the spans (0
// when none), to its end so far — the span's to is written when the next
// starts, or at the end, so that extending a result touches this entry
// only; u numbers the groups with a result from 1, in the order of their
// first results (which stay first among the group's after sortRuns: a
// group's results start at distinct times).
type colOpen struct {
	slot, u int32
	to      algebra.Time
}

// hashGroups numbers the groups of the selected tuples' codes by hash.
func (g *colGroups) hashGroups(outs [][]int64, gs []int32) {
	k := len(outs)
	for i := range gs {
		h := uint64(0x9e3779b97f4a7c15)
		for _, o := range outs {
			h = (h ^ uint64(o[i])) * 0xbf58476d1ce4e5b9
			h ^= h >> 31
		}
		head := g.index.ref(h)
		id := int32(-1)
	chain:
		for j := *head; j != 0; j = g.next[j-1] {
			key := g.keys[int(j-1)*k:]
			for t, o := range outs {
				if key[t] != o[i] {
					continue chain
				}
			}
			id = j - 1
			break
		}
		if id < 0 {
			id = int32(len(g.next))
			g.next = append(g.next, *head)
			*head = id + 1
			for _, o := range outs {
				g.keys = append(g.keys, o[i])
			}
			g.open = append(g.open, colOpen{})
		}
		gs[i] = id
	}
}

// coalesceCodes adds the selected tuples (sel, their groups gs) to the
// results: an interval extends its group's open result when it overlaps
// or meets it (the tuples come in order of start, so the result is the
// union of a run of them) and otherwise starts the next; an event is
// dropped when its group has one at its chronon. Results are appended in
// order of start.
func coalesceCodes(g *colGroups, spans []colSpan, gs, sel []int32, from, to []algebra.Time, point bool) []colSpan {
	open := g.open
	if point {
		for i, r := range sel {
			f := from[r]
			o := &open[gs[i]]
			u := o.u
			if o.slot != 0 {
				if spans[o.slot-1].from == f {
					continue
				}
			} else {
				g.used++
				o.u, u = g.used, -g.used
			}
			spans = append(spans, colSpan{gs[i], u, f, algebra.Next(f)})
			o.slot = int32(len(spans))
		}
		return spans
	}
	for i, r := range sel {
		o := &open[gs[i]]
		f, t := from[r], to[r]
		u := o.u
		if o.slot != 0 {
			if f <= o.to {
				o.to = max(o.to, t)
				continue
			}
			spans[o.slot-1].to = o.to
		} else {
			g.used++
			o.u, u = g.used, -g.used
		}
		spans = append(spans, colSpan{gs[i], u, f, t})
		o.slot, o.to = int32(len(spans)), t
	}
	return spans
}

// closeSpans writes the end of every group's open result into its span.
func closeSpans(g *colGroups, spans []colSpan, point bool) {
	if point {
		return
	}
	for _, o := range g.open {
		if o.slot != 0 {
			spans[o.slot-1].to = o.to
		}
	}
}

// collect decodes the results into the statement's collector, as the row
// operators would have pushed them, and in the order Collector.Table
// sorts them in (start, then values, then end), so that it need not sort:
// each group's values are decoded once, into one block, with a key per
// target that orders codes as their values (an entity's or string's rank
// in its dictionary, any other code itself), by which the results starting
// at one time are sorted.
func (cs *colStmt) collect(g *colGroups, spans []colSpan) bool {
	if cs.dense {
		return cs.collectDense(g, spans)
	}
	c := cs.s.Result
	k := len(cs.targets)
	// A group's values and keys are decoded at its first result (u < 0),
	// into its place (|u| − 1) in one block.
	vals := make([]algebra.Value, int(g.used)*k)
	keys := make([]int64, int(g.used)*k)
	codes := make([]int64, k)
	for _, sp := range spans {
		if sp.u > 0 {
			continue
		}
		i := int(-sp.u-1) * k
		cs.codesOf(g, sp.g, codes)
		for t, kv := range cs.keys {
			var ok bool
			if vals[i+t], ok = cs.value(t, codes[t]); !ok {
				return false
			}
			keys[i+t] = codes[t]
			if r := kv.ranks; r != nil {
				keys[i+t] = int64(r[codes[t]])
			}
		}
	}
	place := func(sp colSpan) int { return int(max(sp.u, -sp.u)-1) * k }
	byKeys := func(a, b colSpan) int {
		ka, kb := keys[place(a):][:k], keys[place(b):][:k]
		for t := range ka {
			if ka[t] != kb[t] {
				return cmp.Compare(ka[t], kb[t])
			}
		}
		return cmp.Compare(a.to, b.to)
	}
	sortRuns(spans, byKeys)
	rows := make([]algebra.Tuple, 0, len(spans))
	for _, sp := range spans {
		if cs.count(sp) {
			i := place(sp)
			rows = append(rows, algebra.Tuple{Vals: vals[i : i+k : i+k], From: sp.from, To: sp.to})
		}
	}
	c.addSorted(rows)
	return true
}

// sortRuns sorts each run of spans at one start by less (spans are in
// order of start), leaving a run already in order as it is.
func sortRuns(spans []colSpan, less func(a, b colSpan) int) {
	for lo := 0; lo < len(spans); {
		hi := lo + 1
		for hi < len(spans) && spans[hi].from == spans[lo].from {
			hi++
		}
		if run := spans[lo:hi]; len(run) > 1 && !slices.IsSortedFunc(run, less) {
			slices.SortFunc(run, less)
		}
		lo = hi
	}
}

// sortedByGroup reports whether spans are in collectDense's order (start,
// group, end) already — as when a recording sorted by time then values
// feeds dense groups, numbered in the order of their values — in one
// pass without a call per span.
func sortedByGroup(spans []colSpan) bool {
	for i := 1; i < len(spans); i++ {
		a, b := &spans[i-1], &spans[i]
		if a.from != b.from {
			continue // spans are in order of start
		}
		if a.g > b.g || a.g == b.g && a.to > b.to {
			return false
		}
	}
	return true
}

// count counts a result's elements in the collector, as Collector.Push
// would, and reports whether it is kept: an observation's collector drops
// a Begin or Event at forever.
func (cs *colStmt) count(sp colSpan) bool {
	c := cs.s.Result
	if c.Observed && sp.from >= algebra.Forever {
		return false
	}
	c.Count++
	if !cs.point && sp.to != algebra.Forever {
		c.Count++ // its End
	}
	return true
}

// collectDense is collect for groups numbered densely, in the order of
// their values: results at one start are sorted by group, then end; a
// group's values are decoded when it is first met, into one block.
func (cs *colStmt) collectDense(g *colGroups, spans []colSpan) bool {
	byGroup := func(a, b colSpan) int {
		if a.g != b.g {
			return cmp.Compare(a.g, b.g)
		}
		return cmp.Compare(a.to, b.to)
	}
	if !sortedByGroup(spans) {
		sortRuns(spans, byGroup)
	}
	k := len(cs.targets)
	// A group's values are decoded at its first result (u < 0), into
	// the group's place in one block: in the order of the spans, so the
	// block is written in sequence.
	vals := make([]algebra.Value, int(g.used)*k)
	codes := make([]int64, k)
	rows := make([]algebra.Tuple, 0, len(spans))
	for _, sp := range spans {
		u := sp.u
		if u < 0 {
			u = -u
			cs.codesOf(g, sp.g, codes)
			for t := range codes {
				var ok bool
				if vals[int(u-1)*k+t], ok = cs.value(t, codes[t]); !ok {
					return false
				}
			}
		}
		if cs.count(sp) {
			i := int(u-1) * k
			rows = append(rows, algebra.Tuple{Vals: vals[i : i+k : i+k], From: sp.from, To: sp.to})
		}
	}
	cs.s.Result.addSorted(rows)
	return true
}

// value is target t's value for its key's code c; false when computing
// it fails (an arithmetic error: the run is abandoned, as when a target
// fails in a batch, and every group's key is read here once).
func (cs *colStmt) value(t int, c int64) (algebra.Value, bool) {
	tv := cs.targets[t]
	if cs.keys[t] != tv {
		var err error
		if c, err = tv.fromKey(c); err != nil {
			return algebra.Value{}, false
		}
	}
	return tv.decode(c), true
}

// codesOf fills codes with group id's.
func (cs *colStmt) codesOf(g *colGroups, id int32, codes []int64) {
	if !cs.dense {
		copy(codes, g.keys[int(id)*len(codes):])
		return
	}
	rest := int64(id)
	for t := range codes {
		q := rest / cs.stride[t]
		rest -= q * cs.stride[t]
		codes[t] = cs.lo[t] + q
		if r := cs.keys[t].byRank; r != nil {
			codes[t] = int64(r[q])
		}
	}
}
