package expr

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/source"
)

// Op is a value operator.
type Op uint8

const (
	OpInvalid Op = iota
	OpAdd
	OpSub
	OpMul
	OpDiv
	OpMod
	OpNeg
	OpEq
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpAnd
	OpOr
	OpNot
)

var opText = [...]string{"?", "+", "-", "*", "/", "%", "-", "=", "!=", "<", "<=", ">", ">=", "and", "or", "not"}

func (o Op) String() string { return opText[o] }

// IsComparison reports whether o is = != < <= > >=.
func (o Op) IsComparison() bool { return o >= OpEq && o <= OpGe }

// Expr is a typed value expression over the range variables of a retrieve.
type Expr interface {
	Type() algebra.Type
	Pos() source.Pos
	String() string
	isExpr()
}

// Const is a literal value.
type Const struct {
	V   algebra.Value
	T   algebra.Type
	At  source.Pos
	Txt string // as written, for printing; "" prints V
}

// Col is attribute Attr of range variable Var (an index into the retrieve's
// variables).
type Col struct {
	Var, Attr int
	T         algebra.Type
	VarName   string
	AttrName  string
	At        source.Pos
}

// Unary is -X or not X.
type Unary struct {
	Op Op
	X  Expr
	T  algebra.Type
	At source.Pos
	// Src is the text At is in (nil when unknown): negating the least
	// integer at run time is a diagnostic there.
	Src *source.File
}

// Binary is an arithmetic, comparison or logical operation.
type Binary struct {
	Op   Op
	X, Y Expr
	T    algebra.Type
	At   source.Pos // the operator
	// Src is the text At is in (nil when unknown): an arithmetic error
	// at run time is a diagnostic there.
	Src *source.File
}

func (e *Const) Type() algebra.Type  { return e.T }
func (e *Col) Type() algebra.Type    { return e.T }
func (e *Unary) Type() algebra.Type  { return e.T }
func (e *Binary) Type() algebra.Type { return e.T }
func (e *Const) Pos() source.Pos     { return e.At }
func (e *Col) Pos() source.Pos       { return e.At }
func (e *Unary) Pos() source.Pos     { return e.At }
func (e *Binary) Pos() source.Pos    { return e.X.Pos() }
func (*Const) isExpr()               {}
func (*Col) isExpr()                 {}
func (*Unary) isExpr()               {}
func (*Binary) isExpr()              {}

func (e *Const) String() string {
	if e.Txt != "" {
		return e.Txt
	}
	return e.V.String()
}
func (e *Col) String() string {
	if e.VarName == "" { // a column of an unnamed relation, e.g. σ[1 = "P1"]
		return e.AttrName
	}
	return e.VarName + "." + e.AttrName
}
func (e *Unary) String() string {
	if e.Op == OpNot {
		return "not " + paren(e.X, precOf(e))
	}
	return "-" + paren(e.X, precOf(e))
}
func (e *Binary) String() string {
	p := precOf(e)
	// Left-associative: the right operand needs parentheses at equal precedence.
	return paren(e.X, p) + " " + e.Op.String() + " " + paren(e.Y, p+1)
}

func precOf(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		switch {
		case e.Op == OpOr:
			return 1
		case e.Op == OpAnd:
			return 2
		case e.Op.IsComparison():
			return 4
		case e.Op == OpAdd || e.Op == OpSub:
			return 5
		default:
			return 6
		}
	case *Unary:
		if e.Op == OpNot {
			return 3
		}
		return 7
	}
	return 8
}

func paren(e Expr, min int) string {
	if precOf(e) < min {
		return "(" + e.String() + ")"
	}
	return e.String()
}

// Conjuncts splits e at its top-level ands.
func Conjuncts(e Expr) []Expr {
	if e == nil {
		return nil
	}
	if b, ok := e.(*Binary); ok && b.Op == OpAnd {
		return append(Conjuncts(b.X), Conjuncts(b.Y)...)
	}
	return []Expr{e}
}

// And joins conjuncts (nil for none).
func And(cs []Expr) Expr {
	var e Expr
	for _, c := range cs {
		if e == nil {
			e = c
		} else {
			e = &Binary{Op: OpAnd, X: e, Y: c, T: algebra.TypeBool, At: c.Pos()}
		}
	}
	return e
}

// Vars returns the set of range variables e refers to, as a bit set.
func Vars(e Expr) uint64 {
	switch e := e.(type) {
	case *Col:
		return 1 << uint(e.Var)
	case *Unary:
		return Vars(e.X)
	case *Binary:
		return Vars(e.X) | Vars(e.Y)
	case *TimeOf:
		return TVars(e.X)
	}
	return 0
}

// ResultVars is the set of variables whose tuples a block's results read:
// those its targets, its valid clause and its where conjuncts with begin
// of or end of mention. The block's other variables are existential: they
// only decide whether a binding has a result.
func ResultVars(targets []Expr, valid *Valid, conds []Expr) uint64 {
	var s uint64
	for _, t := range targets {
		s |= Vars(t)
	}
	for _, t := range []TExpr{valid.At, valid.From, valid.To} {
		if t != nil {
			s |= TVars(t)
		}
	}
	for _, c := range conds {
		if HasTimeOf(c) {
			s |= Vars(c)
		}
	}
	return s
}

// ErrDivByZero is returned when an integer or duration is divided by zero.
var ErrDivByZero = errors.New("division by zero")

// ErrOverflow is wrapped by the error of integer, duration and time
// arithmetic whose exact result is not representable: outside 64 bits, or a
// time past forever. Arithmetic is exact or an error, never wrapped around.
var ErrOverflow = errors.New("arithmetic overflow")

// Checked applies an integer operator to x and y exactly (y not 0 for /
// and %); ok is false when the result does not fit in an int64. Arith
// uses it, and so does the interpreter's columnar path on int codes.
func Checked(op Op, x, y int64) (n int64, ok bool) { return checked(op, x, y) }

func checked(op Op, x, y int64) (n int64, ok bool) {
	switch op {
	case OpAdd:
		n = x + y
		return n, (n > x) == (y > 0)
	case OpSub:
		n = x - y
		return n, (n < x) == (y > 0)
	case OpMul:
		if x == 0 || y == 0 {
			return 0, true
		}
		n = x * y
		return n, n/y == x && !(x == -1 && y == math.MinInt64) && !(y == -1 && x == math.MinInt64)
	case OpDiv:
		return x / y, !(x == math.MinInt64 && y == -1)
	case OpMod:
		if y == -1 {
			return 0, true
		}
		return x % y, true
	}
	return 0, false
}

func overflow(t algebra.Type) error {
	if t.Kind == algebra.KindTime {
		return fmt.Errorf("%w: time outside beginning to forever", ErrOverflow)
	}
	return fmt.Errorf("%w: %s result outside 64 bits", ErrOverflow, t.Kind)
}

// Arith applies an arithmetic operator to two values; t is the result type
// the checker assigned.
func Arith(op Op, a, b algebra.Value, t algebra.Type) (algebra.Value, error) {
	switch t.Kind {
	case algebra.KindFloat:
		x, y := a.F(), b.F()
		switch op {
		case OpAdd:
			return algebra.Float(x + y), nil
		case OpSub:
			return algebra.Float(x - y), nil
		case OpMul:
			return algebra.Float(x * y), nil
		case OpDiv:
			if a.K == algebra.KindDuration { // duration / duration
				if b.N == 0 {
					return algebra.Value{}, ErrDivByZero
				}
				return algebra.Float(float64(a.N) / float64(b.N)), nil
			}
			return algebra.Float(x / y), nil
		case OpMod:
			return algebra.Float(math.Mod(x, y)), nil
		}
	case algebra.KindString:
		if op == OpAdd {
			return algebra.Str(a.S + b.S), nil
		}
	case algebra.KindInt, algebra.KindDuration, algebra.KindTime:
		x, y := a.N, b.N
		switch op {
		case OpAdd, OpSub, OpMul:
		case OpDiv, OpMod:
			if y == 0 {
				return algebra.Value{}, ErrDivByZero
			}
		default:
			return algebra.Value{}, errors.New("bad arithmetic operator")
		}
		n, ok := checked(op, x, y)
		if !ok || t.Kind == algebra.KindTime && n > algebra.Forever {
			return algebra.Value{}, overflow(t)
		}
		return algebra.Value{K: t.Kind, N: n}, nil
	}
	return algebra.Value{}, errors.New("bad arithmetic on " + a.K.String() + " and " + b.K.String())
}

// Negate returns -a; the least integer (or duration) has no negation.
func Negate(a algebra.Value) (algebra.Value, error) {
	if a.K == algebra.KindFloat {
		return algebra.Float(-a.F()), nil
	}
	if a.N == math.MinInt64 {
		return algebra.Value{}, overflow(algebra.Type{Kind: a.K})
	}
	return algebra.Value{K: a.K, N: -a.N}, nil
}

// CompareOp applies a comparison operator.
func CompareOp(op Op, a, b algebra.Value) bool {
	if op == OpEq {
		return algebra.Equal(a, b)
	}
	if op == OpNe {
		return !algebra.Equal(a, b)
	}
	c := algebra.Compare(a, b)
	switch op {
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	case OpGe:
		return c >= 0
	}
	return false
}

// compileColIntCmp compiles a comparison of an integer column with an
// integer constant to one closure that reads the column and compares the
// integers (CompareOp's result for two ints), or returns nil for any other
// comparison. A value of another kind in the column is compared by
// CompareOp.
func compileColIntCmp(e *Binary) Fn {
	col, ok := e.X.(*Col)
	c, ok2 := e.Y.(*Const)
	if !ok || !ok2 || c.V.K != algebra.KindInt {
		return nil
	}
	vr, at, n, cv, op := col.Var, col.Attr, c.V.N, c.V, e.Op
	// other compares a value of another kind.
	other := func(v *algebra.Value) (algebra.Value, error) { return algebra.Bool(CompareOp(op, *v, cv)), nil }
	switch op {
	case OpEq:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N == n), nil
			} else {
				return other(v)
			}
		}
	case OpNe:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N != n), nil
			} else {
				return other(v)
			}
		}
	case OpLt:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N < n), nil
			} else {
				return other(v)
			}
		}
	case OpLe:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N <= n), nil
			} else {
				return other(v)
			}
		}
	case OpGt:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N > n), nil
			} else {
				return other(v)
			}
		}
	case OpGe:
		return func(b Binding) (algebra.Value, error) {
			if v := &b[vr][at]; v.K == algebra.KindInt {
				return algebra.Bool(v.N >= n), nil
			} else {
				return other(v)
			}
		}
	}
	return nil
}

// Binding gives the values of a binding's variables: Binding[v] is the tuple
// bound to variable v.
type Binding = [][]algebra.Value

// Eval evaluates e on a binding by walking the tree.
func Eval(e Expr, b Binding) (algebra.Value, error) {
	switch e := e.(type) {
	case *Const:
		return e.V, nil
	case *Col:
		return b[e.Var][e.Attr], nil
	case *Unary:
		x, err := Eval(e.X, b)
		if err != nil {
			return x, err
		}
		if e.Op == OpNot {
			return algebra.Bool(!x.B()), nil
		}
		r, err := Negate(x)
		if err != nil {
			return r, e.Src.Wrap(e.At, err)
		}
		return r, nil
	case *Binary:
		x, err := Eval(e.X, b)
		if err != nil {
			return x, err
		}
		switch e.Op {
		case OpAnd:
			if !x.B() {
				return x, nil
			}
			return Eval(e.Y, b)
		case OpOr:
			if x.B() {
				return x, nil
			}
			return Eval(e.Y, b)
		}
		y, err := Eval(e.Y, b)
		if err != nil {
			return y, err
		}
		if e.Op.IsComparison() {
			return algebra.Bool(CompareOp(e.Op, x, y)), nil
		}
		r, err := Arith(e.Op, x, y, e.T)
		if err != nil {
			return r, e.Src.Wrap(e.At, err)
		}
		return r, nil
	case *TimeOf, *AggRef:
		return algebra.Value{}, errUnbound
	}
	return algebra.Value{}, errors.New("unknown expression")
}

// Fn is a compiled value expression.
type Fn func(b Binding) (algebra.Value, error)

// Compile turns e into a closure; it computes what Eval computes.
func Compile(e Expr) Fn {
	switch e := e.(type) {
	case *Const:
		v := e.V
		return func(Binding) (algebra.Value, error) { return v, nil }
	case *Col:
		vr, at := e.Var, e.Attr
		return func(b Binding) (algebra.Value, error) { return b[vr][at], nil }
	case *Unary:
		x := Compile(e.X)
		if e.Op == OpNot {
			return func(b Binding) (algebra.Value, error) {
				v, err := x(b)
				return algebra.Bool(!v.B()), err
			}
		}
		pos, src := e.At, e.Src
		return func(b Binding) (algebra.Value, error) {
			v, err := x(b)
			if err != nil {
				return v, err
			}
			r, err := Negate(v)
			if err != nil {
				return r, src.Wrap(pos, err)
			}
			return r, nil
		}
	case *Binary:
		x, y := Compile(e.X), Compile(e.Y)
		op, t, pos, src := e.Op, e.T, e.At, e.Src
		switch {
		case op == OpAnd:
			return func(b Binding) (algebra.Value, error) {
				v, err := x(b)
				if err != nil || !v.B() {
					return v, err
				}
				return y(b)
			}
		case op == OpOr:
			return func(b Binding) (algebra.Value, error) {
				v, err := x(b)
				if err != nil || v.B() {
					return v, err
				}
				return y(b)
			}
		case op == OpEq:
			if c, ok := e.Y.(*Const); ok && c.V.K != algebra.KindFloat && algebra.Identical(e.X.Type(), c.T) {
				cv := c.V
				if col, ok := e.X.(*Col); ok {
					// A column against a constant, the commonest
					// conjunct: read the column here, not by a call.
					vr, at := col.Var, col.Attr
					return func(b Binding) (algebra.Value, error) {
						v := &b[vr][at]
						return algebra.Bool(v.N == cv.N && v.S == cv.S), nil
					}
				}
				return func(b Binding) (algebra.Value, error) {
					v, err := x(b)
					return algebra.Bool(v.N == cv.N && v.S == cv.S), err
				}
			}
			if f := compileColIntCmp(e); f != nil {
				return f
			}
			fallthrough
		case op.IsComparison():
			if f := compileColIntCmp(e); f != nil {
				return f
			}
			return func(b Binding) (algebra.Value, error) {
				v, err := x(b)
				if err != nil {
					return v, err
				}
				w, err := y(b)
				return algebra.Bool(CompareOp(op, v, w)), err
			}
		default:
			return func(b Binding) (algebra.Value, error) {
				v, err := x(b)
				if err != nil {
					return v, err
				}
				w, err := y(b)
				if err != nil {
					return w, err
				}
				r, err := Arith(op, v, w, t)
				if err != nil {
					return r, src.Wrap(pos, err)
				}
				return r, nil
			}
		}
	case *TimeOf, *AggRef:
		return func(Binding) (algebra.Value, error) { return algebra.Value{}, errUnbound }
	}
	panic("expr.Compile: unknown expression " + strings.TrimSpace(e.String()))
}
