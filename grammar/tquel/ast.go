package tquel

import (
	"strings"

	"github.com/tqmon/tqmon/grammar/source"
)

// Pos is a place in the query text.
type Pos = source.Pos

// Node is any node of a TQuel syntax tree. The interface is sealed: only this
// package's types implement it.
type Node interface {
	Pos() Pos
	node()
}

// File is one parsed query text: a sequence of statements.
type File struct {
	Name  string // file name used in diagnostics ("-e" for command-line text)
	Stmts []Stmt
	// Src is the parsed text (nil for a tree not made by Parse):
	// diagnostics made through it show their source line, and StmtText
	// cuts statements out of it.
	Src *source.File
}

// StmtText is the text of statement i as written: from its first token up
// to the next statement's (or the end of the text), without the
// surrounding space and the semicolons that end it. It is "" for a tree
// not made by Parse.
func (f *File) StmtText(i int) string {
	var end Pos // the end of the text
	if i+1 < len(f.Stmts) {
		end = f.Stmts[i+1].Pos()
	}
	return strings.TrimRight(strings.TrimSpace(f.Src.Cut(f.Stmts[i].Pos(), end)), ";")
}

// Stmt is a range or retrieve statement.
type Stmt interface {
	Node
	stmt()
}

// Ident is a name as written, with its place.
type Ident struct {
	At   Pos
	Name string
}

func (x *Ident) Pos() Pos { return x.At }
func (*Ident) node()      {}

// RangeStmt is `range of Var is Rel` or `range of Var is Clock[N]`.
type RangeStmt struct {
	At  Pos // the `range` keyword
	Var *Ident
	Rel *Ident
	// Index is the N of `Clock[N]` (or of any `Rel[N]`, which the checker
	// rejects for relations other than Clock); nil when absent.
	Index *IntLit
}

// RetrieveStmt is `retrieve [into] [Name] [unique] (targets) clauses`.
type RetrieveStmt struct {
	At      Pos // the `retrieve` keyword
	Into    bool
	Name    *Ident // nil for an anonymous result
	Unique  bool
	Targets []*Target
	Valid   *ValidClause // nil when absent
	Where   Expr         // nil when absent
	When    Expr         // nil when absent; a temporal predicate
	AsOf    *AsOfClause  // nil when absent
}

// Target is one element of the target list.
//
//	Name = Expr   (Name set, Expr set)
//	Name is Expr  (Name set, Expr set)
//	Var.Attr      (Name nil, Expr is *AttrRef)
//	Var.all       (Name nil, Expr is *AttrRef with All set)
type Target struct {
	At   Pos
	Name *Ident
	Expr Expr
}

// ValidClause is `valid at E` (At set) or `valid from E1 to E2` (From, To set).
type ValidClause struct {
	Kw   Pos // the `valid` keyword
	At   Expr
	From Expr
	To   Expr
}

// AsOfClause is `as of E`.
type AsOfClause struct {
	Kw Pos
	At Expr
}

func (s *RangeStmt) Pos() Pos    { return s.At }
func (s *RetrieveStmt) Pos() Pos { return s.At }
func (t *Target) Pos() Pos       { return t.At }
func (c *ValidClause) Pos() Pos  { return c.Kw }
func (c *AsOfClause) Pos() Pos   { return c.Kw }
func (*RangeStmt) node()         {}
func (*RetrieveStmt) node()      {}
func (*Target) node()            {}
func (*ValidClause) node()       {}
func (*AsOfClause) node()        {}
func (*RangeStmt) stmt()         {}
func (*RetrieveStmt) stmt()      {}

// Expr is any expression. TQuel has value expressions (the target list, the
// where clause, aggregate arguments) and temporal expressions and predicates
// (the when and valid clauses); the parser builds both from the same node
// types and the context decides which nodes are allowed:
//
//   - value context: Ident, AttrRef, NumberLit, StringLit, DurationLit,
//     ParamRef, Unary, Binary (arithmetic, comparison, and/or), Not,
//     Aggregate, and TimeOf (`begin of X` / `end of X` used as a time value);
//   - temporal-expression context: Ident (a range variable), StringLit (a time
//     constant), ParamRef, TemporalUnary (begin of / end of), and
//     TemporalBinary with Op Overlap or Extend;
//   - temporal-predicate context: Binary with Op And/Or, Not, and
//     TemporalBinary with Op Precede, Overlap or Equal.
//
// A TemporalBinary with Op Overlap is a predicate at the top of a predicate
// and an intersection inside a temporal expression: in `a overlap b overlap
// c`, the tree is Overlap(Overlap(a, b), c) and the outer one is the
// predicate.
type Expr interface {
	Node
	expr()
}

// AttrRef is `Var.Attr` or `Var.all`.
type AttrRef struct {
	Var  *Ident
	Attr *Ident // nil when All
	All  bool
}

// NumberLit is an integer or floating-point literal as written.
type NumberLit struct {
	At    Pos
	Text  string
	Float bool // written with a fraction or exponent
}

// IntLit is an integer literal (Clock[N], counters).
type IntLit struct {
	At    Pos
	Value int64
}

// StringLit is a double-quoted literal; Value has escapes resolved.
type StringLit struct {
	At    Pos
	Value string
}

// DurationLit is a duration literal such as 10s, 5ms or 1h30m.
type DurationLit struct {
	At   Pos
	Text string
	NS   int64 // nanoseconds
}

// ParamRef is `$Name`, replaced by a --param value.
type ParamRef struct {
	At   Pos
	Name string
}

// Op is an operator of a Unary, Binary or TemporalBinary node.
type Op uint8

const (
	OpInvalid Op = iota
	// arithmetic
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpMod
	OpNeg // unary minus
	// comparison
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	// logic
	OpAnd
	OpOr
	// temporal
	OpPrecede
	OpOverlap
	OpEqual
	OpExtend
	OpBeginOf
	OpEndOf
)

var opNames = [...]string{
	OpInvalid: "?", OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%",
	OpNeg: "-", OpEq: "=", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpAnd: "and", OpOr: "or", OpPrecede: "precede", OpOverlap: "overlap",
	OpEqual: "equal", OpExtend: "extend", OpBeginOf: "begin of", OpEndOf: "end of",
}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "?"
}

// IsComparison reports whether o is = != < <= > >=.
func (o Op) IsComparison() bool { return o >= OpEq && o <= OpGe }

// IsArithmetic reports whether o is + - * / %.
func (o Op) IsArithmetic() bool { return o >= OpAdd && o <= OpMod }

// Unary is `-X`.
type Unary struct {
	At Pos
	Op Op // OpNeg
	X  Expr
}

// Binary is an arithmetic, comparison or logical operation. OpPos is the
// place of the operator itself.
type Binary struct {
	Op    Op
	OpPos Pos
	X, Y  Expr
}

// Not is `not X`, in value or predicate context.
type Not struct {
	At Pos
	X  Expr
}

// TemporalUnary is `begin of X` or `end of X` in a temporal context.
type TemporalUnary struct {
	At Pos
	Op Op // OpBeginOf or OpEndOf
	X  Expr
}

// TemporalBinary is `X precede|overlap|equal|extend Y`.
type TemporalBinary struct {
	Op    Op
	OpPos Pos
	X, Y  Expr
}

// TimeOf is `begin of X` or `end of X` used as a time value inside a value
// expression (e.g. `end of w - begin of w`).
type TimeOf struct {
	At Pos
	Op Op // OpBeginOf or OpEndOf
	X  Expr
}

// Paren is a parenthesised expression, kept so diagnostics and printing can
// follow the text.
type Paren struct {
	At Pos
	X  Expr
}

// AggFunc names an aggregate.
type AggFunc uint8

const (
	AggInvalid AggFunc = iota
	AggCount
	AggCountU
	AggSum
	AggSumU
	AggAvg
	AggAvgU
	AggMin
	AggMax
	AggAny
	AggStddev
	AggPercentile
	AggHistogram
)

var aggNames = [...]string{
	AggInvalid: "?", AggCount: "count", AggCountU: "countU", AggSum: "sum",
	AggSumU: "sumU", AggAvg: "avg", AggAvgU: "avgU", AggMin: "min",
	AggMax: "max", AggAny: "any", AggStddev: "stddev", AggPercentile: "percentile",
	AggHistogram: "histogram",
}

func (a AggFunc) String() string {
	if int(a) < len(aggNames) {
		return aggNames[a]
	}
	return "?"
}

// WindowKind is the window of an aggregate.
type WindowKind uint8

const (
	WindowInstant WindowKind = iota // for each instant (the default)
	WindowEver                      // for ever
	WindowMoving                    // for each DURATION
)

// Window is an aggregate's `for …` clause.
type Window struct {
	At   Pos // the `for` keyword; zero when defaulted
	Kind WindowKind
	Size *DurationLit // WindowMoving only
}

// Aggregate is `f(X [, P] [by B, …] [window] [where Q] [when P])`.
type Aggregate struct {
	At     Pos // the function name
	Func   AggFunc
	Arg    Expr
	Param  Expr // the second argument (percentile's p, histogram's width); nil when absent
	By     []Expr
	Window Window
	Where  Expr // nil when absent
	When   Expr // nil when absent; a temporal predicate
}

func (x *AttrRef) Pos() Pos        { return x.Var.At }
func (x *NumberLit) Pos() Pos      { return x.At }
func (x *IntLit) Pos() Pos         { return x.At }
func (x *StringLit) Pos() Pos      { return x.At }
func (x *DurationLit) Pos() Pos    { return x.At }
func (x *ParamRef) Pos() Pos       { return x.At }
func (x *Unary) Pos() Pos          { return x.At }
func (x *Binary) Pos() Pos         { return x.X.Pos() }
func (x *Not) Pos() Pos            { return x.At }
func (x *TemporalUnary) Pos() Pos  { return x.At }
func (x *TemporalBinary) Pos() Pos { return x.X.Pos() }
func (x *TimeOf) Pos() Pos         { return x.At }
func (x *Paren) Pos() Pos          { return x.At }
func (x *Aggregate) Pos() Pos      { return x.At }

func (*AttrRef) node()        {}
func (*NumberLit) node()      {}
func (*IntLit) node()         {}
func (*StringLit) node()      {}
func (*DurationLit) node()    {}
func (*ParamRef) node()       {}
func (*Unary) node()          {}
func (*Binary) node()         {}
func (*Not) node()            {}
func (*TemporalUnary) node()  {}
func (*TemporalBinary) node() {}
func (*TimeOf) node()         {}
func (*Paren) node()          {}
func (*Aggregate) node()      {}

func (*Ident) expr()          {}
func (*AttrRef) expr()        {}
func (*NumberLit) expr()      {}
func (*StringLit) expr()      {}
func (*DurationLit) expr()    {}
func (*ParamRef) expr()       {}
func (*Unary) expr()          {}
func (*Binary) expr()         {}
func (*Not) expr()            {}
func (*TemporalUnary) expr()  {}
func (*TemporalBinary) expr() {}
func (*TimeOf) expr()         {}
func (*Paren) expr()          {}
func (*Aggregate) expr()      {}
