package exec

import (
	"maps"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
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

// Witness summaries. For an existential event variable whose when
// conjuncts are monotone in its time (timeDir), one stored tuple per value
// of the attributes the where clause reads stands for all of them: of two
// such events, the earlier (when later ones only make the when clause
// harder, as for `v precede X`) or the later (as for `X precede v`)
// satisfies the where and when clauses with every binding the other does.
// An arriving event that the stored one dominates is dropped — every
// binding it would form is formed with the stored one, which stays stored
// until no future binding can use it, and hence not the dominated one
// either; one that dominates the stored one replaces it. So the stored
// witnesses of `S precede end of W` are the earliest send per mailbox
// rather than every send.

// summary is the witness summary of an input.
type summary struct {
	later bool  // the later of two events dominates (else the earlier)
	cols  []int // the attributes the where clause reads
	best  map[string]*entry
}

// setupSummaries gives each existential event input a summary when its
// when conjuncts allow one.
func (j *Join) setupSummaries() {
	for _, v := range j.exVars {
		in := j.in[v]
		if !in.event || in.maxLate != 0 {
			continue
		}
		dir, ok := timeDir(j.spec.When, v)
		if !ok {
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
		s := &summary{later: dir > 0, best: map[string]*entry{}}
		for a := range cols {
			s.cols = append(s.cols, a)
		}
		slices.Sort(s.cols)
		in.sum = s
	}
}

// summarize reports whether an event arriving at input in at t, with
// values vals, is dominated by the stored witness for its values, and its
// summary key. A stored witness it dominates is purged.
func (j *Join) summarize(in *joinInput, vals []algebra.Value, t algebra.Time) (string, bool) {
	s := in.sum
	var key string
	key, j.keybuf = indexKey(j.keybuf, vals, s.cols)
	old := s.best[key]
	if old == nil || old.dead {
		return key, false
	}
	if old.b == t || (old.b < t) != s.later {
		return key, true
	}
	j.kill(in, old)
	return key, false
}

// timeDir says how the when clause p depends on the time of event
// variable v: 0 not at all, -1 an earlier event satisfies it whenever a
// later one does, +1 a later one whenever an earlier one does; ok is
// false when neither holds for every binding. Only precede compares v
// (as v, begin of v or end of v, all the event itself) with times that do
// not depend on it; and, or and not combine directions.
func timeDir(p expr.Pred, v int) (int, bool) {
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
		case xv && isVarTime(p.X, v):
			return -1, true // v.e ≤ Y.b: harder as v is later
		case yv && isVarTime(p.Y, v):
			return 1, true // X.e ≤ v.b: easier as v is later
		}
		return 0, false
	case *expr.PAnd:
		return combineDir(p.X, p.Y, v)
	case *expr.POr:
		return combineDir(p.X, p.Y, v)
	case *expr.PNot:
		d, ok := timeDir(p.X, v)
		return -d, ok
	}
	return 0, false
}

func combineDir(x, y expr.Pred, v int) (int, bool) {
	a, ok1 := timeDir(x, v)
	b, ok2 := timeDir(y, v)
	switch {
	case !ok1 || !ok2 || a != 0 && b != 0 && a != b:
		return 0, false
	case a != 0:
		return a, true
	}
	return b, true
}

// isVarTime reports whether e is v, begin of v or end of v.
func isVarTime(e expr.TExpr, v int) bool {
	switch e := e.(type) {
	case *expr.TVar:
		return e.Var == v
	case *expr.TBeginEnd:
		return isVarTime(e.X, v)
	}
	return false
}
