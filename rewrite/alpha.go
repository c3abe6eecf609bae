package rewrite

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The α class: rules that shrink what α operators enable.
func alphaRules() []Rule {
	return []Rule{
		{
			Name:  "alpha-flag-select",
			Class: AlphaRules,
			Doc: `σ[p(v.F)](α_v(E)) → α_v(σ[p(1)](E)) when p mentions only v's flag
holder F (the paper's O2). α delivers only tuples whose flag holder is
enabled; enabling only the holders p accepts drops exactly the tuples σ
would drop, and leaves the others' enablement — hence their packets —
unchanged. Selections between σ[p] and α stay where they are
(selections commute).`,
			Sets:  Live,
			apply: on[*plan.Select](alphaFlagSelect),
		},
		{
			Name:  "alpha-semijoin",
			Class: AlphaRules,
			Doc: `The ResumedbyP1 chain, exact version of the paper's O3. In a block
where u is a variable over an event relation used only in (1) a where
equality u.A = v.F with v's flag holder F, (2) where conjuncts on u alone,
and (3) one when conjunct relating u and v:

  u precede end of v   (v an interval)        enable v.F from begin of u
  u precede v, u precede begin of v, or
  u precede end of v   (v an event)           enable v.F from after u
  u overlap v / v overlap u (v an event)      enable v.F at u's instant

u is removed from the block and α_v's argument becomes
E ∩ π[F = u.A](πT[from … to …](σ[(2)](u))). A tuple of v is then
delivered exactly when some u satisfying (2) with u.A = v.F satisfies (3):
for an interval v, its end is delivered when its last chronon e−1 is
enabled, i.e. e−1 ≥ u's instant s, i.e. u.e = s+1 ≤ v.e, which is "u
precede end of v"; an interval v whose begin is enabled (b ≥ s) has e−1 ≥ s
too, so no other tuple is delivered. For an event v at t, t ≥ s+1 is "u
precede v". As u contributed nothing else to the result, the join with u
was a semijoin, and the enabled α computes it (results are sets). Not in
a bag block (an aggregate's inner query), where every binding counts:
removing u would merge the bindings that differ only in u.

Why not the paper's O3 as stated: it enables the traced-then-disabled
sensor once per u and relies on the sensor disabling itself after firing.
With two waits ending on one mailbox after one send by P1, both satisfy
"S precede end of W" (TQuel does not say "the next wait"), but a sensor
disabled after the first would miss the second. Here the argument says
"from u onwards"; a D sensor that disables itself is re-armed by the
monitor while its argument still holds the entity.`,
			Sets:  Live,
			apply: on[*plan.Project](alphaSemijoin),
		},
		{
			Name:  "alpha-restrict-by-join",
			Class: AlphaRules,
			Doc: `The same shapes when u is also used elsewhere (so it stays in the
block), and additionally u overlap v for an interval v: α_v's argument
becomes E ∩ π[F = u.A](πT[from … to "forever"](σ[(2)](u′))), u′ a copy of
u's leaf. Every tuple of v that can join some u is delivered (its needed
packet falls inside the enabled span, as above), possibly with others the
join still filters out — so the result is unchanged. Requires u over an
event relation: an event is known at its instant, so the enablement it
implies is settled before v's packets need it; v must not be sampled (a
sampled tuple is seen only at sampling instants, which a later enablement
may miss).`,
			Sets:  Live,
			apply: on[*plan.Project](alphaRestrictByJoin),
		},
		{
			Name:  "alpha-entity-select",
			Class: AlphaRules,
			Doc: `Entity selections enable entities. In a block where p ranges over an
entity relation (or a derived interval relation known on time, an
aggregate's result included), joined to α_v by a where equality p.A = v.F
with v's flag holder F, with where conjuncts (2) on p alone and a when
conjunct p overlap v (the default when clause), α_v's argument becomes

  E ∩ π[F = p.A](πT[from begin of p to end of p](σ[(2)](p)))   v an event
  E ∩ π[F = p.A](πT[from begin of p to "forever"](σ[(2)](p)))  v an interval

p stays in the block. An event of v at t joins some p exactly when a tuple
of p satisfying (2) with p.A = v.F is valid at t — exactly when the
argument holds v.F at t: the sensor is enabled from the instant the entity
starts satisfying (2) and disabled when it stops, and no packet it delivers
is one the join drops. An interval v = [b, e) overlaps p = [b′, e′) only if
e−1 ≥ b′; its end packet is decided at e−1, which the argument holds from
b′ on, so every tuple that joins is delivered (a superset: the join,
still there, drops the others). Requires v not sampled (a sample at an
instant the argument did not hold would be missed) and p known on time:
each tuple of p is known at its beginning — an entity relation, or a
derived relation over such relations and traced sensors whose valid time
begins with its bindings — so the enable is set before v's packets need it.
Over an entity relation (2) must hold a conjunct other than an in-list
on p.A (p.A = K or …), which equality-constant carries to v.F without an
argument: with none, the argument would be the entity source. Live, the resident may hold such an enable
exactly while the entity's tuple satisfies (2) (wire.Command.While).`,
			Sets:  Live,
			apply: on[*plan.Project](alphaEntitySelect),
		},
		{
			Name:  "alpha-hosts",
			Class: AlphaRules,
			Doc: `σ[p(v.Host)](α_v(E)) → σ[p(v.Host)](α_v@H(E)) in a fleet's catalog,
when p mentions only v's Host attribute (the one a fleet adds, last) and
holds only where Host is one of the constants H: v.Host = "c", or a
disjunction of such (and a conjunction holds where either side does, so
a side that names hosts bounds it). α_v@H is placed on the hosts H only:
only they are asked to enable v's sensor (plan.Alpha.Hosts; H is
intersected with any placement already there). A tuple of v from another
host fails p, so σ would drop it: not asking that host for it changes no
result, and σ stays to keep the rule exact whatever the hosts send.
Selections between σ[p] and α stay where they are (selections commute).
Applies once per new placement: an α already placed on H or fewer is
left alone.`,
			Sets:  Live,
			apply: on[*plan.Select](alphaHosts),
		},
	}
}

// alphaHosts places an α on the hosts a selection over it names (rule
// alpha-hosts).
func alphaHosts(c *Context, s *plan.Select) plan.Node {
	if c.Catalog == nil || !c.Catalog.Fleet {
		return nil
	}
	between, in := selectsUnder(s)
	a, ok := in.(*plan.Alpha)
	if !ok {
		return nil
	}
	hosts, ok := namedHosts(s.Pred, a.Var, len(a.Rel.Attrs)-1)
	if !ok {
		return nil
	}
	if a.Hosts != nil {
		hosts = slices.DeleteFunc(hosts, func(h string) bool { return !slices.Contains(a.Hosts, h) })
	}
	if a.Hosts != nil && len(hosts) == len(a.Hosts) {
		return nil // placed there already
	}
	c2 := *a
	c2.Hosts = hosts
	if c2.Hosts == nil {
		c2.Hosts = []string{} // no host can hold a tuple σ keeps
	}
	x := *s
	x.In = restack(between, &c2)
	return &x
}

// namedHosts is the set of hosts (sorted) outside which e cannot hold, e
// mentioning variable v; host is the number of v's Host attribute. ok is
// false when e does not bound the hosts.
func namedHosts(e expr.Expr, v, host int) ([]string, bool) {
	b, ok := e.(*expr.Binary)
	if !ok {
		return nil, false
	}
	switch b.Op {
	case expr.OpOr:
		x, ok1 := namedHosts(b.X, v, host)
		y, ok2 := namedHosts(b.Y, v, host)
		if !ok1 || !ok2 {
			return nil, false
		}
		out := slices.Concat(x, y)
		slices.Sort(out)
		return slices.Compact(out), true
	case expr.OpAnd:
		x, ok1 := namedHosts(b.X, v, host)
		y, ok2 := namedHosts(b.Y, v, host)
		switch {
		case ok1 && ok2:
			return slices.DeleteFunc(x, func(h string) bool { return !slices.Contains(y, h) }), true
		case ok1:
			return x, true
		case ok2:
			return y, true
		}
		return nil, false
	case expr.OpEq:
		col, k, _, ok := ColConst(b)
		if !ok || col.Var != v || col.Attr != host || k.V.K != algebra.KindString {
			return nil, false
		}
		return []string{k.V.S}, true
	}
	return nil, false
}

// alpha returns the α leaf bound to variable v in a block, if any.
func (b *block) alpha(v int) (*plan.Alpha, bool) {
	a, ok := b.leaves[v].(*plan.Alpha)
	return a, ok
}

// flagOnly reports whether e mentions only attribute attr of variable v.
func flagOnly(e expr.Expr, v, attr int) bool {
	switch e := e.(type) {
	case *expr.Col:
		return e.Var == v && e.Attr == attr
	case *expr.Const:
		return true
	case *expr.Unary:
		return flagOnly(e.X, v, attr)
	case *expr.Binary:
		return flagOnly(e.X, v, attr) && flagOnly(e.Y, v, attr)
	}
	return false
}

// asColumn1 rewrites a predicate on v.F into one on column 1 of an entity
// relation.
func asColumn1(e expr.Expr) expr.Expr {
	switch e := e.(type) {
	case *expr.Col:
		return &expr.Col{Var: 0, Attr: 0, T: e.T, AttrName: "1", At: e.At}
	case *expr.Unary:
		c := *e
		c.X = asColumn1(e.X)
		return &c
	case *expr.Binary:
		c := *e
		c.X, c.Y = asColumn1(e.X), asColumn1(e.Y)
		return &c
	}
	return e
}

func alphaFlagSelect(_ *Context, s *plan.Select) plan.Node {
	// Other selections may stand between σ[p] and α: selections commute,
	// so σ[p] moves past them into α and they stay.
	between, in := selectsUnder(s)
	a, ok := in.(*plan.Alpha)
	if !ok || !flagOnly(s.Pred, a.Var, a.Rel.FlagHolder) || expr.Vars(s.Pred) == 0 {
		return nil
	}
	for _, x := range between {
		if flagOnly(x.Pred, a.Var, a.Rel.FlagHolder) && expr.Vars(x.Pred) != 0 {
			return nil // the one nearest α moves first
		}
	}
	c := *a
	c.Enable = &plan.SelectEntity{Pred: asColumn1(s.Pred), In: a.Enable}
	return restack(between, &c)
}

// selectsUnder returns the selections directly under s, nearest first,
// and what they select from.
func selectsUnder(s *plan.Select) ([]*plan.Select, plan.Node) {
	var between []*plan.Select
	in := s.In
	for {
		x, ok := in.(*plan.Select)
		if !ok {
			return between, in
		}
		between = append(between, x)
		in = x.In
	}
}

// restack puts copies of the selections between (nearest first) back over
// n.
func restack(between []*plan.Select, n plan.Node) plan.Node {
	out := n
	for i := len(between) - 1; i >= 0; i-- {
		x := *between[i]
		x.In = out
		out = &x
	}
	return out
}

// restriction is what a when conjunct relating u and v implies about the
// packets of v that can matter.
type restriction struct {
	from  expr.TExpr // the argument's valid time starts here (u's instant or after it)
	to    expr.TExpr // and ends here ("forever", or after u)
	exact bool       // delivered tuples are exactly those satisfying the conjunct
}

// isVarRef reports whether e is variable v itself, `begin of v` or `end of
// v`, and which.
func isVarRef(e expr.TExpr, v int) (kind string, ok bool) {
	switch e := e.(type) {
	case *expr.TVar:
		if e.Var == v {
			return "var", true
		}
	case *expr.TBeginEnd:
		if x, isVar := e.X.(*expr.TVar); isVar && x.Var == v {
			if e.End {
				return "end", true
			}
			return "begin", true
		}
	}
	return "", false
}

// forever is the time constant "forever", where the arguments the α join
// rules build end.
func forever() expr.TExpr { return &expr.TConst{T: algebra.Forever, Txt: "forever"} }

// analyse derives a restriction from when conjunct p for variables u
// (events) and v (an α over an event or interval relation).
func analyse(p expr.Pred, u, v int, uName string, vEvent bool) (restriction, bool) {
	c, ok := p.(*expr.PCmp)
	if !ok {
		return restriction{}, false
	}
	uVar := &expr.TVar{Var: u, Name: uName, Event: true}
	switch c.Op {
	case expr.Precede:
		// X.e ≤ Y.b with X one of u, begin of u, end of u: for an event u
		// at s, X.e = s+1 in every case.
		if _, ok := isVarRef(c.X, u); !ok {
			return restriction{}, false
		}
		yk, ok := isVarRef(c.Y, v)
		if !ok {
			return restriction{}, false
		}
		if yk == "end" && !vEvent {
			// v.e ≥ s+1: v's last chronon is at or after s.
			return restriction{from: &expr.TBeginEnd{X: uVar}, to: forever(), exact: true}, true
		}
		// v.b ≥ s+1: every chronon of v is after s. Exact for events; an
		// interval v may also be delivered by its end packet with b ≤ s.
		return restriction{from: &expr.TAfter{X: uVar}, to: forever(), exact: vEvent}, true
	case expr.Overlap:
		xu, okx := isVarRef(c.X, u)
		yv, oky := isVarRef(c.Y, v)
		if !okx || !oky {
			xu, okx = isVarRef(c.Y, u)
			yv, oky = isVarRef(c.X, v)
		}
		if !okx || !oky || xu != "var" || yv != "var" {
			return restriction{}, false
		}
		if vEvent {
			// Both events: they overlap exactly when at the same instant.
			return restriction{from: &expr.TBeginEnd{X: uVar}, to: &expr.TAfter{X: uVar}, exact: true}, true
		}
		// v.b ≤ s < v.e: v's last chronon is at or after s.
		return restriction{from: &expr.TBeginEnd{X: uVar}, to: forever(), exact: false}, true
	}
	return restriction{}, false
}

// candidate is a (u, v) pair the α join rules may use.
type candidate struct {
	u, v     int
	key      expr.Expr   // the where equality u.A = v.F
	uAttr    *expr.Col   // u.A
	uConds   []expr.Expr // where conjuncts on u alone
	when     int         // index of the when conjunct used
	r        restriction
	elimOK   bool // u is used nowhere else
	argument plan.Node
}

// candidates lists the (u, v) pairs of a block the α join rules apply to.
func (b *block) candidates() []candidate {
	var out []candidate
	for v := 0; v < b.k; v++ {
		a, ok := b.alpha(v)
		if !ok || a.Sampled() {
			continue
		}
		vEvent := a.Rel.IsEvent()
		for u := 0; u < b.k; u++ {
			if u == v || !leafIsEvent(b.leaves[u]) {
				continue
			}
			uName := leafName(b.leaves[u])
			for ci, c := range b.conds {
				uCol, ok := keyEquality(c, u, v, a.Rel.FlagHolder)
				if !ok {
					continue
				}
				for wi, w := range b.whens {
					r, ok := analyse(w, u, v, uName, vEvent)
					if !ok {
						continue
					}
					cand := candidate{u: u, v: v, key: c, uAttr: uCol, when: wi, r: r}
					uBit := uint64(1) << uint(u)
					elim := r.exact && b.targetVars()&uBit == 0 && expr.ValidVars(b.valid)&uBit == 0
					for cj, c2 := range b.conds {
						if cj == ci {
							continue
						}
						vars := expr.Vars(c2)
						if vars == uBit {
							cand.uConds = append(cand.uConds, c2)
						} else if vars&uBit != 0 {
							elim = false
						}
					}
					for wj, w2 := range b.whens {
						if wj != wi && expr.PVars(w2)&uBit != 0 {
							elim = false
						}
					}
					cand.elimOK = elim
					cand.argument = b.argument(cand)
					out = append(out, cand)
				}
			}
		}
	}
	return out
}

func leafIsEvent(n plan.Node) bool {
	switch n := n.(type) {
	case *plan.Scan:
		return n.Rel.IsEvent()
	case *plan.Alpha:
		return n.Rel.IsEvent()
	}
	return false
}

func leafName(n plan.Node) string {
	switch n := n.(type) {
	case *plan.Scan:
		return n.VarName
	case *plan.Alpha:
		return n.VarName
	}
	return ""
}

// keyEquality matches u.A = v.F (either way round) with F v's flag holder.
func keyEquality(c expr.Expr, u, v, flag int) (*expr.Col, bool) {
	bin, ok := c.(*expr.Binary)
	if !ok || bin.Op != expr.OpEq {
		return nil, false
	}
	x, okx := bin.X.(*expr.Col)
	y, oky := bin.Y.(*expr.Col)
	if !okx || !oky {
		return nil, false
	}
	if x.Var == v && x.Attr == flag && y.Var == u && algebra.Identical(x.T, y.T) {
		return y, true
	}
	if y.Var == v && y.Attr == flag && x.Var == u && algebra.Identical(x.T, y.T) {
		return x, true
	}
	return nil, false
}

// argument builds π[F = u.A](πT[from … to …](σ[u conds](u's leaf))) with u
// renumbered to the sub-block's variable 0.
func (b *block) argument(c candidate) plan.Node {
	m := make([]int, 64)
	for i := range m {
		m[i] = -1
	}
	m[c.u] = 0
	leaf := argumentLeaf(b.leaves[c.u])
	var in plan.Node = leaf
	if len(c.uConds) > 0 {
		conds := make([]expr.Expr, len(c.uConds))
		for i, x := range c.uConds {
			conds[i] = expr.Remap(x, m)
		}
		in = &plan.Select{Pred: expr.And(conds), In: in}
	}
	valid := &expr.Valid{From: expr.RemapT(c.r.from, m), To: expr.RemapT(c.r.to, m)}
	a, _ := b.alpha(c.v)
	flag := a.Rel.Attrs[a.Rel.FlagHolder]
	return &plan.Project{
		Targets: []check.Target{{Name: flag.Name, Expr: expr.Remap(c.uAttr, m)}},
		In:      &plan.ProjectT{Valid: valid, In: in},
	}
}

// argumentLeaf is a leaf as the only variable of an argument block: the
// block's variable 0, and not existential there, since its target reads it.
func argumentLeaf(n plan.Node) plan.Node {
	switch n := renumberLeaf(n, 0).(type) {
	case *plan.Scan:
		n.Exists = false
		return n
	case *plan.Alpha:
		n.Exists = false
		return n
	}
	return n
}

func renumberLeaf(n plan.Node, v int) plan.Node {
	switch n := n.(type) {
	case *plan.Scan:
		c := *n
		c.Var = v
		return &c
	case *plan.Alpha:
		c := *n
		c.Var = v
		return &c
	}
	return n
}

func alphaSemijoin(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok || b.root.Bag {
		return nil
	}
	for _, c := range b.candidates() {
		if !c.elimOK {
			continue
		}
		// Drop u: its leaf, its conjuncts and the when conjunct; renumber.
		m := make([]int, b.k)
		var leaves []plan.Node
		for i := 0; i < b.k; i++ {
			if i == c.u {
				m[i] = -1
				continue
			}
			m[i] = len(leaves)
			leaf := b.leaves[i]
			if i == c.v {
				a := *leaf.(*plan.Alpha)
				a.Enable = &plan.SetOp{L: a.Enable, R: c.argument}
				leaf = &a
			}
			leaves = append(leaves, renumberLeaf(leaf, m[i]))
		}
		uBit := uint64(1) << uint(c.u)
		var conds []expr.Expr
		for _, x := range b.conds {
			if expr.Vars(x)&uBit == 0 {
				conds = append(conds, expr.Remap(x, m))
			}
		}
		var whens []expr.Pred
		for i, w := range b.whens {
			if i != c.when {
				whens = append(whens, expr.RemapP(w, m))
			}
		}
		targets := make([]check.Target, len(b.root.Targets))
		for i, t := range b.root.Targets {
			targets[i] = check.Target{Name: t.Name, Expr: expr.Remap(t.Expr, m), Pos: t.Pos}
		}
		return rebuild(targets, expr.RemapValid(b.valid, m), conds, whens, leaves, b.root.Bag)
	}
	return nil
}

func alphaRestrictByJoin(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok {
		return nil
	}
	for _, c := range b.candidates() {
		if c.elimOK {
			continue // alpha-semijoin's case
		}
		a, _ := b.alpha(c.v)
		mark := leafName(b.leaves[c.u]) + ": " + c.key.String() + " when " + b.whens[c.when].String()
		if slices.Contains(a.Restricted, mark) {
			continue
		}
		// The argument's valid time ends at forever: a superset is enough.
		arg := c.argument.(*plan.Project)
		pt := arg.In.(*plan.ProjectT)
		if _, isEnd := pt.Valid.To.(*expr.TConst); !isEnd {
			pt2 := *pt
			pt2.Valid = &expr.Valid{From: pt.Valid.From, To: forever()}
			arg2 := *arg
			arg2.In = &pt2
			c.argument = &arg2
		}
		v := c.v
		return mapLeaves(pr, func(l plan.Node) plan.Node {
			al, ok := l.(*plan.Alpha)
			if !ok || al.Var != v {
				return l
			}
			cp := *al
			cp.Enable = &plan.SetOp{L: al.Enable, R: c.argument}
			cp.Restricted = append(append([]string(nil), al.Restricted...), mark)
			return &cp
		})
	}
	return nil
}

// entityLeaf reports whether a block leaf is a scan the α entity-selection
// rule may read an argument from: an entity relation, or a derived interval
// relation known on time.
func entityLeaf(n plan.Node) (*plan.Scan, bool) {
	sc, ok := n.(*plan.Scan)
	if !ok || sc.Rel.IsClock() {
		return nil, false
	}
	switch {
	case sc.Rel.Class == algebra.ClassEntity && !sc.Rel.Derived:
		return sc, true
	case sc.Rel.Derived && !sc.Rel.IsEvent() && sc.From != nil:
		return sc, onTime(sc.From, 0)
	}
	return nil, false
}

// maxOnTimeDepth bounds onTime's walk through derived relations (a program
// declares finitely many; the bound keeps a hostile one from recursing far).
const maxOnTimeDepth = 16

// onTime reports whether every tuple of r's result is known at its
// beginning: r reads only entity relations, traced sensors whose tuples
// are seen when they begin (events, traced intervals — not sampled, not
// traced-then-disabled intervals, which are seen at their end) and derived
// relations known on time, and its valid time begins with its bindings
// (the default valid clause: the overlap of its variables, which begins
// when the last of them does, known then) — its aggregates likewise
// (their inner queries have the default valid clause).
func onTime(r *check.Retrieve, depth int) bool {
	if depth > maxOnTimeDepth || !r.ValidDefault {
		return false
	}
	for _, v := range r.Vars {
		if !relOnTime(v, depth) {
			return false
		}
	}
	for _, g := range r.Aggs {
		if g.Inner == nil {
			continue
		}
		for _, v := range g.Inner.Vars {
			if !relOnTime(v, depth) {
				return false
			}
		}
		for _, inner := range g.Inner.Aggs {
			if inner.Inner != nil && !onTime(inner.Inner, depth+1) {
				return false
			}
		}
	}
	return true
}

func relOnTime(v *check.Var, depth int) bool {
	rel := v.Rel
	switch {
	case rel.Derived:
		return v.From != nil && onTime(v.From, depth+1)
	case rel.Class == algebra.ClassEntity, rel.IsClock():
		return true
	case rel.Strategy.Kind == algebra.Sampled:
		return false
	case rel.Strategy.Kind == algebra.TracedThenDisabled:
		return rel.IsEvent()
	}
	return true
}

// overlapWhen reports whether when conjunct w implies that p and v
// overlap: an overlap chain `a overlap b overlap …` (their intersection is
// not empty, so every two of them overlap) in which both p and v appear
// themselves (not `begin of` or `end of` them).
func overlapWhen(w expr.Pred, p, v int) bool {
	c, ok := w.(*expr.PCmp)
	if !ok || c.Op != expr.Overlap {
		return false
	}
	var sawP, sawV bool
	var walk func(e expr.TExpr) bool
	walk = func(e expr.TExpr) bool {
		if b, ok := e.(*expr.TBinary); ok {
			return !b.Extend && walk(b.X) && walk(b.Y)
		}
		if k, ok := isVarRef(e, p); ok && k == "var" {
			sawP = true
		}
		if k, ok := isVarRef(e, v); ok && k == "var" {
			sawV = true
		}
		return true
	}
	return walk(c.X) && walk(c.Y) && sawP && sawV
}

func alphaEntitySelect(_ *Context, pr *plan.Project) plan.Node {
	b, ok := decompose(pr)
	if !ok {
		return nil
	}
	for v := 0; v < b.k; v++ {
		a, ok := b.alpha(v)
		if !ok || a.Sampled() {
			continue
		}
		for p := 0; p < b.k; p++ {
			sc, ok := entityLeaf(b.leaves[p])
			if p == v || !ok {
				continue
			}
			pBit := uint64(1) << uint(p)
			for ci, c := range b.conds {
				pCol, ok := keyEquality(c, p, v, a.Rel.FlagHolder)
				if !ok {
					continue
				}
				for wi, w := range b.whens {
					if !overlapWhen(w, p, v) {
						continue
					}
					cand := candidate{u: p, v: v, key: c, uAttr: pCol, when: wi}
					for cj, c2 := range b.conds {
						if cj != ci && expr.Vars(c2) == pBit {
							cand.uConds = append(cand.uConds, c2)
						}
					}
					// In-lists on the key (p.A = K …) reach v's flag holder
					// through equality-constant, which needs no entity
					// argument; any other conjunct selects entities.
					selective := sc.Rel.Derived
					for _, x := range cand.uConds {
						if _, _, ok := inList(x); !ok || !flagOnly(x, p, pCol.Attr) {
							selective = true
						}
					}
					if !selective {
						continue
					}
					pv := &expr.TVar{Var: p, Name: sc.VarName}
					cand.r = restriction{from: &expr.TBeginEnd{X: pv}, to: &expr.TBeginEnd{End: true, X: pv}}
					if !a.Rel.IsEvent() {
						cand.r.to = forever()
					}
					mark := sc.VarName + ": " + c.String() + " while " + w.String()
					if slices.Contains(a.Restricted, mark) {
						continue
					}
					arg := b.argument(cand)
					return mapLeaves(pr, func(l plan.Node) plan.Node {
						al, ok := l.(*plan.Alpha)
						if !ok || al.Var != v {
							return l
						}
						cp := *al
						cp.Enable = &plan.SetOp{L: al.Enable, R: arg}
						cp.Restricted = append(append([]string(nil), al.Restricted...), mark)
						return &cp
					})
				}
			}
		}
	}
	return nil
}
