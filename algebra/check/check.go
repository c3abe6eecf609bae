package check

import (
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
)

// Options are the inputs of checking that do not come from the query text.
type Options struct {
	// Params are the values of $NAME references (--param NAME=VALUE).
	Params map[string]string
	// Now is the time the constant "now" stands for.
	Now algebra.Time
	// NowFunc, when set, gives Now instead, asked the first time a query
	// names now: a recording's end may take reading it to know.
	NowFunc func() algebra.Time
}

// Var is a range variable of a retrieve.
type Var struct {
	Name string
	Rel  *algebra.Relation
	// From is the retrieve that derived Rel, when Rel is a derived relation.
	From *Retrieve
	Pos  source.Pos // where the variable was declared
}

// Target is one column of a retrieve's result.
type Target struct {
	Name string
	Expr expr.Expr
	Pos  source.Pos
}

// Retrieve is a checked retrieve statement.
type Retrieve struct {
	// Name names the result; "" for an anonymous retrieve.
	Name string
	File string
	Pos  source.Pos
	// Vars are the range variables the statement uses outside aggregates, in
	// the order they were declared.
	Vars    []*Var
	Targets []Target
	// Where is the value qualification (nil when absent).
	Where expr.Expr
	// When is the temporal predicate, the default one when absent.
	When        expr.Pred
	WhenDefault bool
	// Valid is the valid clause, the default one when absent.
	Valid        *expr.Valid
	ValidDefault bool
	// Result is the schema of the result relation.
	Result *algebra.Relation
	// Text is the statement's source text.
	Text string
	// Aggs are the aggregate terms of the targets and the where clause;
	// expr.AggRef.Index indexes them.
	Aggs []*Agg
	// Bag marks an aggregate's inner query: every binding is a tuple of
	// its result (nothing is coalesced), and it is never named.
	Bag bool
	// Exists marks the existential variables, indexed like Vars (nil when
	// there are none): those that no target, no valid clause, no by list
	// of an aggregate and no where conjunct with begin of, end of or an
	// aggregate reads. They only decide whether a binding of the other
	// variables has a result — every tuple of theirs that satisfies the
	// where and when clauses gives the same result tuple — so one witness
	// is enough (the rewriter's semi-join rule reads these marks). A bag
	// has none: there every binding counts.
	Exists []bool
}

// Agg is a checked aggregate term. Its variables are its own (Quel's
// rule): it is correlated with the enclosing query only through its by
// list, whose variables are variables of the enclosing query too.
type Agg struct {
	Func   expr.AggFunc
	Param  *big.Rat // percentile's p, histogram's bucket width; nil for the others
	Window expr.Window
	// By are the by-list expressions over the enclosing query's variables:
	// they pick the group whose value the enclosing query sees.
	By []expr.Expr
	// Inner is the aggregate's own query, a bag: its targets are the
	// by-list expressions over its variables, then the argument; its
	// valid time is the default one (its variables' overlap).
	Inner *Retrieve
	// T is the aggregate's type.
	T    algebra.Type
	At   source.Pos
	Text string // as written
}

// VarNames lists the names of the statement's variables.
func (r *Retrieve) VarNames() []string {
	n := make([]string, len(r.Vars))
	for i, v := range r.Vars {
		n[i] = v.Name
	}
	return n
}

type rangeDecl struct {
	v   *Var
	seq int
}

// Session checks statements against a catalog, keeping range declarations
// and derived relations from one Check call to the next.
type Session struct {
	cat     *algebra.Catalog
	opts    Options
	ranges  map[string]*rangeDecl
	seq     int
	derived map[string]*Retrieve
}

// now is the time "now" stands for (Options.NowFunc asked once).
func (s *Session) now() algebra.Time {
	if s.opts.NowFunc != nil {
		s.opts.Now, s.opts.NowFunc = s.opts.NowFunc(), nil
	}
	return s.opts.Now
}

// NewSession starts a session over a catalog (which it does not modify).
func NewSession(cat *algebra.Catalog, opts Options) *Session {
	return &Session{
		cat:     cat.Clone(),
		opts:    opts,
		ranges:  map[string]*rangeDecl{},
		derived: map[string]*Retrieve{},
	}
}

// Clone returns an independent copy of the session: checking with it
// leaves s unchanged (for explaining a statement without running it).
func (s *Session) Clone() *Session {
	c := &Session{cat: s.cat.Clone(), opts: s.opts, ranges: map[string]*rangeDecl{}, seq: s.seq, derived: map[string]*Retrieve{}}
	for k, v := range s.ranges {
		c.ranges[k] = v
	}
	for k, v := range s.derived {
		c.derived[k] = v
	}
	return c
}

// SetParams replaces the values of $NAME references for later checks.
func (s *Session) SetParams(p map[string]string) { s.opts.Params = p }

// Derived returns the retrieve that derived the relation name, or nil.
func (s *Session) Derived(name string) *Retrieve { return s.derived[name] }

// Catalog returns the session's catalog, including derived relations.
func (s *Session) Catalog() *algebra.Catalog { return s.cat }

// RangeVars lists the declared range variables and their relations, sorted
// by name (for completion and help).
func (s *Session) RangeVars() map[string]string {
	m := map[string]string{}
	for n, d := range s.ranges {
		m[n] = d.v.Rel.Name
	}
	return m
}

// Check checks the statements of f. Range declarations take effect only if
// the whole file checks; so do derived relations. Each retrieve records its
// text as f holds it (tquel.File.StmtText).
func (s *Session) Check(f *tquel.File) ([]*Retrieve, error) {
	// Work on copies so a file with errors leaves the session unchanged.
	ranges := make(map[string]*rangeDecl, len(s.ranges))
	for k, v := range s.ranges {
		ranges[k] = v
	}
	cat := s.cat.Clone()
	derived := make(map[string]*Retrieve, len(s.derived))
	for k, v := range s.derived {
		derived[k] = v
	}
	seq := s.seq
	// failed holds range variables whose declaration in this file failed:
	// their uses are not reported again.
	failed := map[string]bool{}

	rep := &report{file: f.Name, src: f.Src}
	var out []*Retrieve
	for i, st := range f.Stmts {
		switch st := st.(type) {
		case *tquel.RangeStmt:
			seq++
			v := s.checkRange(st, cat, derived, rep)
			if v != nil {
				ranges[v.Name] = &rangeDecl{v: v, seq: seq}
				delete(failed, v.Name)
			} else {
				delete(ranges, st.Var.Name)
				failed[st.Var.Name] = true
			}
		case *tquel.RetrieveStmt:
			c := &stmtChecker{s: s, rep: rep, ranges: ranges, failed: failed}
			r := c.retrieve(st)
			if r == nil {
				continue
			}
			r.Text = f.StmtText(i)
			if r.Name != "" {
				if old := cat.Lookup(r.Name); old != nil && old.Builtin {
					rep.builtinResult(st.Name.At, r.Name)
					continue
				} else if old != nil {
					rep.alreadyDefined(st.Name.At, r.Name, old)
					continue
				}
				cat.AddRelation(r.Result)
				derived[r.Name] = r
			}
			out = append(out, r)
		}
	}
	rep.errs.Sort()
	if err := rep.errs.Err(); err != nil {
		return nil, err
	}
	s.ranges, s.cat, s.derived, s.seq = ranges, cat, derived, seq
	return out, nil
}

func (s *Session) checkRange(st *tquel.RangeStmt, cat *algebra.Catalog, derived map[string]*Retrieve, rep *report) *Var {
	name := st.Rel.Name
	v := &Var{Name: st.Var.Name, Pos: st.Var.At}
	if name == "Clock" {
		n := int64(1)
		if st.Index != nil {
			n = st.Index.Value
			if n < 1 {
				rep.clockDivisor(st.Index.At, n)
				return nil
			}
		}
		v.Rel = algebra.ClockRelation(n)
		return v
	}
	r := cat.Lookup(name)
	if r == nil {
		rep.unknownRelation(st.Rel.At, name, relationNames(cat))
		return nil
	}
	if st.Index != nil {
		rep.notClock(st.Index.At, name)
		return nil
	}
	v.Rel = r
	v.From = derived[name]
	return v
}

func relationNames(cat *algebra.Catalog) []string {
	names := []string{"Clock"}
	for _, r := range cat.Relations {
		names = append(names, r.Name)
	}
	return names
}

// stmtChecker checks one retrieve.
type stmtChecker struct {
	s      *Session
	rep    *report
	ranges map[string]*rangeDecl
	failed map[string]bool // range variables whose declaration failed
	vars   []*Var
	index  map[string]int
	bad    bool
	aggs   []*Agg
	depth  int // aggregate nesting depth (0: the retrieve itself)
}

func (c *stmtChecker) retrieve(st *tquel.RetrieveStmt) *Retrieve {
	r := &Retrieve{File: c.rep.file, Pos: st.At}
	if st.Name != nil {
		r.Name = st.Name.Name
		if r.Name == "Clock" {
			c.fail().clockResult(st.Name.At)
		}
	}
	c.collectVars(st)

	// Targets.
	seen := map[string]source.Pos{}
	addTarget := func(name string, e expr.Expr, pos source.Pos) {
		if p, dup := seen[name]; dup {
			c.fail().duplicateTarget(pos, name, p)
			return
		}
		if strings.EqualFold(name, "from") || strings.EqualFold(name, "to") || strings.EqualFold(name, "at") {
			c.fail().reservedTarget(pos, name)
			return
		}
		seen[name] = pos
		r.Targets = append(r.Targets, Target{Name: name, Expr: e, Pos: pos})
	}
	for _, t := range st.Targets {
		if t.Name == nil {
			ref, ok := t.Expr.(*tquel.AttrRef)
			if !ok {
				c.fail().unnamedTarget(t.At)
				continue
			}
			vi, ok := c.varIndex(ref.Var)
			if !ok {
				continue
			}
			v := c.vars[vi]
			if ref.All {
				for ai, a := range v.Rel.Attrs {
					addTarget(a.Name, &expr.Col{Var: vi, Attr: ai, T: a.Type, VarName: v.Name, AttrName: a.Name, At: ref.Var.At}, ref.Var.At)
				}
				if len(v.Rel.Attrs) == 0 {
					c.fail().allNoAttrs(ref.Var.At, v)
				}
				continue
			}
			if e := c.attrRef(ref); e != nil {
				addTarget(ref.Attr.Name, e, ref.Attr.At)
			}
			continue
		}
		e := c.value(t.Expr)
		if e != nil {
			addTarget(t.Name.Name, e, t.Name.At)
		}
	}

	if st.Where != nil {
		if w := c.value(st.Where); w != nil {
			if w.Type().Kind != algebra.KindBool {
				c.fail().whereNotCondition(st.Where.Pos(), w.Type())
			} else {
				r.Where = w
			}
		}
	}
	if st.When != nil {
		r.When = c.pred(st.When)
	} else {
		r.When = c.defaultWhen()
		r.WhenDefault = true
	}
	if st.Valid != nil {
		v := &expr.Valid{}
		if st.Valid.At != nil {
			v.At = c.texpr(st.Valid.At)
		} else {
			v.From = c.texpr(st.Valid.From)
			v.To = c.texpr(st.Valid.To)
		}
		r.Valid = v
	} else {
		r.Valid = c.defaultValid()
		r.ValidDefault = true
	}
	if st.AsOf != nil {
		lit, ok := unparen(st.AsOf.At).(*tquel.StringLit)
		if !ok || !strings.EqualFold(lit.Value, "now") {
			c.fail().asOfNotNow(st.AsOf.At.Pos())
		}
	}
	if c.bad {
		return nil
	}
	r.Vars = c.vars
	r.Aggs = c.aggs
	r.Exists = existential(r)
	res := &algebra.Relation{
		Name: r.Name, Class: algebra.ClassInterval, FlagHolder: -1,
		File: c.rep.file, Pos: st.At, Src: c.rep.src, Derived: true,
	}
	if r.Valid.IsEvent() {
		res.Class = algebra.ClassEvent
	}
	if st.Name != nil {
		res.Pos = st.Name.At
	}
	for _, t := range r.Targets {
		res.Attrs = append(res.Attrs, algebra.Attr{Name: t.Name, Type: t.Expr.Type(), Pos: t.Pos})
	}
	r.Result = res
	return r
}

// existential marks the existential variables of a checked retrieve
// (Retrieve.Exists). A where conjunct with an aggregate is evaluated over
// the result of the block with its other conjuncts, as are the by lists:
// what they read is read as targets are.
func existential(r *Retrieve) []bool {
	if r.Bag {
		return nil
	}
	var read, conds []expr.Expr
	for _, t := range r.Targets {
		read = append(read, t.Expr)
	}
	for _, c := range expr.Conjuncts(r.Where) {
		if expr.HasAgg(c) {
			read = append(read, c)
		} else {
			conds = append(conds, c)
		}
	}
	for _, a := range r.Aggs {
		read = append(read, a.By...)
	}
	used := expr.ResultVars(read, r.Valid, conds)
	var out []bool
	for v := range r.Vars {
		if used&(1<<uint(v)) != 0 {
			continue
		}
		if out == nil {
			out = make([]bool, len(r.Vars))
		}
		out[v] = true
	}
	return out
}

func unparen(e tquel.Expr) tquel.Expr {
	for {
		p, ok := e.(*tquel.Paren)
		if !ok {
			return e
		}
		e = p.X
	}
}

// root is an expression whose variables a query uses.
type root struct {
	e        tquel.Expr
	temporal bool
}

// collectVars finds the range variables a retrieve uses outside aggregates
// (and in their by lists) and orders them by declaration.
func (c *stmtChecker) collectVars(st *tquel.RetrieveStmt) {
	var roots []root
	for _, t := range st.Targets {
		roots = append(roots, root{t.Expr, false})
	}
	roots = append(roots, root{st.Where, false}, root{st.When, true})
	if st.Valid != nil {
		roots = append(roots, root{st.Valid.At, true}, root{st.Valid.From, true}, root{st.Valid.To, true})
	}
	c.collect(roots, st.At)
}

// collect finds the range variables the roots use — outside aggregates,
// and in the by lists of the aggregates they contain — and orders them by
// declaration.
func (c *stmtChecker) collect(roots []root, at source.Pos) {
	used := map[string]bool{}
	var walk func(e tquel.Expr, temporal bool)
	walk = func(e tquel.Expr, temporal bool) {
		switch e := e.(type) {
		case nil:
		case *tquel.Ident:
			if temporal {
				used[e.Name] = true
			}
		case *tquel.AttrRef:
			used[e.Var.Name] = true
		case *tquel.Unary:
			walk(e.X, temporal)
		case *tquel.Binary:
			walk(e.X, temporal)
			walk(e.Y, temporal)
		case *tquel.Not:
			walk(e.X, temporal)
		case *tquel.Paren:
			walk(e.X, temporal)
		case *tquel.TemporalUnary:
			walk(e.X, true)
		case *tquel.TemporalBinary:
			walk(e.X, true)
			walk(e.Y, true)
		case *tquel.TimeOf:
			walk(e.X, true)
		case *tquel.Aggregate:
			// Variables inside an aggregate are local to it, except those
			// of its by list, which correlate it with this query.
			for _, b := range e.By {
				walk(b, false)
			}
		}
	}
	for _, r := range roots {
		walk(r.e, r.temporal)
	}
	type vs struct {
		d    *rangeDecl
		name string
	}
	var list []vs
	for n := range used {
		if d, ok := c.ranges[n]; ok {
			list = append(list, vs{d, n})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].d.seq < list[j].d.seq })
	c.index = map[string]int{}
	for i, x := range list {
		c.vars = append(c.vars, x.d.v)
		c.index[x.name] = i
	}
	if len(c.vars) > 63 {
		c.fail().tooManyVars(at, len(c.vars))
	}
}

func (c *stmtChecker) varIndex(id *tquel.Ident) (int, bool) {
	if i, ok := c.index[id.Name]; ok {
		return i, true
	}
	if c.failed[id.Name] {
		c.bad = true // its declaration is already reported
		return 0, false
	}
	var names []string
	for n := range c.ranges {
		names = append(names, n)
	}
	c.fail().unknownVar(id.At, id.Name, names)
	return 0, false
}

func (c *stmtChecker) attrRef(ref *tquel.AttrRef) expr.Expr {
	vi, ok := c.varIndex(ref.Var)
	if !ok {
		return nil
	}
	v := c.vars[vi]
	if ref.All {
		c.fail().allNotTarget(ref.Var.At, v.Name)
		return nil
	}
	ai := v.Rel.AttrIndex(ref.Attr.Name)
	if ai < 0 {
		c.fail().unknownAttr(ref.Attr.At, v, ref.Attr.Name)
		return nil
	}
	a := v.Rel.Attrs[ai]
	return &expr.Col{Var: vi, Attr: ai, T: a.Type, VarName: v.Name, AttrName: a.Name, At: ref.Var.At}
}

// ---- default clauses ----

func (c *stmtChecker) tvar(i int) *expr.TVar {
	v := c.vars[i]
	return &expr.TVar{Var: i, Name: v.Name, Event: v.Rel.IsEvent()}
}

// overlapAll is t1 overlap t2 … overlap tk (TAll for no variables).
func (c *stmtChecker) overlapAll() expr.TExpr {
	if len(c.vars) == 0 {
		return &expr.TAll{}
	}
	var x expr.TExpr = c.tvar(0)
	for i := 1; i < len(c.vars); i++ {
		x = &expr.TBinary{X: x, Y: c.tvar(i)}
	}
	return x
}

func (c *stmtChecker) defaultWhen() expr.Pred {
	if len(c.vars) < 2 {
		return &expr.PTrue{}
	}
	x := c.overlapAll().(*expr.TBinary)
	return &expr.PCmp{Op: expr.Overlap, X: x.X, Y: x.Y}
}

func (c *stmtChecker) defaultValid() *expr.Valid {
	x := c.overlapAll()
	allIntervals := true
	for _, v := range c.vars {
		if v.Rel.IsEvent() {
			allIntervals = false
		}
	}
	if allIntervals {
		return &expr.Valid{From: &expr.TBeginEnd{X: x}, To: &expr.TBeginEnd{End: true, X: x}}
	}
	return &expr.Valid{At: &expr.TBeginEnd{X: x}}
}

// ---- temporal expressions and predicates ----

func (c *stmtChecker) texpr(e tquel.Expr) expr.TExpr {
	switch e := e.(type) {
	case *tquel.Paren:
		return c.texpr(e.X)
	case *tquel.Ident:
		if i, ok := c.index[e.Name]; ok {
			return c.tvar(i)
		}
		if _, declared := c.ranges[e.Name]; declared {
			c.fail().varNotCollected(e.At, e.Name)
			return nil
		}
		if c.failed[e.Name] {
			c.bad = true // its declaration is already reported
			return nil
		}
		c.fail().notRangeVar(e.At, e.Name)
		return nil
	case *tquel.StringLit:
		return c.timeConst(e.Value, e.At)
	case *tquel.ParamRef:
		val, ok := c.param(e)
		if !ok {
			return nil
		}
		return c.timeConst(val, e.At)
	case *tquel.TemporalUnary:
		x := c.texpr(e.X)
		if x == nil {
			return nil
		}
		return &expr.TBeginEnd{End: e.Op == tquel.OpEndOf, X: x}
	case *tquel.TemporalBinary:
		switch e.Op {
		case tquel.OpOverlap, tquel.OpExtend:
			x, y := c.texpr(e.X), c.texpr(e.Y)
			if x == nil || y == nil {
				return nil
			}
			return &expr.TBinary{Extend: e.Op == tquel.OpExtend, X: x, Y: y}
		}
		c.fail().predicateNotTime(e.OpPos, e.Op)
		return nil
	case *tquel.Binary:
		c.fail().connectiveNotTime(e.OpPos, e.Op)
		return nil
	case *tquel.Not:
		c.fail().notNotTime(e.At)
		return nil
	}
	c.fail().timeExpected(e.Pos())
	return nil
}

func (c *stmtChecker) timeConst(text string, pos source.Pos) expr.TExpr {
	if strings.EqualFold(text, "now") {
		return &expr.TConst{T: c.s.now(), Txt: "now"}
	}
	t, err := algebra.ParseTime(text)
	if err != nil {
		c.fail().badTime(pos, err)
		return nil
	}
	return &expr.TConst{T: t, Txt: text}
}

func (c *stmtChecker) pred(e tquel.Expr) expr.Pred {
	switch e := e.(type) {
	case *tquel.Paren:
		return c.pred(e.X)
	case *tquel.Binary:
		switch e.Op {
		case tquel.OpAnd, tquel.OpOr:
			x, y := c.pred(e.X), c.pred(e.Y)
			if x == nil || y == nil {
				return nil
			}
			if e.Op == tquel.OpAnd {
				return &expr.PAnd{X: x, Y: y}
			}
			return &expr.POr{X: x, Y: y}
		}
	case *tquel.Not:
		x := c.pred(e.X)
		if x == nil {
			return nil
		}
		return &expr.PNot{X: x}
	case *tquel.TemporalBinary:
		var op expr.PredOp
		switch e.Op {
		case tquel.OpPrecede:
			op = expr.Precede
		case tquel.OpOverlap:
			op = expr.Overlap
		case tquel.OpEqual:
			op = expr.Equal
		default:
			c.fail().timeNotPredicate(e.OpPos, e.Op)
			return nil
		}
		x, y := c.texpr(e.X), c.texpr(e.Y)
		if x == nil || y == nil {
			return nil
		}
		return &expr.PCmp{Op: op, X: x, Y: y, At: e.OpPos}
	case *tquel.TemporalUnary:
		c.fail().timeNotPredicate(e.At, e.Op)
		return nil
	}
	c.fail().predicateExpected(e.Pos())
	return nil
}

// ---- value expressions ----

// operand is a checked value expression, or a literal whose type is still
// open (a bare name, a quoted string or a parameter) and is fixed by what it
// meets.
type operand struct {
	e   expr.Expr
	lit *literal
}

type literal struct {
	kind literalKind
	text string
	pos  source.Pos
}

type literalKind uint8

const (
	litBare literalKind = iota
	litString
	litParam
)

func (c *stmtChecker) value(e tquel.Expr) expr.Expr {
	op := c.operand(e)
	if op.e != nil || op.lit == nil {
		return op.e
	}
	return c.settle(op.lit)
}

func (c *stmtChecker) param(p *tquel.ParamRef) (string, bool) {
	v, ok := c.s.opts.Params[p.Name]
	if !ok {
		c.fail().noParam(p.At, p.Name)
		return "", false
	}
	return v, true
}

// settle gives a literal its default type when nothing else fixes it.
func (c *stmtChecker) settle(l *literal) expr.Expr {
	switch l.kind {
	case litString:
		return &expr.Const{V: algebra.Str(l.text), T: algebra.TypeString, At: l.pos}
	case litParam:
		if n, err := strconv.ParseInt(l.text, 10, 64); err == nil {
			return &expr.Const{V: algebra.Int(n), T: algebra.TypeInt, At: l.pos, Txt: l.text}
		}
		if f, err := strconv.ParseFloat(l.text, 64); err == nil {
			return &expr.Const{V: algebra.Float(f), T: algebra.TypeFloat, At: l.pos, Txt: l.text}
		}
		return &expr.Const{V: algebra.Str(l.text), T: algebra.TypeString, At: l.pos}
	}
	if l.text == "true" || l.text == "false" {
		return &expr.Const{V: algebra.Bool(l.text == "true"), T: algebra.TypeBool, At: l.pos}
	}
	if _, ok := c.ranges[l.text]; ok {
		c.fail().varAsValue(l.pos, l.text)
	} else if c.failed[l.text] {
		c.bad = true // its declaration is already reported
	} else {
		c.fail().unknownName(l.pos, l.text)
	}
	return nil
}

// coerce fixes a literal to type t.
func (c *stmtChecker) coerce(l *literal, t algebra.Type) expr.Expr {
	if l.kind == litBare {
		// A declared range variable, used in this statement or not, is
		// never an entity or enum literal (docs/tquel.md).
		if _, isVar := c.ranges[l.text]; isVar {
			c.fail().varAsValue(l.pos, l.text)
			return nil
		}
		if c.failed[l.text] {
			c.bad = true // its declaration is already reported
			return nil
		}
	}
	if l.kind == litBare && (l.text == "true" || l.text == "false") && t.Kind != algebra.KindEntity && t.Kind != algebra.KindEnum {
		// A bool literal, whatever it meets; the caller reports a mismatch.
		return &expr.Const{V: algebra.Bool(l.text == "true"), T: algebra.TypeBool, At: l.pos}
	}
	mk := func(v algebra.Value) expr.Expr {
		// Printed as a TQuel literal of its type (V.String()).
		return &expr.Const{V: v, T: t, At: l.pos}
	}
	switch t.Kind {
	case algebra.KindEntity:
		return mk(algebra.Entity(l.text))
	case algebra.KindEnum:
		v, ok := t.Enum.Value(l.text)
		if !ok {
			c.fail().notMember(l.pos, l.text, t)
			return nil
		}
		return mk(v)
	case algebra.KindString:
		if l.kind == litBare {
			c.fail().bareString(l.pos, l.text)
			return nil
		}
		return mk(algebra.Str(l.text))
	case algebra.KindBool:
		if l.text == "true" || l.text == "false" {
			return mk(algebra.Bool(l.text == "true"))
		}
		c.fail().notBool(l.pos, l.text)
	case algebra.KindTime:
		if l.kind == litBare {
			break
		}
		if strings.EqualFold(l.text, "now") {
			return mk(algebra.TimeVal(c.s.now()))
		}
		tm, err := algebra.ParseTime(l.text)
		if err != nil {
			c.fail().badTime(l.pos, err)
			return nil
		}
		return mk(algebra.TimeVal(tm))
	case algebra.KindInt:
		if l.kind == litParam {
			if n, err := strconv.ParseInt(l.text, 10, 64); err == nil {
				return mk(algebra.Int(n))
			}
		}
	case algebra.KindFloat:
		if l.kind == litParam {
			if f, err := strconv.ParseFloat(l.text, 64); err == nil {
				return mk(algebra.Float(f))
			}
		}
	case algebra.KindDuration:
		if l.kind == litParam {
			if d, err := parseDuration(l.text); err == nil {
				return mk(algebra.DurationVal(d))
			}
		}
	}
	c.fail().cannotBe(l, t)
	return nil
}

func (c *stmtChecker) operand(e tquel.Expr) operand {
	switch e := e.(type) {
	case *tquel.Paren:
		return c.operand(e.X)
	case *tquel.Ident:
		return operand{lit: &literal{kind: litBare, text: e.Name, pos: e.At}}
	case *tquel.StringLit:
		return operand{lit: &literal{kind: litString, text: e.Value, pos: e.At}}
	case *tquel.ParamRef:
		v, ok := c.param(e)
		if !ok {
			return operand{}
		}
		return operand{lit: &literal{kind: litParam, text: v, pos: e.At}}
	case *tquel.AttrRef:
		return operand{e: c.attrRef(e)}
	case *tquel.NumberLit:
		if e.Float {
			f, err := strconv.ParseFloat(e.Text, 64)
			if err != nil {
				c.fail().badNumber(e.At, e.Text)
				return operand{}
			}
			return operand{e: &expr.Const{V: algebra.Float(f), T: algebra.TypeFloat, At: e.At, Txt: e.Text}}
		}
		n, err := strconv.ParseInt(e.Text, 10, 64)
		if err != nil {
			c.fail().intRange(e.At, e.Text)
			return operand{}
		}
		return operand{e: &expr.Const{V: algebra.Int(n), T: algebra.TypeInt, At: e.At, Txt: e.Text}}
	case *tquel.DurationLit:
		return operand{e: &expr.Const{V: algebra.DurationVal(e.NS), T: algebra.TypeDuration, At: e.At, Txt: e.Text}}
	case *tquel.Unary:
		x := c.value(e.X)
		if x == nil {
			return operand{}
		}
		switch x.Type().Kind {
		case algebra.KindInt, algebra.KindFloat, algebra.KindDuration:
			return operand{e: &expr.Unary{Op: expr.OpNeg, X: x, T: x.Type(), At: e.At, Src: c.rep.src}}
		}
		c.fail().cannotNegate(e.At, x.Type())
		return operand{}
	case *tquel.Not:
		x := c.value(e.X)
		if x == nil {
			return operand{}
		}
		if x.Type().Kind != algebra.KindBool {
			c.fail().notNeedsCondition(e.At, x.Type())
			return operand{}
		}
		return operand{e: &expr.Unary{Op: expr.OpNot, X: x, T: algebra.TypeBool, At: e.At}}
	case *tquel.Binary:
		return operand{e: c.binary(e)}
	case *tquel.Aggregate:
		return operand{e: c.aggregate(e)}
	case *tquel.TimeOf:
		x := c.texpr(e.X)
		if x == nil {
			return operand{}
		}
		return operand{e: &expr.TimeOf{End: e.Op == tquel.OpEndOf, X: x, At: e.At}}
	case *tquel.TemporalBinary:
		c.fail().temporalInValue(e.OpPos, e.Op)
		return operand{}
	case *tquel.TemporalUnary:
		c.fail().timeOfUnsupported(e.At, e.Op)
		return operand{}
	}
	c.fail().unexpectedExpr(e.Pos())
	return operand{}
}

var opMap = map[tquel.Op]expr.Op{
	tquel.OpAdd: expr.OpAdd, tquel.OpSub: expr.OpSub, tquel.OpMul: expr.OpMul,
	tquel.OpDiv: expr.OpDiv, tquel.OpMod: expr.OpMod, tquel.OpEq: expr.OpEq,
	tquel.OpNe: expr.OpNe, tquel.OpLt: expr.OpLt, tquel.OpLe: expr.OpLe,
	tquel.OpGt: expr.OpGt, tquel.OpGe: expr.OpGe, tquel.OpAnd: expr.OpAnd,
	tquel.OpOr: expr.OpOr,
}

func (c *stmtChecker) binary(e *tquel.Binary) expr.Expr {
	op, ok := opMap[e.Op]
	if !ok {
		c.fail().operatorNotAllowed(e.OpPos, e.Op)
		return nil
	}
	if op == expr.OpAnd || op == expr.OpOr {
		x, y := c.value(e.X), c.value(e.Y)
		if x == nil || y == nil {
			return nil
		}
		for _, s := range []expr.Expr{x, y} {
			if s.Type().Kind != algebra.KindBool {
				c.fail().needsConditions(s.Pos(), op, s.Type())
				return nil
			}
		}
		return &expr.Binary{Op: op, X: x, Y: y, T: algebra.TypeBool, At: e.OpPos, Src: c.rep.src}
	}
	lx, ly := c.operand(e.X), c.operand(e.Y)
	if (lx.e == nil && lx.lit == nil) || (ly.e == nil && ly.lit == nil) {
		return nil
	}
	// Fix open literals from the other side.
	switch {
	case lx.lit != nil && ly.lit != nil:
		lx.e, ly.e = c.settle(lx.lit), c.settle(ly.lit)
	case lx.lit != nil:
		lx.e = c.coerce(lx.lit, ly.e.Type())
	case ly.lit != nil:
		ly.e = c.coerce(ly.lit, lx.e.Type())
	}
	x, y := lx.e, ly.e
	if x == nil || y == nil {
		return nil
	}
	tx, ty := x.Type(), y.Type()
	if op.IsComparison() {
		if !comparable(tx, ty) {
			c.fail().cannotCompare(e.OpPos, tx, ty)
			return nil
		}
		if op != expr.OpEq && op != expr.OpNe && !ordered(tx) {
			c.fail().notOrdered(e.OpPos, tx)
			return nil
		}
		return &expr.Binary{Op: op, X: x, Y: y, T: algebra.TypeBool, At: e.OpPos, Src: c.rep.src}
	}
	t, ok := arithType(op, tx, ty)
	if !ok {
		c.fail().cannotApply(e.OpPos, op, tx, ty)
		return nil
	}
	return &expr.Binary{Op: op, X: x, Y: y, T: t, At: e.OpPos, Src: c.rep.src}
}

func comparable(a, b algebra.Type) bool {
	if a.Kind.IsNumeric() && b.Kind.IsNumeric() {
		return true
	}
	return algebra.Identical(a, b)
}

func ordered(t algebra.Type) bool {
	switch t.Kind {
	case algebra.KindEntity, algebra.KindBool:
		return false
	}
	return true
}

func arithType(op expr.Op, a, b algebra.Type) (algebra.Type, bool) {
	ka, kb := a.Kind, b.Kind
	switch {
	case ka == algebra.KindInt && kb == algebra.KindInt:
		return algebra.TypeInt, true
	case ka.IsNumeric() && kb.IsNumeric():
		return algebra.TypeFloat, true
	case ka == algebra.KindString && kb == algebra.KindString && op == expr.OpAdd:
		return algebra.TypeString, true
	case ka == algebra.KindTime && kb == algebra.KindTime && op == expr.OpSub:
		return algebra.TypeDuration, true
	case ka == algebra.KindTime && kb == algebra.KindDuration && (op == expr.OpAdd || op == expr.OpSub):
		return algebra.TypeTime, true
	case ka == algebra.KindDuration && kb == algebra.KindTime && op == expr.OpAdd:
		return algebra.TypeTime, true
	case ka == algebra.KindDuration && kb == algebra.KindDuration:
		switch op {
		case expr.OpAdd, expr.OpSub, expr.OpMod:
			return algebra.TypeDuration, true
		case expr.OpDiv:
			return algebra.TypeFloat, true
		}
	case ka == algebra.KindDuration && kb == algebra.KindInt && (op == expr.OpMul || op == expr.OpDiv):
		return algebra.TypeDuration, true
	case ka == algebra.KindInt && kb == algebra.KindDuration && op == expr.OpMul:
		return algebra.TypeDuration, true
	}
	return algebra.Type{}, false
}

// parseDuration reads a duration parameter (Go notation, e.g. 1m30s).
func parseDuration(s string) (int64, error) {
	d, err := time.ParseDuration(s)
	return int64(d), err
}
