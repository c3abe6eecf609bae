package exec

import (
	"math"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// The columnar path's expressions (columnar.go): value expressions of one
// variable compiled to closures over a relation's columns. A colVec fills
// an output column with the codes of an expression's values for the
// tuples of a selection vector; a colFilter narrows a selection vector to
// the tuples a where conjunct holds for. Each computes what expr.Eval
// computes, on codes: arithmetic and comparisons other than the ones
// specialised here call expr.Arith, expr.Negate and expr.CompareOp on the
// values the codes stand for (ints, floats, bools, times, durations and
// enum ordinals are their own codes), so their semantics are the
// interpreter's, not a second copy.

// colFilter is a compiled where conjunct: keep narrows sel, in place, to
// the tuples it holds for; span, when set, selects them from the tuples
// lo..hi−1 into sel (a batch's first conjunct: no vector to read).
type colFilter struct {
	keep func(sel []int32) ([]int32, error)
	span func(lo, hi int, sel []int32) []int32
}

// colVec is a compiled value expression.
type colVec struct {
	kind algebra.Kind // of its values
	typ  algebra.Type // the checker's
	// eval fills out[i] with the code of the value for tuple sel[i]; an
	// error is an arithmetic one. nil for an entity or string constant,
	// which only a comparison reads (by its text).
	eval func(sel []int32, out []int64) error
	// ranged: every value's code lies in [lo, hi].
	ranged bool
	lo, hi int64
	// An entity or string column's dictionary, its names, and the ranks
	// of its codes in their values' order (algebra.Dict.Ranks).
	dict          *algebra.Dict
	names         []string
	ranks, byRank []int32
	col           []int64 // a column's codes, when the expression is one
	// A constant: its code (or, for an entity or string, text).
	isConst bool
	c       int64
	text    string
	// A comparison of codes (intCompare): its operands and operator.
	x, y *colVec
	op   expr.Op
	// keyOf, when set, is a column whose code determines this
	// expression's, one to one and in the same order (a column plus or
	// minus a constant, or times a positive one): fromKey maps the
	// column's code to this expression's (an error is an arithmetic
	// one). Results are grouped by the column's code (colStmt.keys).
	keyOf   *colVec
	fromKey func(int64) (int64, error)
}

type colCompiler struct {
	cols  *algebra.Columns
	attrs []algebra.Attr
	v     int // the variable whose attributes are cols' (a join's side)
}

// nBased reports whether values of kind k are their own codes (N).
func nBased(k algebra.Kind) bool {
	switch k {
	case algebra.KindInt, algebra.KindFloat, algebra.KindBool, algebra.KindTime, algebra.KindDuration:
		return true
	}
	return false
}

// vec compiles e, or returns nil when the columnar path does not support
// it.
func (c *colCompiler) vec(e expr.Expr) *colVec {
	switch e := e.(type) {
	case *expr.Const:
		v := &colVec{kind: e.V.K, typ: e.T, isConst: true, c: e.V.N, text: e.V.S}
		switch e.V.K {
		case algebra.KindEntity, algebra.KindString:
			return v
		case algebra.KindEnum, algebra.KindInvalid:
			if e.V.K == algebra.KindInvalid || e.T.Enum == nil || e.V.N < 0 || e.V.N >= int64(len(e.T.Enum.Members)) || e.T.Enum.Members[e.V.N] != e.V.S {
				return nil
			}
		}
		v.ranged, v.lo, v.hi = e.V.K != algebra.KindFloat, e.V.N, e.V.N
		n := e.V.N
		v.eval = func(sel []int32, out []int64) error {
			for i := range out {
				out[i] = n
			}
			return nil
		}
		return v
	case *expr.Col:
		if e.Var != c.v || e.Attr >= len(c.attrs) {
			return nil
		}
		a := c.attrs[e.Attr]
		codes := c.cols.Codes[e.Attr]
		v := &colVec{kind: a.Type.Kind, typ: a.Type, col: codes, dict: c.cols.Dicts[e.Attr]}
		if v.dict != nil {
			v.names = v.dict.Names()
			v.ranks, v.byRank = v.dict.Ranks()
		}
		if v.kind != algebra.KindFloat {
			v.ranged, v.lo, v.hi = true, c.cols.Min[e.Attr], c.cols.Max[e.Attr]
		}
		v.eval = func(sel []int32, out []int64) error {
			for i, r := range sel {
				out[i] = codes[r]
			}
			return nil
		}
		return v
	case *expr.Unary:
		x := c.vec(e.X)
		if x == nil || x.eval == nil {
			return nil
		}
		if e.Op == expr.OpNot {
			if x.kind != algebra.KindBool {
				return nil
			}
			return &colVec{kind: algebra.KindBool, typ: e.T, ranged: true, lo: 0, hi: 1,
				eval: func(sel []int32, out []int64) error {
					if err := x.eval(sel, out); err != nil {
						return err
					}
					for i := range out {
						out[i] ^= 1
					}
					return nil
				}}
		}
		if !nBased(x.kind) || x.kind == algebra.KindBool {
			return nil
		}
		v := &colVec{kind: x.kind, typ: e.T}
		if x.ranged && x.kind != algebra.KindFloat && x.lo != math.MinInt64 {
			v.ranged, v.lo, v.hi = true, -x.hi, -x.lo
		}
		k := x.kind
		v.eval = func(sel []int32, out []int64) error {
			if err := x.eval(sel, out); err != nil {
				return err
			}
			for i, n := range out {
				r, err := expr.Negate(algebra.Value{K: k, N: n})
				if err != nil {
					return err
				}
				out[i] = r.N
			}
			return nil
		}
		return v
	case *expr.Binary:
		switch {
		case e.Op == expr.OpAnd || e.Op == expr.OpOr:
			return c.logic(e)
		case e.Op.IsComparison():
			return c.compare(e)
		}
		return c.arith(e)
	}
	return nil
}

// binary is the eval of an operation on x and y: both are evaluated for
// the tuples of sel, x's codes into out and y's into a buffer of its own,
// and combine makes out the result's.
func binary(x, y *colVec, combine func(out, yv []int64) error) func(sel []int32, out []int64) error {
	ys := make([]int64, colBatch)
	return func(sel []int32, out []int64) error {
		if err := x.eval(sel, out); err != nil {
			return err
		}
		yv := ys[:len(out)]
		if err := y.eval(sel, yv); err != nil {
			return err
		}
		return combine(out, yv)
	}
}

// logic compiles and and or over bools: both sides are evaluated (an
// error the interpreter would have short-circuited abandons the path).
func (c *colCompiler) logic(e *expr.Binary) *colVec {
	x, y := c.vec(e.X), c.vec(e.Y)
	if x == nil || y == nil || x.eval == nil || y.eval == nil || x.kind != algebra.KindBool || y.kind != algebra.KindBool {
		return nil
	}
	and := e.Op == expr.OpAnd
	return &colVec{kind: algebra.KindBool, typ: e.T, ranged: true, lo: 0, hi: 1,
		eval: binary(x, y, func(out, yv []int64) error {
			if and {
				for i := range out {
					out[i] &= yv[i]
				}
			} else {
				for i := range out {
					out[i] |= yv[i]
				}
			}
			return nil
		})}
}

// arith compiles an arithmetic operation on numbers, times and durations
// (expr.Arith per value; string concatenation is not supported).
func (c *colCompiler) arith(e *expr.Binary) *colVec {
	x, y := c.vec(e.X), c.vec(e.Y)
	if x == nil || y == nil || x.eval == nil || y.eval == nil || !nBased(x.kind) || !nBased(y.kind) ||
		x.kind == algebra.KindBool || y.kind == algebra.KindBool || !nBased(e.T.Kind) {
		return nil
	}
	op, t, xk, yk := e.Op, e.T, x.kind, y.kind
	v := &colVec{kind: t.Kind, typ: t}
	if xk != algebra.KindFloat && yk != algebra.KindFloat && t.Kind != algebra.KindFloat && x.ranged && y.ranged {
		v.ranged, v.lo, v.hi = arithRange(op, x, y, t)
	}
	if y.isConst && xk == algebra.KindInt && yk == algebra.KindInt && t.Kind == algebra.KindInt && (op == expr.OpMul || op == expr.OpAdd || op == expr.OpSub) {
		// An int and a constant, the commonest: checked inline.
		n := y.c
		if op != expr.OpMul || n > 0 {
			v.keyOf, v.fromKey = keyed(x, func(a int64) (int64, error) {
				r, ok := expr.Checked(op, a, n)
				if !ok {
					rv, err := expr.Arith(op, algebra.Int(a), algebra.Int(n), t)
					return rv.N, err
				}
				return r, nil
			})
		}
		v.eval = func(sel []int32, out []int64) error {
			if err := x.eval(sel, out); err != nil {
				return err
			}
			for i, a := range out {
				r, ok := expr.Checked(op, a, n)
				if !ok {
					_, err := expr.Arith(op, algebra.Int(a), algebra.Int(n), t)
					return err
				}
				out[i] = r
			}
			return nil
		}
		return v
	}
	v.eval = binary(x, y, func(out, yv []int64) error {
		for i := range out {
			r, err := expr.Arith(op, algebra.Value{K: xk, N: out[i]}, algebra.Value{K: yk, N: yv[i]}, t)
			if err != nil {
				return err
			}
			out[i] = r.N
		}
		return nil
	})
	return v
}

// keyed is the column x's codes determine x's by (colVec.keyOf) and the
// map from them to f of x's; nil when x is not such an expression.
func keyed(x *colVec, f func(int64) (int64, error)) (*colVec, func(int64) (int64, error)) {
	switch {
	case x.keyOf != nil:
		inner := x.fromKey
		return x.keyOf, func(c int64) (int64, error) {
			a, err := inner(c)
			if err != nil {
				return 0, err
			}
			return f(a)
		}
	case x.col != nil:
		return x, f
	}
	return nil, nil
}

// arithRange bounds x op y over the operands' ranges: for +, − and · the
// least and greatest of the corners (each exact, by expr.Arith, or no
// bound); none for / and %.
func arithRange(op expr.Op, x, y *colVec, t algebra.Type) (ok bool, lo, hi int64) {
	var xs, ys [2]int64
	switch op {
	case expr.OpAdd, expr.OpMul:
		xs, ys = [2]int64{x.lo, x.hi}, [2]int64{y.lo, y.hi}
	case expr.OpSub:
		xs, ys = [2]int64{x.lo, x.hi}, [2]int64{y.hi, y.lo}
	default:
		return false, 0, 0
	}
	if x.lo > x.hi || y.lo > y.hi {
		return false, 0, 0
	}
	lo, hi = math.MaxInt64, math.MinInt64
	for _, a := range xs {
		for _, b := range ys {
			r, err := expr.Arith(op, algebra.Value{K: x.kind, N: a}, algebra.Value{K: y.kind, N: b}, t)
			if err != nil {
				return false, 0, 0
			}
			lo, hi = min(lo, r.N), max(hi, r.N)
		}
	}
	return true, lo, hi
}

// compare compiles a comparison, or returns nil when codes cannot decide
// it: entities and strings compare by code for = and != only (the same
// dictionary for both sides), enums of one type by ordinal, and the other
// kinds by value (ints, bools, times and durations of one kind directly,
// others by expr.CompareOp).
func (c *colCompiler) compare(e *expr.Binary) *colVec {
	x, y := c.vec(e.X), c.vec(e.Y)
	if x == nil || y == nil {
		return nil
	}
	op := e.Op
	v := &colVec{kind: algebra.KindBool, typ: e.T, ranged: true, lo: 0, hi: 1}
	switch {
	case x.kind == algebra.KindEntity || x.kind == algebra.KindString || y.kind == algebra.KindEntity || y.kind == algebra.KindString:
		x, y, ok := codeOperands(x, y, op)
		if !ok {
			return nil
		}
		return intCompare(v, op, x, y)
	case x.kind == algebra.KindEnum || y.kind == algebra.KindEnum:
		if x.kind != y.kind || x.typ.Enum == nil || x.typ.Enum != y.typ.Enum {
			return nil
		}
		return intCompare(v, op, x, y)
	case x.kind == y.kind && x.kind != algebra.KindFloat && nBased(x.kind):
		return intCompare(v, op, x, y)
	case nBased(x.kind) && nBased(y.kind):
		if x.eval == nil || y.eval == nil {
			return nil
		}
		xk, yk := x.kind, y.kind
		v.eval = binary(x, y, func(out, yv []int64) error {
			for i := range out {
				out[i] = b2i(expr.CompareOp(op, algebra.Value{K: xk, N: out[i]}, algebra.Value{K: yk, N: yv[i]}))
			}
			return nil
		})
		return v
	}
	return nil
}

// codeOperands readies an entity or string comparison for comparing codes:
// both sides of one kind (and entity type), = or !=, a constant replaced
// by its code in the other side's dictionary (−1, equal to no code, when
// it has none) or, both constant, each by a code of its own. false when
// codes cannot decide it.
func codeOperands(x, y *colVec, op expr.Op) (*colVec, *colVec, bool) {
	if x.kind != y.kind || (op != expr.OpEq && op != expr.OpNe) ||
		x.kind == algebra.KindEntity && x.typ.Entity != y.typ.Entity {
		return nil, nil, false
	}
	switch {
	case x.isConst && y.isConst:
		eq := int64(0)
		if x.text != y.text {
			eq = 1
		}
		return constVec(0), constVec(eq), true
	case x.isConst:
		return constVec(codeIn(y.dict, x.text)), y, y.dict != nil
	case y.isConst:
		return x, constVec(codeIn(x.dict, y.text)), x.dict != nil
	}
	return x, y, x.dict != nil && x.dict == y.dict
}

func codeIn(d *algebra.Dict, s string) int64 {
	if d == nil {
		return -1
	}
	if c, ok := d.Code(s); ok {
		return c
	}
	return -1
}

// constVec is a constant code.
func constVec(n int64) *colVec {
	return &colVec{kind: algebra.KindInt, isConst: true, c: n, ranged: true, lo: n, hi: n,
		eval: func(sel []int32, out []int64) error {
			for i := range out {
				out[i] = n
			}
			return nil
		}}
}

// intCompare makes v compare x and y's codes as integers.
func intCompare(v *colVec, op expr.Op, x, y *colVec) *colVec {
	if x.eval == nil || y.eval == nil {
		return nil
	}
	v.eval = binary(x, y, func(out, yv []int64) error {
		for i := range out {
			out[i] = b2i(intCmp(op, out[i], yv[i]))
		}
		return nil
	})
	v.x, v.y, v.op = x, y, op
	return v
}

func intCmp(op expr.Op, a, b int64) bool {
	switch op {
	case expr.OpEq:
		return a == b
	case expr.OpNe:
		return a != b
	case expr.OpLt:
		return a < b
	case expr.OpLe:
		return a <= b
	case expr.OpGt:
		return a > b
	}
	return a >= b
}

// b2n is 1 for true: a selection vector is narrowed without a branch per
// tuple (the compiler makes it a flag set).
func b2n(b bool) int {
	if b {
		return 1
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// filter compiles a where conjunct, or returns nil when the path does not
// support it. A comparison of a column with a constant by codes reads the
// column directly; any other conjunct is evaluated and its true tuples
// kept.
func (c *colCompiler) filter(e expr.Expr) colFilter {
	v := c.vec(e)
	if v == nil || v.eval == nil || v.kind != algebra.KindBool {
		return colFilter{}
	}
	if v.x != nil {
		x, y, op := v.x, v.y, v.op
		if y.col != nil && x.isConst {
			x, y, op = y, x, flip(op)
		}
		if x.col != nil && y.isConst {
			return colConstFilter(x.col, op, y.c)
		}
	}
	buf := make([]int64, colBatch)
	return colFilter{keep: func(sel []int32) ([]int32, error) {
		b := buf[:len(sel)]
		if err := v.eval(sel, b); err != nil {
			return nil, err
		}
		n := 0
		for i, r := range sel {
			sel[n] = r
			n += int(b[i] & 1)
		}
		return sel[:n], nil
	}}
}

// flip is the operator that compares y with x as op compares x with y.
func flip(op expr.Op) expr.Op {
	switch op {
	case expr.OpLt:
		return expr.OpGt
	case expr.OpLe:
		return expr.OpGe
	case expr.OpGt:
		return expr.OpLt
	case expr.OpGe:
		return expr.OpLe
	}
	return op
}

// colConstFilter keeps the tuples whose code in col compares with k as op
// says: one loop per operator, without a call per tuple.
func colConstFilter(col []int64, op expr.Op, k int64) colFilter {
	switch op {
	case expr.OpEq:
		return colFilter{
			keep: func(sel []int32) ([]int32, error) {
				n := 0
				for _, r := range sel {
					sel[n] = r
					n += b2n(col[r] == k)
				}
				return sel[:n], nil
			},
			span: func(lo, hi int, sel []int32) []int32 {
				n := 0
				for r, c := range col[lo:hi] {
					sel[n] = int32(lo + r)
					n += b2n(c == k)
				}
				return sel[:n]
			}}
	case expr.OpGt:
		return colFilter{
			keep: func(sel []int32) ([]int32, error) {
				n := 0
				for _, r := range sel {
					sel[n] = r
					n += b2n(col[r] > k)
				}
				return sel[:n], nil
			},
			span: func(lo, hi int, sel []int32) []int32 {
				n := 0
				for r, c := range col[lo:hi] {
					sel[n] = int32(lo + r)
					n += b2n(c > k)
				}
				return sel[:n]
			}}
	}
	return colFilter{
		keep: func(sel []int32) ([]int32, error) {
			n := 0
			for _, r := range sel {
				sel[n] = r
				n += b2n(intCmp(op, col[r], k))
			}
			return sel[:n], nil
		},
		span: func(lo, hi int, sel []int32) []int32 {
			n := 0
			for r, c := range col[lo:hi] {
				sel[n] = int32(lo + r)
				n += b2n(intCmp(op, c, k))
			}
			return sel[:n]
		}}
}

// decode is the value a code of v stands for (decodable(v)).
func (v *colVec) decode(c int64) algebra.Value {
	switch v.kind {
	case algebra.KindEntity:
		return algebra.Entity(v.names[c])
	case algebra.KindString:
		return algebra.Str(v.names[c])
	case algebra.KindEnum:
		return algebra.Enum(v.typ.Enum.Members[c], int(c))
	}
	return algebra.Value{K: v.kind, N: c}
}
