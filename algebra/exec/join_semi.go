package exec

import (
	"maps"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Existential variables (JoinSpec.Exists; the plan's semi-joins). A
// variable that no target, no valid clause and no where conjunct with begin
// of or end of reads decides only whether a binding of the other variables
// has a result: every witness — a tuple for each existential variable that
// satisfies the where and when conjuncts with it — gives the same result
// tuple, and the result is a set. So the join keeps one candidate, a group,
// per binding of the other variables (Join.groups, by their entries),
// holding the witnesses that may still satisfy the when clause:
//
//   - A binding completed by a new tuple (of any variable) joins the group
//     of its other variables, or starts one. A group that a witness has
//     already settled (the when clause is true for it, whatever the unknown
//     ends turn out to be: it stays true as time passes) needs no more,
//     and enumeration stops offering it witnesses (Join.grpDone).
//   - Evaluating a group drops the witnesses whose when clause is false,
//     and settles it with the first that is true; it is dropped when none
//     is left. A later witness for a dropped group starts a new group: the
//     old witnesses stay false.
//   - Everything else — the valid time, the targets, holding on unknown
//     ends, purging, the output watermark — is the ordinary candidate's,
//     since none of it reads an existential variable.
//
// Each binding is still considered once, when its last tuple arrives, but
// a settled group costs each later tuple one look-up instead of one
// candidate per witness.

// setupSemi records the existential variables of the spec.
func (j *Join) setupSemi() {
	if j.spec.Exists == nil {
		return
	}
	j.semi = true
	j.owner = -1
	for v, ex := range j.spec.Exists {
		switch {
		case ex:
			j.exVars = append(j.exVars, v)
		case j.owner < 0:
			j.owner = v
		default:
			j.keyVars = append(j.keyVars, v)
		}
	}
	if len(j.keyVars)+1 > maxKept {
		j.semi, j.exVars, j.keyVars = false, nil, nil
		return
	}
	j.groups = map[groupKey]*cand{}
	j.setupSummaries()
}

// settled reports whether a group needs no more witnesses.
func (c *cand) settled() bool { return c.sure }

// witnesses is what a group candidate holds besides a candidate's: its
// witnesses' entries, len(Join.exVars) for each.
type witnesses struct {
	wits []*entry
}

// groupKey is the non-existential entries of a binding (up to maxKept of
// them; nil after the last).
type groupKey [maxKept]*entry

// maxKept bounds the non-existential variables of a join with groups; a
// join with more treats every variable as an ordinary one.
const maxKept = 4

// groupOf returns the group of the binding in j.bind (of its
// non-existential variables), or nil.
func (j *Join) groupOf() *cand { return j.groups[j.groupKey()] }

func (j *Join) groupKey() groupKey {
	k := groupKey{j.bind[j.owner]}
	for i, v := range j.keyVars {
		k[i+1] = j.bind[v]
	}
	return k
}

func (j *Join) setGroup(c *cand) { j.groups[j.groupKey()] = c }

// dropGroups forgets the groups of bindings with a purged entry: no later
// tuple binds with it (called when a store is compacted).
func (j *Join) dropGroups() {
	maps.DeleteFunc(j.groups, func(k groupKey, _ *cand) bool {
		for _, e := range k {
			if e != nil && e.dead {
				return true
			}
		}
		return false
	})
}

// witness offers the complete binding in j.bind, which has passed the where
// clause, to its group.
func (j *Join) witness(h algebra.Time) {
	g := j.groupOf()
	if g != nil && g.settled() {
		j.grpDone = true
		return
	}
	if g == nil || g.state == dead {
		g = j.newGroup()
		j.setGroup(g)
	} else {
		j.addWitness(g)
	}
	j.eval(g, h)
	if g.settled() {
		j.grpDone = true
	}
}

// newGroup makes a group of the binding in j.bind, with it as its first
// witness.
func (j *Join) newGroup() *cand {
	c := j.makeCand(j.bind)
	c.grp = &witnesses{}
	j.addWitness(c)
	j.live++
	return c
}

// addWitness adds the existential entries of j.bind to group c's witnesses
// (and, when c already waits for Ends, to those it waits for).
func (j *Join) addWitness(c *cand) {
	for _, v := range j.exVars {
		e := j.bind[v]
		c.grp.wits = append(c.grp.wits, e)
		if c.registered && e.open {
			e.deps = append(e.deps, c)
		}
	}
}

// entSpan is what is known of an entry's valid time at horizon h: an
// unknown end lies in [max(h, b+1), Forever].
func entSpan(e *entry, h algebra.Time) varSpan {
	if e.open {
		return varSpan{b: point(e.b), e: rng{max(h, algebra.Next(e.b)), algebra.Forever}}
	}
	return varSpan{b: point(e.b), e: point(e.e)}
}

// groupWhen evaluates the when clause of an unsettled group at horizon h
// (j.spans has filled j.vs for its other variables): true if some witness
// makes it true, false if every one makes it false.
func (j *Join) groupWhen(c *cand, h algebra.Time) tri {
	n := len(j.exVars)
	p := no
	for i := 0; i < len(c.grp.wits) && p != yes; i += n {
		for x, v := range j.exVars {
			j.vs[v] = entSpan(c.grp.wits[i+x], h)
		}
		p = or3(p, evalP(j.spec.When, j.vs))
	}
	return p
}

// pruneWitnesses drops the witnesses of an unsettled group whose when
// clause is false at horizon h and settles the group with the first whose
// when clause is true. It reports whether any witness is left.
func (j *Join) pruneWitnesses(c *cand, h algebra.Time) bool {
	j.spans(c, h)
	n := len(j.exVars)
	kept := c.grp.wits[:0]
	for i := 0; i < len(c.grp.wits); i += n {
		w := c.grp.wits[i : i+n]
		for x, v := range j.exVars {
			j.vs[v] = entSpan(w[x], h)
		}
		switch evalP(j.spec.When, j.vs) {
		case yes:
			for x, v := range j.exVars {
				c.ents[v] = w[x]
				c.vals[v] = w[x].rec.Vals
			}
			c.sure = true
			clear(c.grp.wits)
			c.grp.wits = nil
			return true
		case maybe:
			kept = append(kept, w...)
		}
	}
	clear(c.grp.wits[len(kept):])
	c.grp.wits = kept
	return len(kept) > 0
}

// Witness summaries. Two witnesses of an existential variable v with the
// same values of the attributes the where clause reads satisfy the where
// clause with the same bindings; when the when clause reads v in one of
// two ways, one stored entry per such value (the summary key) stands for
// many of them, and each arriving tuple is tested against it once:
//
//   - Precede on begins (timeDir): the when clause is monotone in v's
//     begin — v is an event, or an interval read only as `begin of v` — so
//     of two witnesses the earlier (when later ones only make the when
//     clause harder, as for `v precede X`) or the later (as for `X precede
//     v`) satisfies it with every binding the other does. An arriving
//     witness that the stored one dominates is dropped — every binding it
//     would form is formed with the stored one, which stays stored until
//     no future binding can use it, and hence not the dominated one
//     either; one that dominates the stored one replaces it. Begins are
//     compared, not arrival order, so late inputs (Whole, Late) are
//     summarized too. The stored witnesses of `S precede end of W` are the
//     earliest send per mailbox rather than every send.
//   - Overlap (coverable): v appears in the when clause once, in an
//     overlap comparison, as itself or intersected with times that do not
//     depend on it, and not under a not. Then a binding's when clause
//     holds with some witness exactly when it holds with the union of
//     their valid times (an intersection with a union is the union of the
//     intersections), and the stored entries of a key are a covering set:
//     spans whose union is the union of the witnesses'. A witness that
//     begins while the latest stored span is open (and not before it) is
//     merged into it — the span ends when its last member ends, so it is
//     still one interval — and forms no binding of its own: every binding
//     it would form is formed with the span, whose when clause it can only
//     make truer (a group that dropped the open span found it false for
//     every end, hence for every part of it). A witness inside a closed
//     span (an event at its time, a whole late tuple) is covered and
//     dropped; any other starts a span of its own. A dense run of
//     overlapping intervals is then one entry instead of one per interval.
//
// Both keep the summary's entries in the input's store, indexes and purge
// like any other: a span is purged when no future binding can use it, and
// then neither can any part of it.

// summary is the witness summary of an input.
type summary struct {
	cover bool  // overlap: a covering set (else precede: one dominant witness)
	later bool  // precede: the later of two begins dominates (else the earlier)
	cols  []int // the attributes the where clause reads
	// best is, per key, the dominant witness (precede) or the latest-begun
	// span (cover).
	best map[string]*entry
	// members counts the open members of a span that others were merged
	// into (absent: one, its own tuple).
	members map[*entry]int
}

// setupSummaries gives each existential input a summary when its when
// conjuncts allow one.
func (j *Join) setupSummaries() {
	for _, v := range j.exVars {
		in := j.in[v]
		s := &summary{best: map[string]*entry{}}
		if dir, ok := timeDir(j.spec.When, v, in.event); ok {
			s.later = dir > 0
		} else if coverable(j.spec.When, v) {
			s.cover, s.members = true, map[*entry]int{}
		} else {
			continue
		}
		cols := map[int]bool{}
		for _, c := range j.spec.Conds {
			expr.Walk(c, func(x expr.Expr) {
				if col, ok := x.(*expr.Col); ok && col.Var == v {
					cols[col.Attr] = true
				}
			})
		}
		for a := range cols {
			s.cols = append(s.cols, a)
		}
		slices.Sort(s.cols)
		in.sum = s
	}
}

// summarize decides what the summary of input in makes of an arriving
// element e with values vals: skip reports that it is dominated, covered
// or merged into a stored span, and forms no entry; otherwise key is its
// summary key (for keep). A stored witness it dominates is purged.
func (j *Join) summarize(in *joinInput, e stream.Elem, vals []algebra.Value) (key string, skip bool) {
	s := in.sum
	key, j.keybuf = indexKey(j.keybuf, vals, s.cols)
	old := s.best[key]
	if old == nil || old.dead {
		return key, false
	}
	b := e.T
	if e.Kind == stream.Whole || e.Kind == stream.Late {
		b = e.Rec.From
	}
	if !s.cover {
		if old.b == b || (old.b < b) != s.later {
			return key, true
		}
		j.kill(in, old)
		return key, false
	}
	if old.b > b {
		return key, false // began before the span: a span of its own
	}
	switch e.Kind {
	case stream.Begin, stream.Late:
		if old.open {
			// The span is open at e.T, so it ends at e.T or later; the
			// tuple began at or before e.T: the union is one interval.
			in.open.put(e.Rec, old)
			s.members[old] = max(s.members[old], 1) + 1
			return key, true
		}
	case stream.Whole:
		// An open span ends at e.T or later (Ends and whole tuples at e.T
		// come first), a closed one where it says.
		return key, old.open || e.T <= old.e
	case stream.Event:
		return key, !old.open && algebra.Next(e.T) <= old.e
	}
	return key, false
}

// keep records a new stored entry of a summarized input under its key.
func (s *summary) keep(key string, ent *entry) {
	if old := s.best[key]; !s.cover || old == nil || old.dead || old.b <= ent.b {
		s.best[key] = ent
	}
}

// ended reports whether the End of one of ent's members ends ent: false
// while another member merged into it is still open.
func (s *summary) ended(ent *entry) bool {
	switch n := s.members[ent]; {
	case n > 2:
		s.members[ent] = n - 1
		return false
	case n == 2:
		delete(s.members, ent)
		return false
	}
	return true
}

// forget drops purged entries from the summary (at a store's compaction),
// so it holds no more than the store does.
func (s *summary) forget() {
	maps.DeleteFunc(s.best, func(_ string, e *entry) bool { return e.dead })
}

// coverable reports whether the when clause p reads variable v only
// through one overlap comparison, as v or v intersected with expressions
// without v, under and and or: then it holds for some witness exactly
// when it holds for the union of their valid times.
func coverable(p expr.Pred, v int) bool {
	n, ok := overlapUses(p, uint64(1)<<uint(v), v)
	return ok && n == 1
}

// overlapUses counts the comparisons of p that read v (bit is v's), or
// reports false when one reads it otherwise than coverable allows.
func overlapUses(p expr.Pred, bit uint64, v int) (int, bool) {
	switch p := p.(type) {
	case *expr.PTrue:
		return 0, true
	case *expr.PAnd:
		return addUses(overlapUses(p.X, bit, v))(overlapUses(p.Y, bit, v))
	case *expr.POr:
		return addUses(overlapUses(p.X, bit, v))(overlapUses(p.Y, bit, v))
	case *expr.PNot:
		n, ok := overlapUses(p.X, bit, v)
		return 0, ok && n == 0
	case *expr.PCmp:
		xv, yv := expr.TVars(p.X)&bit != 0, expr.TVars(p.Y)&bit != 0
		switch {
		case !xv && !yv:
			return 0, true
		case p.Op != expr.Overlap || xv && yv:
			return 0, false
		case xv:
			return 1, pointsOf(p.X, bit, v)
		}
		return 1, pointsOf(p.Y, bit, v)
	}
	return 0, false
}

func addUses(a int, okA bool) func(int, bool) (int, bool) {
	return func(b int, okB bool) (int, bool) { return a + b, okA && okB }
}

// pointsOf reports whether e is v, or v intersected (overlap, not extend)
// with expressions that do not read it: a set of time points that grows
// with v's.
func pointsOf(e expr.TExpr, bit uint64, v int) bool {
	switch e := e.(type) {
	case *expr.TVar:
		return e.Var == v
	case *expr.TBinary:
		xv, yv := expr.TVars(e.X)&bit != 0, expr.TVars(e.Y)&bit != 0
		switch {
		case e.Extend || xv == yv:
			return false
		case xv:
			return pointsOf(e.X, bit, v)
		}
		return pointsOf(e.Y, bit, v)
	}
	return false
}

// timeDir says how the when clause p depends on the begin of variable v
// (event says whether it is an event): 0 not at all, -1 an earlier begin
// satisfies it whenever a later one does, +1 a later one whenever an
// earlier one does; ok is false when neither holds for every binding. Only
// precede compares v — as begin of v, or for an event as v or end of v
// too, all the event itself — with times that do not depend on it; and,
// or and not combine directions.
func timeDir(p expr.Pred, v int, event bool) (int, bool) {
	switch p := p.(type) {
	case *expr.PTrue:
		return 0, true
	case *expr.PCmp:
		bit := uint64(1) << uint(v)
		xv, yv := expr.TVars(p.X)&bit != 0, expr.TVars(p.Y)&bit != 0
		switch {
		case !xv && !yv:
			return 0, true
		case p.Op != expr.Precede || xv && yv:
			return 0, false
		case xv && isBegin(p.X, v, event):
			return -1, true // v.b+1 ≤ Y.b: harder as v is later
		case yv && isBegin(p.Y, v, event):
			return 1, true // X.e ≤ v.b: easier as v is later
		}
		return 0, false
	case *expr.PAnd:
		return combineDir(p.X, p.Y, v, event)
	case *expr.POr:
		return combineDir(p.X, p.Y, v, event)
	case *expr.PNot:
		d, ok := timeDir(p.X, v, event)
		return -d, ok
	}
	return 0, false
}

func combineDir(x, y expr.Pred, v int, event bool) (int, bool) {
	a, ok1 := timeDir(x, v, event)
	b, ok2 := timeDir(y, v, event)
	switch {
	case !ok1 || !ok2 || a != 0 && b != 0 && a != b:
		return 0, false
	case a != 0:
		return a, true
	}
	return b, true
}

// isBegin reports whether e is begin of v — or, for an event v, v, begin
// of v or end of v.
func isBegin(e expr.TExpr, v int, event bool) bool {
	switch e := e.(type) {
	case *expr.TVar:
		return event && e.Var == v
	case *expr.TBeginEnd:
		if x, ok := e.X.(*expr.TVar); ok && !e.End && x.Var == v {
			return true
		}
		return event && isBegin(e.X, v, event)
	}
	return false
}
