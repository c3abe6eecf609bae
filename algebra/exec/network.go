package exec

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Stmt is one retrieve compiled into operators.
type Stmt struct {
	Retrieve *check.Retrieve
	Plan     plan.Node
	Join     *Join
	// Select runs the block instead of Join when it has one variable and
	// its results are valid at their tuples' own times (select.go).
	Select   *Select
	Coalesce *Coalesce
	Result   *Collector
	// Columnar says RunHistory evaluated the statement over its
	// relation's columns (columnar.go), not through Select and Coalesce.
	Columnar bool
	out      *stream.Tee // the coalesced result, to the collector and later statements
}

// Network is the update network of a sequence of retrieves.
type Network struct {
	Stmts []*Stmt
	// Sources maps each always-available relation a statement reads
	// (entity relations, relations without a sensor of their own) — and in
	// plain history runs every primitive relation — to the tee that feeds
	// every reader.
	Sources map[string]*stream.Tee
	// Clocks maps n to the tee of Clock[n].
	Clocks map[int64]*stream.Tee
	// Heartbeat receives only Advance: it drives statements without range
	// variables.
	Heartbeat *stream.Tee
	// ClockPeriod is the base Clock period.
	ClockPeriod int64
	// Alphas are the α operators, each after those its arguments read.
	Alphas []*Alpha
	// Consts are constant entity relations (α arguments).
	Consts []*ConstSource
	// Fused counts the aggregates compiled into a FusedAgg
	// (count_fused.go) rather than the general operators.
	Fused int
	// fused are those operators.
	fused []*FusedAgg
	// Skipped counts the source tuples the driver (RunHistory, RunSource)
	// did not play because every reader rejects them for their values.
	Skipped int

	st      *runState
	holders []holding
	peak    int
	opts    Options
	byStmt  map[*check.Retrieve]*Stmt
	cur     *check.Retrieve // the statement being compiled
	// alphaBy are the αs built, by their relation and plan text, when
	// Options.ShareAlphas.
	alphaBy map[string]*Alpha
}

// ConstSource is a constant entity relation: its values valid over all
// time. The driver starts it.
type ConstSource struct {
	Vals []algebra.Value
	Out  *stream.Tee
}

// Options tune a network without changing its results.
type Options struct {
	// SweepMin is the number of stored tuples at which a join input is
	// first swept for tuples no future binding can use (default 64; tests
	// use 1 to sweep at every step).
	SweepMin int
	// Resident, if set, is told of every enable and disable α operators
	// make.
	Resident Resident
	// Budget, if set, bounds the memory the run holds (budget.go).
	Budget *Budget
	// Gaps, if set, says where primitive relations were not observed:
	// each statement's result is cut out of the gaps of the relations it
	// reads (Cut).
	// In a fleet's catalog, a statement whose every result tuple names
	// its host (hostColumn) is cut out of that host's gaps only
	// (HostCut, Gaps of HostPart), not every host's.
	Gaps Gaps
	// collide (tests only) makes every key's hash one of two values, so
	// that Coalesce and join indexes must tell colliding keys apart.
	collide bool
	// NoColumnar makes RunHistory play every statement through the row
	// operators, never the columnar path (columnar.go): for comparisons.
	NoColumnar bool
	// Observed says the run is an observation (a live run, or a recording
	// with a window): its results drop what lies at forever (Collector).
	Observed bool
	// ShareAlphas builds one α operator for plan αs that are the same —
	// the same relation and the same plan text (variable, kept
	// attributes, hosts, and the enable and sampling arguments' plans):
	// their outputs are the same stream, which one operator makes once
	// (a count's inner query over the same variable as its outer one
	// reads every packet once, not twice). Alpha.Plans lists the plan αs
	// it stands for. Statistics per α count a shared one once.
	ShareAlphas bool
	// NoFused makes Build compile every aggregate into the general
	// operators (Select, Coalesce, Apply), never a FusedAgg
	// (count_fused.go): for comparisons.
	NoFused bool
	// generalJoin (tests only) keeps joins off their special paths
	// (JoinSpec.InOrder), so that tests can compare the two.
	generalJoin bool
}

// Build compiles plans (one per statement, in order) into a network.
func Build(cat *algebra.Catalog, stmts []*check.Retrieve, plans []plan.Node, opts Options) (*Network, error) {
	n := &Network{
		Sources:     map[string]*stream.Tee{},
		Clocks:      map[int64]*stream.Tee{},
		Heartbeat:   &stream.Tee{},
		ClockPeriod: algebra.DefaultClockPeriod,
		st:          &runState{hash: algebra.HashTuple},
		opts:        opts,
		byStmt:      map[*check.Retrieve]*Stmt{},
	}
	reads := map[*check.Retrieve][]string{}
	if cat != nil {
		n.ClockPeriod = cat.ClockPeriod
	}
	if opts.collide {
		n.st.hash = func(vals []algebra.Value) uint64 { return algebra.HashTuple(vals) & 1 }
	}
	if b := opts.Budget; b != nil && b.Limit > 0 {
		n.st.check = n.checkBudget
	}
	for i, r := range stmts {
		n.cur = r
		s := &Stmt{Retrieve: r, Plan: plans[i]}
		s.Result = NewCollector(r.Result)
		s.Result.Observed = opts.Observed
		var out *stream.Tee
		var ops blockOps
		var err error
		if ap, ok := plans[i].(*plan.Apply); ok {
			out, err = n.apply(ap)
		} else {
			out, ops, err = n.block(plans[i])
		}
		if err != nil {
			if r.Name != "" {
				return nil, fmt.Errorf("%s: %w", r.Name, err)
			}
			return nil, err
		}
		if opts.Gaps != nil {
			reads[r] = primitiveReads(plans[i], reads)
			if len(reads[r]) > 0 {
				cut := &stream.Tee{}
				if col := hostColumn(r); cat != nil && cat.Fleet && col >= 0 {
					out.Add(NewHostCut(reads[r], opts.Gaps, col, cut))
				} else {
					out.Add(NewCut(reads[r], opts.Gaps, cut))
				}
				out = cut
			}
		}
		s.out, s.Join, s.Select, s.Coalesce = out, ops.j, ops.sel, ops.c
		out.Add(s.Result)
		n.byStmt[r] = s
		n.Stmts = append(n.Stmts, s)
	}
	return n, nil
}

// blockOps are the operators of a retrieve block: a Join or a Select, and
// a Coalesce unless the result is a bag.
type blockOps struct {
	j   *Join
	sel *Select
	c   *Coalesce
}

// block compiles a retrieve block (π over πT over σ, σT, ×, ⋈ of leaves)
// into a Join (a Select when it qualifies) and a Coalesce, and returns the
// coalesced output.
func (n *Network) block(root plan.Node) (*stream.Tee, blockOps, error) {
	var ops blockOps
	spec, leaves, err := compileBlock(root)
	if err != nil {
		return nil, ops, err
	}
	srcs := make([]*stream.Tee, len(leaves))
	spec.MaxLate = make([]algebra.Time, len(leaves))
	for v, leaf := range leaves {
		t, late, err := n.rel(leaf)
		if err != nil {
			return nil, ops, err
		}
		srcs[v], spec.MaxLate[v] = t, late
	}
	out := &stream.Tee{}
	var jout stream.Receiver = out
	if pr, _ := root.(*plan.Project); pr == nil || !pr.Bag {
		ops.c = NewCoalesce(out)
		ops.c.hash = n.st.hash
		jout = ops.c
	}
	// An α over an interval relation may deliver a tuple whole, at its end,
	// whatever its MaxLate says: a kernel sensor bound from … to … reports
	// each tuple once it ends, and a tuple already valid when its sensor
	// was enabled is delivered whole (remote/observe.go). Only a Join
	// consumes Whole and Late elements, so such a block is never a Select.
	whole, alpha := false, false
	for _, leaf := range leaves {
		if a, ok := leaf.(*plan.Alpha); ok {
			alpha = true
			whole = whole || !a.Rel.IsEvent()
		}
	}
	spec.InOrder = !alpha && !n.opts.generalJoin
	if !whole && selectable(&spec) {
		ops.sel = NewSelect(spec, jout, n.st)
		n.hold(ops.sel, blockLabel(leaves))
		srcs[0].Add(ops.sel)
	} else {
		ops.j = NewJoin(spec, jout, n.st, n.opts.SweepMin)
		n.hold(ops.j, blockLabel(leaves))
		if len(leaves) == 0 {
			n.Heartbeat.Add(ops.j.Input(0))
		}
		for v, t := range srcs {
			t.Add(ops.j.Input(v))
		}
	}
	if ops.c != nil {
		n.hold(ops.c, "coalesce")
	}
	return out, ops, nil
}

func (n *Network) sourceTee(name string) *stream.Tee {
	t := n.Sources[name]
	if t == nil {
		t = &stream.Tee{}
		n.Sources[name] = t
	}
	return t
}

func (n *Network) clockTee(c int64) *stream.Tee {
	t := n.Clocks[c]
	if t == nil {
		t = &stream.Tee{}
		n.Clocks[c] = t
	}
	return t
}

// rel compiles a relation-valued node into a stream, with a bound on how
// late its tuples may come.
func (n *Network) rel(node plan.Node) (*stream.Tee, algebra.Time, error) {
	switch x := node.(type) {
	case *plan.Scan:
		switch {
		case x.Rel.IsClock():
			return n.clockTee(x.Rel.ClockN), 0, nil
		case x.From != nil:
			s := n.byStmt[x.From]
			if s == nil {
				return nil, 0, fmt.Errorf("%s is read before it is derived", x.Rel.Name)
			}
			return s.out, 0, nil
		}
		return n.sourceTee(x.Rel.Name), 0, nil
	case *plan.Alpha:
		return n.alpha(x)
	case *plan.EntitySource:
		id := x.Rel.Attrs[0]
		v := &expr.TVar{Var: 0, Name: x.Rel.Name}
		block := &plan.Project{
			Targets: []check.Target{{Name: id.Name, Expr: &expr.Col{Var: 0, Attr: 0, T: id.Type, VarName: x.Rel.Name, AttrName: id.Name}}},
			In: &plan.ProjectT{
				Valid: &expr.Valid{From: &expr.TBeginEnd{X: v}, To: &expr.TBeginEnd{End: true, X: v}},
				In:    &plan.Scan{Var: 0, VarName: x.Rel.Name, Rel: x.Rel},
			},
		}
		out, _, err := n.block(block)
		return out, 0, err
	case *plan.Const:
		c := &ConstSource{Vals: x.Vals, Out: &stream.Tee{}}
		n.Consts = append(n.Consts, c)
		return c.Out, 0, nil
	case *plan.Empty:
		c := &ConstSource{Out: &stream.Tee{}}
		n.Consts = append(n.Consts, c)
		return c.Out, 0, nil
	case *plan.ClockSrc:
		return n.clockTee(x.N), 0, nil
	case *plan.SelectEntity:
		in, late, err := n.rel(x.In)
		if err != nil {
			return nil, 0, err
		}
		out := &stream.Tee{}
		in.Add(NewFilter(x.Pred, out, n.st))
		return out, late, nil
	case *plan.SetOp:
		l, _, err := n.rel(x.L)
		if err != nil {
			return nil, 0, err
		}
		r, _, err := n.rel(x.R)
		if err != nil {
			return nil, 0, err
		}
		out := &stream.Tee{}
		op := NewSetOp(x.Union, out)
		n.hold(op, "set operation "+x.Label())
		l.Add(op.Input(0))
		r.Add(op.Input(1))
		return out, 0, nil
	case *plan.Project:
		out, _, err := n.block(x)
		return out, 0, err
	case *plan.Apply:
		out, err := n.apply(x)
		return out, 0, err
	case *plan.AllOf:
		return nil, 0, fmt.Errorf("%s can only be a whole α argument", x.Label())
	}
	return nil, 0, fmt.Errorf("operator %s does not make a relation here", node.Label())
}

// alpha compiles an α operator and its arguments (or, sharing αs, finds
// the same one built).
func (n *Network) alpha(x *plan.Alpha) (*stream.Tee, algebra.Time, error) {
	var key string
	if n.opts.ShareAlphas {
		key = x.Rel.Name + "\x00" + plan.String(x)
		if a := n.alphaBy[key]; a != nil {
			a.Plans = append(a.Plans, x)
			return a.out, a.MaxLate, nil
		}
	}
	a := &Alpha{Plan: x, Plans: []*plan.Alpha{x}, Rel: x.Rel, VarName: x.VarName, Kind: x.Rel.Strategy.Kind, Flag: x.Rel.FlagHolder,
		Keep: x.Keep, drop: dropped(x.Keep, len(x.Rel.Attrs)), out: &stream.Tee{}, res: n.opts.Resident, begun: map[uint64]*stream.Rec{}}
	if _, all := x.Enable.(*plan.AllOf); !all {
		t, _, err := n.rel(x.Enable)
		if err != nil {
			return nil, 0, err
		}
		a.enable = newArgState(a, false)
		t.Add(a.enable)
	}
	if x.When != nil {
		t, _, err := n.rel(x.When)
		if err != nil {
			return nil, 0, err
		}
		a.when = newArgState(a, true)
		t.Add(a.when)
	}
	// How late can a tuple come?
	switch {
	case x.Rel.IsEvent():
		a.MaxLate = 0
	case a.Kind == algebra.TracedThenDisabled, x.Rel.Strategy.Whole:
		a.MaxLate = algebra.Forever // reported whole, at its end
	case a.Kind == algebra.Sampled:
		a.MaxLate = algebra.Forever
		if c, ok := x.When.(*plan.ClockSrc); ok && plan.Covering(x.Enable) {
			// Seen at the first tick at or after its begin.
			a.MaxLate = max(c.N*n.ClockPeriod-1, 1)
		}
	case !plan.Covering(x.Enable):
		a.MaxLate = algebra.Forever // may be seen only at its end
	}
	n.Alphas = append(n.Alphas, a)
	if key != "" {
		if n.alphaBy == nil {
			n.alphaBy = map[string]*Alpha{}
		}
		n.alphaBy[key] = a
	}
	n.hold(a, "α "+x.VarName)
	return a.out, a.MaxLate, nil
}

// compileBlock flattens a retrieve's plan — π over πT over any tree of σ,
// σT, × and ⋈ over scans and α operators — into a JoinSpec. The leaves come
// back indexed by variable.
func compileBlock(root plan.Node) (JoinSpec, []plan.Node, error) {
	var spec JoinSpec
	pr, ok := root.(*plan.Project)
	if !ok {
		return spec, nil, fmt.Errorf("plan root is %s, want π", root.Label())
	}
	pt, ok := pr.In.(*plan.ProjectT)
	if !ok {
		return spec, nil, fmt.Errorf("π input is %s, want πT", pr.In.Label())
	}
	for _, t := range pr.Targets {
		spec.Targets = append(spec.Targets, t.Expr)
	}
	spec.Valid = pt.Valid
	var whens []expr.Pred
	leaves := map[int]plan.Node{}
	unit := false
	products, overlaps := 0, 0
	exists := map[int]bool{} // variables under the right of a semi-join
	var walk func(n plan.Node, ex bool) error
	walk = func(n plan.Node, ex bool) error {
		switch n := n.(type) {
		case *plan.Select:
			spec.Conds = append(spec.Conds, expr.Conjuncts(n.Pred)...)
			return walk(n.In, ex)
		case *plan.SelectT:
			whens = append(whens, expr.PConjuncts(n.Pred)...)
			return walk(n.In, ex)
		case *plan.Product:
			products++
			if n.Overlap {
				overlaps++
			}
			if err := walk(n.L, ex); err != nil {
				return err
			}
			return walk(n.R, ex || n.Semi)
		case *plan.Join:
			products++
			if n.Overlap {
				overlaps++
			}
			spec.Conds = append(spec.Conds, n.On...)
			if err := walk(n.L, ex); err != nil {
				return err
			}
			return walk(n.R, ex || n.Semi)
		case *plan.Scan:
			if _, dup := leaves[n.Var]; dup {
				return fmt.Errorf("variable %s scanned twice", n.VarName)
			}
			leaves[n.Var] = n
			exists[n.Var] = ex
			return nil
		case *plan.Alpha:
			if _, dup := leaves[n.Var]; dup {
				return fmt.Errorf("variable %s scanned twice", n.VarName)
			}
			leaves[n.Var] = n
			exists[n.Var] = ex
			return nil
		case *plan.Unit:
			unit = true
			return nil
		}
		return fmt.Errorf("operator %s cannot appear inside a retrieve block", n.Label())
	}
	if err := walk(pt.In, false); err != nil {
		return spec, nil, err
	}
	spec.When = expr.PAndOf(whens)
	spec.OverlapPurge = products > 0 && overlaps == products
	out := make([]plan.Node, len(leaves))
	for v, s := range leaves {
		if v < 0 || v >= len(out) {
			return spec, nil, fmt.Errorf("variable %s has index %d of %d", s.Label(), v, len(out))
		}
		out[v] = s
		spec.Events = append(spec.Events, false)
	}
	for v, s := range out {
		if s == nil {
			return spec, nil, fmt.Errorf("variable %d is not scanned", v)
		}
		switch l := s.(type) {
		case *plan.Scan:
			spec.Events[v] = l.Rel.IsEvent()
		case *plan.Alpha:
			spec.Events[v] = l.Rel.IsEvent()
		}
	}
	if unit && len(out) > 0 {
		return spec, nil, fmt.Errorf("unit relation beside scans")
	}
	spec.Exists = existential(&spec, exists, len(out), pr.Bag)
	bindTimes(&spec, len(out))
	return spec, out, nil
}

// existential returns, for a block's k variables, which the join may treat
// as existential: those a semi-join marks (marked), provided none of them
// is read by a target, the valid clause or a where conjunct with begin of
// or end of, the result is a set (not bag) and some variable is not
// existential. nil when there are none.
func existential(spec *JoinSpec, marked map[int]bool, k int, bag bool) []bool {
	if bag {
		return nil
	}
	used := expr.ResultVars(spec.Targets, spec.Valid, spec.Conds)
	out := make([]bool, k)
	some, all := false, true
	for v := range out {
		out[v] = marked[v] && used&(1<<uint(v)) == 0
		some = some || out[v]
		all = all && out[v]
	}
	if !some || all {
		return nil
	}
	return out
}

// bindTimes moves the `begin of` / `end of` values the targets and where
// conjuncts use into spec.Times, as attributes of pseudo-variable k, and
// the conjuncts that use them into spec.TimeConds.
func bindTimes(spec *JoinSpec, k int) {
	idx := map[string]int{}
	bind := func(e expr.Expr) expr.Expr {
		return expr.ReplaceLeaves(e, func(x expr.Expr) expr.Expr {
			t, ok := x.(*expr.TimeOf)
			if !ok {
				return nil
			}
			key := expr.Key(t)
			i, ok := idx[key]
			if !ok {
				i = len(spec.Times)
				idx[key] = i
				spec.Times = append(spec.Times, t)
			}
			return &expr.Col{Var: k, Attr: i, T: algebra.TypeTime, AttrName: t.String(), At: t.At}
		})
	}
	for i, t := range spec.Targets {
		if expr.HasTimeOf(t) {
			spec.Targets[i] = bind(t)
		}
	}
	conds := spec.Conds[:0:0]
	for _, c := range spec.Conds {
		if expr.HasTimeOf(c) {
			spec.TimeConds = append(spec.TimeConds, bind(c))
		} else {
			conds = append(conds, c)
		}
	}
	spec.Conds = conds
}

// Err is the first runtime error of the run, if any.
func (n *Network) Err() error { return n.st.err }

// hold registers an operator that keeps tuples, named op in messages.
func (n *Network) hold(h holder, op string) {
	n.holders = append(n.holders, holding{h: h, op: op, stmt: n.cur})
}

// blockLabel names a retrieve block's join by its variables.
func blockLabel(leaves []plan.Node) string {
	names := make([]string, len(leaves))
	for v, l := range leaves {
		switch l := l.(type) {
		case *plan.Scan:
			names[v] = l.VarName
		case *plan.Alpha:
			names[v] = l.VarName
		}
	}
	switch len(names) {
	case 0:
		return "retrieve block"
	case 1:
		return "selection of " + names[0]
	}
	return "join of " + strings.Join(names, ", ")
}

// Held is the number of tuples the operators hold now.
func (n *Network) Held() int {
	total := 0
	for _, h := range n.holders {
		total += h.h.Held()
	}
	return total
}

// PeakHeld is the largest Held seen by the driver.
func (n *Network) PeakHeld() int { return n.peak }

// notePeak notes the tuples held at an advance of time, and checks the
// budget.
func (n *Network) notePeak() {
	if h := n.Held(); h > n.peak {
		n.peak = h
	}
	if n.st.check != nil {
		n.st.check()
	}
}

// apply compiles an apply and the aggregates under it.
func (n *Network) apply(x *plan.Apply) (*stream.Tee, error) {
	if out, ok, err := n.fusedApply(x); ok || err != nil {
		return out, err
	}
	outer, _, err := n.rel(x.In)
	if err != nil {
		return nil, err
	}
	spec := ApplySpec{Pred: x.Pred, Bag: x.Bag}
	for _, t := range x.Targets {
		spec.Targets = append(spec.Targets, t.Expr)
	}
	var inners []*stream.Tee
	for j, g := range x.Aggs {
		in, _, err := n.rel(g.In)
		if err != nil {
			return nil, err
		}
		inners = append(inners, in)
		at, ok := argType(g.In)
		if !ok {
			return nil, fmt.Errorf("aggregate %s: its input is %s, want a query", g.Text, g.In.Label())
		}
		spec.Aggs = append(spec.Aggs, AggSpec{Func: g.Func, Param: g.Param, Window: g.Window, NBy: g.NBy, ArgType: at, Group: x.Groups[j]})
	}
	out := &stream.Tee{}
	var dst stream.Receiver = out
	if !x.Bag {
		c := NewCoalesce(out)
		c.hash = n.st.hash
		n.hold(c, "coalesce")
		dst = c
	}
	op := NewApply(spec, dst, n.st)
	op.byHash = n.opts.collide
	n.hold(op, "aggregate")
	outer.Add(op.Input(0))
	for j, in := range inners {
		in.Add(op.Input(j + 1))
	}
	return out, nil
}

// argType is the type of an aggregate's argument: its inner query's last
// column.
func argType(n plan.Node) (algebra.Type, bool) {
	switch n := n.(type) {
	case *plan.Project:
		if len(n.Targets) > 0 {
			return n.Targets[len(n.Targets)-1].Expr.Type(), true
		}
	case *plan.Apply:
		if len(n.Targets) > 0 {
			return n.Targets[len(n.Targets)-1].Expr.Type(), true
		}
	}
	return algebra.Type{}, false
}
