// Package agg owns the arithmetic of TQuel's aggregate functions: what
// count, countU, sum, sumU, avg, avgU, min, max, any, stddev, percentile
// and histogram (summary.go) make of a multiset
// of values, computed two ways that must agree exactly — Compute, from the
// whole multiset (the reference evaluator's), and Acc, kept up to date as
// values come and go (the incremental interpreter's).
//
// Results do not depend on the order values come in: integer and duration
// sums are exact (128 bits; a result outside 64 bits is an error), float
// sums are the exact sum rounded once, averages the exact quotient rounded
// once. Float results are canonical: one zero (+0) and one NaN.
package agg

import (
	"errors"
	"math"
	"math/big"
	"math/bits"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// ErrOverflow is returned when an integer or duration sum leaves 64 bits.
var ErrOverflow = errors.New("aggregate sum overflows 64 bits")

// floatPrec holds any sum of float64s exactly (their exponents span about
// 2100 bits), with room for 2^100 terms.
const floatPrec = 2300

// Compute is f over the multiset vals of type t (the argument's type): the
// value, or ok false where f has none (sum, avg, min, max and the
// summaries of nothing). p is the second argument of percentile (p) and
// histogram (the bucket width), nil for the others.
func Compute(f expr.AggFunc, t algebra.Type, p *big.Rat, vals []algebra.Value) (v algebra.Value, ok bool, err error) {
	if f.Unique() {
		seen := map[string]bool{}
		var d []algebra.Value
		for _, x := range vals {
			k := string(algebra.AppendKey(nil, x))
			if !seen[k] {
				seen[k] = true
				d = append(d, x)
			}
		}
		vals = d
	}
	switch f {
	case expr.AggCount, expr.AggCountU:
		return algebra.Int(int64(len(vals))), true, nil
	case expr.AggAny:
		return algebra.Bool(len(vals) > 0), true, nil
	}
	if len(vals) == 0 {
		return algebra.Value{}, false, nil
	}
	switch f {
	case expr.AggStddev, expr.AggPercentile, expr.AggHistogram:
		return computeSummary(f, t, p, vals), true, nil
	case expr.AggMin, expr.AggMax:
		best := vals[0]
		for _, x := range vals[1:] {
			c := algebra.Compare(x, best)
			if f == expr.AggMin && c < 0 || f == expr.AggMax && c > 0 {
				best = x
			}
		}
		return canonical(best), true, nil
	}
	var s sum
	for _, x := range vals {
		s.add(x, t, 1)
	}
	if f == expr.AggSum || f == expr.AggSumU {
		v, err := s.total(t)
		return v, err == nil, err
	}
	v, err = s.mean(t, int64(len(vals)))
	return v, err == nil, err
}

// canonical makes float zeros +0 and NaNs the one NaN.
func canonical(v algebra.Value) algebra.Value {
	if v.K != algebra.KindFloat {
		return v
	}
	f := v.F()
	switch {
	case f == 0:
		return algebra.Float(0)
	case f != f:
		return algebra.Float(math.NaN())
	}
	return v
}

// sum is an exact running sum of ints, durations or floats; values can be
// removed as well as added.
type sum struct {
	hi, lo uint64 // ints and durations: two's complement 128-bit sum
	f      *big.Float
	nan    int // float NaNs, +Inf and −Inf, counted apart
	pinf   int
	ninf   int
}

// add adds v (of argument type t) sign times (sign is 1 or −1).
func (s *sum) add(v algebra.Value, t algebra.Type, sign int) {
	if t.Kind != algebra.KindFloat {
		x := v.N
		if sign < 0 {
			// Subtract: add the 128-bit negation of x.
			s.add128(negate128(x))
			return
		}
		s.add128(extend128(x))
		return
	}
	f := v.F()
	switch {
	case f != f:
		s.nan += sign
		return
	case math.IsInf(f, 1):
		s.pinf += sign
		return
	case math.IsInf(f, -1):
		s.ninf += sign
		return
	}
	if s.f == nil {
		s.f = new(big.Float).SetPrec(floatPrec)
	}
	x := new(big.Float).SetFloat64(f)
	if sign < 0 {
		s.f.Sub(s.f, x)
	} else {
		s.f.Add(s.f, x)
	}
}

func extend128(x int64) (uint64, uint64) {
	if x < 0 {
		return math.MaxUint64, uint64(x)
	}
	return 0, uint64(x)
}

func negate128(x int64) (uint64, uint64) {
	hi, lo := extend128(x)
	lo, borrow := bits.Sub64(0, lo, 0)
	hi, _ = bits.Sub64(0, hi, borrow)
	return hi, lo
}

func (s *sum) add128(hi, lo uint64) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, lo, 0)
	s.hi, _ = bits.Add64(s.hi, hi, carry)
}

// int128 is the integer sum as a big.Int.
func (s *sum) int128() *big.Int {
	z := new(big.Int).SetUint64(s.hi)
	z.Lsh(z, 64)
	z.Or(z, new(big.Int).SetUint64(s.lo))
	if s.hi>>63 == 1 { // negative
		z.Sub(z, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	return z
}

// special is the float result forced by NaNs and infinities, if any.
func (s *sum) special() (float64, bool) {
	switch {
	case s.nan > 0 || s.pinf > 0 && s.ninf > 0:
		return math.NaN(), true
	case s.pinf > 0:
		return math.Inf(1), true
	case s.ninf > 0:
		return math.Inf(-1), true
	}
	return 0, false
}

// total is the sum as a value of type t.
func (s *sum) total(t algebra.Type) (algebra.Value, error) {
	if t.Kind == algebra.KindFloat {
		if f, ok := s.special(); ok {
			return canonical(algebra.Float(f)), nil
		}
		if s.f == nil {
			return algebra.Float(0), nil
		}
		f, _ := s.f.Float64()
		return canonical(algebra.Float(f)), nil
	}
	// Fits in 64 bits when hi is the sign extension of lo.
	if s.hi != 0 && s.hi != math.MaxUint64 || (s.hi == 0) != (s.lo>>63 == 0) {
		return algebra.Value{}, ErrOverflow
	}
	return algebra.Value{K: t.Kind, N: int64(s.lo)}, nil
}

// mean is the sum divided by n (> 0): a float for ints and floats, a
// duration (truncated toward zero) for durations.
func (s *sum) mean(t algebra.Type, n int64) (algebra.Value, error) {
	switch t.Kind {
	case algebra.KindFloat:
		if f, ok := s.special(); ok {
			return canonical(algebra.Float(f)), nil
		}
		if s.f == nil {
			return algebra.Float(0), nil
		}
		q := new(big.Float).SetPrec(53).Quo(s.f, new(big.Float).SetInt64(n))
		f, _ := q.Float64()
		return canonical(algebra.Float(f)), nil
	case algebra.KindInt:
		num := new(big.Float).SetPrec(200).SetInt(s.int128())
		q := new(big.Float).SetPrec(53).Quo(num, new(big.Float).SetInt64(n))
		f, _ := q.Float64()
		return canonical(algebra.Float(f)), nil
	}
	q := new(big.Int).Quo(s.int128(), big.NewInt(n)) // truncates toward zero
	return algebra.DurationVal(q.Int64()), nil
}
