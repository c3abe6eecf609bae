package expr

import (
	"errors"
	"math"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// TestArithExact: integer, duration and time arithmetic gives the exact
// result or ErrOverflow, never a wrapped one; division by zero stays
// ErrDivByZero.
func TestArithExact(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	i, d, tm := algebra.TypeInt, algebra.TypeDuration, algebra.TypeTime
	tests := []struct {
		op   Op
		x, y int64
		t    algebra.Type
		want int64
		err  error
	}{
		{OpAdd, maxI, 1, i, 0, ErrOverflow},
		{OpAdd, maxI, -1, i, maxI - 1, nil},
		{OpAdd, minI, -1, i, 0, ErrOverflow},
		{OpSub, minI, 1, i, 0, ErrOverflow},
		{OpSub, 0, minI, i, 0, ErrOverflow},
		{OpSub, -1, minI, i, maxI, nil},
		{OpMul, maxI, 3, i, 0, ErrOverflow},
		{OpMul, minI, -1, i, 0, ErrOverflow},
		{OpMul, -1, minI, i, 0, ErrOverflow},
		{OpMul, 1 << 32, 1 << 31, i, 0, ErrOverflow},
		{OpMul, 1 << 31, 1 << 31, i, 1 << 62, nil},
		{OpMul, minI, 1, i, minI, nil},
		{OpMul, 0, minI, i, 0, nil},
		{OpDiv, minI, -1, i, 0, ErrOverflow},
		{OpDiv, 7, 0, i, 0, ErrDivByZero},
		{OpMod, minI, -1, i, 0, nil},
		{OpMod, 7, 0, d, 0, ErrDivByZero},
		{OpAdd, maxI, 1, d, 0, ErrOverflow},
		// A time lies on the time line: Forever at the latest.
		{OpAdd, algebra.Forever - 1, 1, tm, algebra.Forever, nil},
		{OpAdd, algebra.Forever, 1, tm, 0, ErrOverflow},
		{OpSub, algebra.Beginning + 1, 2, tm, 0, ErrOverflow},
		{OpSub, -20e9, maxI, tm, 0, ErrOverflow},
		// The duration between far times.
		{OpSub, algebra.Forever, -20e9, d, 0, ErrOverflow},
		{OpSub, algebra.Forever, 20e9, d, algebra.Forever - 20e9, nil},
	}
	for _, tt := range tests {
		got, err := Arith(tt.op, algebra.Value{K: tt.t.Kind, N: tt.x}, algebra.Value{K: tt.t.Kind, N: tt.y}, tt.t)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%d %s %d (%s): %v, %v; want %v", tt.x, tt.op, tt.y, tt.t.Kind, got, err, tt.err)
			}
			continue
		}
		if err != nil || got.N != tt.want {
			t.Errorf("%d %s %d (%s): %v, %v; want %d", tt.x, tt.op, tt.y, tt.t.Kind, got.N, err, tt.want)
		}
	}
	if _, err := Negate(algebra.Int(minI)); !errors.Is(err, ErrOverflow) {
		t.Errorf("-MinInt64: %v", err)
	}
	if v, err := Negate(algebra.Int(-maxI)); err != nil || v.N != maxI {
		t.Errorf("-(-MaxInt64): %v, %v", v, err)
	}
}

// TestCompiledColumnComparisons: the closures Compile makes for a column
// against a constant agree with Eval for every comparison, over ints on
// both sides of the constant and the extremes, and enums and strings.
func TestCompiledColumnComparisons(t *testing.T) {
	ops := []Op{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe}
	consts := []algebra.Value{algebra.Int(2), algebra.Int(math.MinInt64), algebra.Enum("Running", 1), algebra.Str("b")}
	vals := []algebra.Value{algebra.Int(1), algebra.Int(2), algebra.Int(3), algebra.Int(math.MaxInt64),
		algebra.Enum("Running", 1), algebra.Enum("Ready", 0), algebra.Str("a"), algebra.Str("b")}
	for _, c := range consts {
		typ := algebra.TypeInt
		switch c.K {
		case algebra.KindEnum:
			typ = algebra.Type{Kind: algebra.KindEnum}
		case algebra.KindString:
			typ = algebra.Type{Kind: algebra.KindString}
		}
		for _, op := range ops {
			e := &Binary{Op: op, X: &Col{Var: 1, Attr: 0, T: typ}, Y: &Const{V: c, T: typ}, T: algebra.TypeBool}
			f := Compile(e)
			for _, v := range vals {
				if v.K != c.K {
					continue // a column holds values of its type
				}
				b := Binding{nil, {v}}
				got, err := f(b)
				want, werr := Eval(e, b)
				if err != nil || werr != nil || got != want {
					t.Errorf("%v %v %v: compiled %v (%v), Eval %v (%v)", v, op, c, got, err, want, werr)
				}
			}
		}
	}
}
