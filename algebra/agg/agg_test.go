package agg

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

var allFuncs = []expr.AggFunc{expr.AggCount, expr.AggCountU, expr.AggSum, expr.AggSumU,
	expr.AggAvg, expr.AggAvgU, expr.AggMin, expr.AggMax, expr.AggAny,
	expr.AggStddev, expr.AggPercentile, expr.AggHistogram}

// randParam is a second argument for f: p in [0, 100] for percentile (as
// written: integers and decimals), a positive width for histogram.
func randParam(r *rand.Rand, f expr.AggFunc) *big.Rat {
	switch f {
	case expr.AggPercentile:
		return big.NewRat(int64(r.IntN(1001)), 10)
	case expr.AggHistogram:
		return big.NewRat(int64(1+r.IntN(7)), int64(1+r.IntN(3)))
	}
	return nil
}

func randValue(r *rand.Rand, t algebra.Type) algebra.Value {
	switch t.Kind {
	case algebra.KindFloat:
		switch r.IntN(12) {
		case 0:
			return algebra.Float(math.NaN())
		case 1:
			return algebra.Float(math.Inf(1 - 2*r.IntN(2)))
		case 2:
			return algebra.Float(math.Copysign(0, -1))
		case 3:
			return algebra.Float(math.MaxFloat64 * (1 - 2*r.Float64()))
		case 4:
			return algebra.Float(5e-324 * float64(r.IntN(5)))
		}
		return algebra.Float(float64(r.IntN(7)) / 4 * math.Pow(10, float64(r.IntN(40)-20)))
	case algebra.KindString:
		return algebra.Str(string(rune('a' + r.IntN(4))))
	case algebra.KindDuration:
		return algebra.DurationVal(int64(r.IntN(9)) - 4)
	}
	switch r.IntN(8) {
	case 0:
		return algebra.Int(math.MaxInt64 - int64(r.IntN(3)))
	case 1:
		return algebra.Int(math.MinInt64 + int64(r.IntN(3)))
	}
	return algebra.Int(int64(r.IntN(9)) - 4)
}

func same(a, b algebra.Value) bool {
	return a.K == b.K && a.N == b.N && a.S == b.S
}

// TestAccMatchesCompute: after any sequence of additions and removals, the
// incremental accumulator's value is exactly Compute over what it holds —
// bit for bit, errors included.
func TestAccMatchesCompute(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	types := []algebra.Type{algebra.TypeInt, algebra.TypeFloat, algebra.TypeString, algebra.TypeDuration}
	for trial := 0; trial < 3000; trial++ {
		typ := types[r.IntN(len(types))]
		f := allFuncs[r.IntN(len(allFuncs))]
		switch f {
		case expr.AggSum, expr.AggSumU, expr.AggAvg, expr.AggAvgU, expr.AggStddev, expr.AggHistogram:
			if typ.Kind == algebra.KindString {
				continue
			}
		}
		p := randParam(r, f)
		a := New(f, typ, p)
		var held []algebra.Value
		for step := 0; step < 40; step++ {
			if len(held) > 0 && r.IntN(3) == 0 {
				i := r.IntN(len(held))
				a.Remove(held[i])
				held = append(held[:i], held[i+1:]...)
			} else {
				v := randValue(r, typ)
				a.Add(v)
				held = append(held, v)
			}
			gv, gok, gerr := a.Value()
			wv, wok, werr := Compute(f, typ, p, held)
			if gok != wok || (gerr == nil) != (werr == nil) || gok && !same(gv, wv) {
				t.Fatalf("%s over %s %v: incremental %v %v %v, computed %v %v %v", f, typ, held, gv, gok, gerr, wv, wok, werr)
			}
			if a.Len() != len(held) {
				t.Fatalf("Len %d, want %d", a.Len(), len(held))
			}
		}
	}
}

func TestCompute(t *testing.T) {
	ints := []algebra.Value{algebra.Int(3), algebra.Int(1), algebra.Int(3), algebra.Int(-2)}
	tests := []struct {
		f    expr.AggFunc
		vals []algebra.Value
		t    algebra.Type
		want string
		ok   bool
	}{
		{expr.AggCount, ints, algebra.TypeInt, "4", true},
		{expr.AggCountU, ints, algebra.TypeInt, "3", true},
		{expr.AggSum, ints, algebra.TypeInt, "5", true},
		{expr.AggSumU, ints, algebra.TypeInt, "2", true},
		{expr.AggAvg, ints, algebra.TypeInt, "1.25", true},
		{expr.AggAvgU, ints, algebra.TypeInt, "0.6666666666666666", true},
		{expr.AggMin, ints, algebra.TypeInt, "-2", true},
		{expr.AggMax, ints, algebra.TypeInt, "3", true},
		{expr.AggAny, ints, algebra.TypeInt, "true", true},
		{expr.AggCount, nil, algebra.TypeInt, "0", true},
		{expr.AggAny, nil, algebra.TypeInt, "false", true},
		{expr.AggSum, nil, algebra.TypeInt, "", false},
		{expr.AggMax, nil, algebra.TypeInt, "", false},
		// Float sums are exact, then rounded once: 1e20 + 1 − 1e20 is 1.
		{expr.AggSum, []algebra.Value{algebra.Float(1e20), algebra.Float(1), algebra.Float(-1e20)}, algebra.TypeFloat, "1", true},
		{expr.AggAvg, []algebra.Value{algebra.DurationVal(3), algebra.DurationVal(4)}, algebra.TypeDuration, "3ns", true},
		{expr.AggAvg, []algebra.Value{algebra.DurationVal(-3), algebra.DurationVal(-4)}, algebra.TypeDuration, "-3ns", true},
		// Intermediate overflow is fine; the total must fit.
		{expr.AggSum, []algebra.Value{algebra.Int(math.MaxInt64), algebra.Int(1), algebra.Int(-2)}, algebra.TypeInt, "9223372036854775806", true},
		// Population standard deviation: 3,1,3,−2 have mean 1.25 and
		// variance 4.1875.
		{expr.AggStddev, ints, algebra.TypeInt, "2.0463381929681126", true},
		{expr.AggStddev, []algebra.Value{algebra.Int(5)}, algebra.TypeInt, "0", true},
		{expr.AggStddev, nil, algebra.TypeInt, "", false},
		// Exact sums: a large common offset does not cancel the spread.
		{expr.AggStddev, []algebra.Value{algebra.Float(1e16 + 2), algebra.Float(1e16 + 4)}, algebra.TypeFloat, "1", true},
		{expr.AggStddev, []algebra.Value{algebra.Float(1), algebra.Float(math.NaN())}, algebra.TypeFloat, "NaN", true},
		{expr.AggStddev, []algebra.Value{algebra.DurationVal(10), algebra.DurationVal(20), algebra.DurationVal(31)}, algebra.TypeDuration, "8ns", true},
		// p = 75: rank ⌈0.75·4⌉ = 3 of −2, 1, 3, 3.
		{expr.AggPercentile, ints, algebra.TypeInt, "3", true},
		// w = 2: −2 is in [−2, 0), 1 in [0, 2), the 3s in [2, 4).
		{expr.AggHistogram, ints, algebra.TypeInt, `"-2:1 0:1 2:2"`, true},
	}
	for _, tt := range tests {
		var p *big.Rat
		switch tt.f {
		case expr.AggPercentile:
			p = big.NewRat(75, 1)
		case expr.AggHistogram:
			p = big.NewRat(2, 1)
		}
		v, ok, err := Compute(tt.f, tt.t, p, tt.vals)
		if err != nil {
			t.Errorf("%s(%v): %v", tt.f, tt.vals, err)
			continue
		}
		if ok != tt.ok || ok && v.String() != tt.want {
			t.Errorf("%s(%v) = %v %v, want %s %v", tt.f, tt.vals, v, ok, tt.want, tt.ok)
		}
	}
	if _, _, err := Compute(expr.AggSum, algebra.TypeInt, nil, []algebra.Value{algebra.Int(math.MaxInt64), algebra.Int(1)}); !errors.Is(err, ErrOverflow) {
		t.Errorf("overflowing sum: %v, want ErrOverflow", err)
	}
}
