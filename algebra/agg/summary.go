package agg

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// The summaries: stddev, percentile and histogram. Each is computed from
// what an Acc keeps exactly (sums, a multiset, bucket counts), so the
// incremental and the whole-multiset computations agree bit for bit, and
// the result does not depend on the order values came in.
//
//   - stddev(x) is the population standard deviation √(Σ(x−x̄)²/n), from
//     the exact Σx and Σx²: a float for ints and floats (the square root
//     of the exact variance, taken to 200 bits and rounded to a float64),
//     a duration for durations (the exact root truncated to whole
//     nanoseconds). A NaN or an infinity among floats makes it NaN.
//   - percentile(x, p) is the nearest-rank percentile: of the n values in
//     ascending order, the one at rank ⌈p·n/100⌉ (the first for p = 0),
//     with p kept exactly as written (0 ≤ p ≤ 100). Any ordered type.
//   - histogram(x, w) is a string of the non-empty buckets in ascending
//     order, each "LOW:COUNT" where LOW = k·w for the bucket k = ⌊x/w⌋ (w
//     > 0, exact). Floats' NaNs and infinities are buckets of their own,
//     after the others: "NaN:1", "+Inf:2", "-Inf:1".

// sqPrec holds any sum of squares of float64s exactly (their exponents
// span about 4200 bits), with room for 2^100 terms.
const sqPrec = 4400

// squares is an exact running sum of squares of finite values.
type squares struct {
	i big.Int    // ints and durations
	f *big.Float // floats
	x big.Int    // scratch
}

func (q *squares) add(v algebra.Value, t algebra.Type, sign int) {
	if t.Kind == algebra.KindFloat {
		f := v.F()
		if f != f || math.IsInf(f, 0) {
			return // counted in sum's special cases
		}
		if q.f == nil {
			q.f = new(big.Float).SetPrec(sqPrec)
		}
		x := new(big.Float).SetPrec(120).SetFloat64(f)
		x.Mul(x, x) // exact: 106 bits at most
		if sign < 0 {
			q.f.Sub(q.f, x)
		} else {
			q.f.Add(q.f, x)
		}
		return
	}
	q.x.SetInt64(v.N)
	q.x.Mul(&q.x, &q.x)
	if sign < 0 {
		q.i.Sub(&q.i, &q.x)
	} else {
		q.i.Add(&q.i, &q.x)
	}
}

// stddev is the population standard deviation of n (> 0) values whose
// exact sum is s and sum of squares q.
func stddev(t algebra.Type, n int64, s *sum, q *squares) algebra.Value {
	if t.Kind == algebra.KindFloat {
		if _, ok := s.special(); ok {
			return canonical(algebra.Float(math.NaN()))
		}
		// n·Σx² − (Σx)², exactly, as a rational.
		var sr, qr big.Rat
		if s.f != nil {
			s.f.Rat(&sr)
		}
		if q.f != nil {
			q.f.Rat(&qr)
		}
		d := new(big.Rat).Mul(&qr, new(big.Rat).SetInt64(n))
		d.Sub(d, new(big.Rat).Mul(&sr, &sr))
		return algebra.Float(rootOver(d, n))
	}
	// n·Σx² − (Σx)² in integers.
	d := new(big.Int).Mul(&q.i, big.NewInt(n))
	si := s.int128()
	d.Sub(d, si.Mul(si, si))
	if t.Kind == algebra.KindDuration {
		// ⌊√d / n⌋ = ⌊⌊√d⌋ / n⌋.
		r := new(big.Int).Sqrt(d)
		return algebra.DurationVal(r.Quo(r, big.NewInt(n)).Int64())
	}
	return algebra.Float(rootOver(new(big.Rat).SetInt(d), n))
}

// rootOver is √d / n, d ≥ 0 exact, rounded to a float64 from 200 bits.
func rootOver(d *big.Rat, n int64) float64 {
	if d.Sign() <= 0 {
		return 0
	}
	v := new(big.Rat).Quo(d, new(big.Rat).SetInt64(n*n))
	x := new(big.Float).SetPrec(200).SetRat(v)
	x.Sqrt(x)
	f, _ := x.Float64()
	return f
}

// percentileRank is the 1-based nearest rank of the p-th percentile of n
// (> 0) values: ⌈p·n/100⌉, at least 1.
func percentileRank(p *big.Rat, n int) int {
	r := new(big.Rat).Mul(p, new(big.Rat).SetInt64(int64(n)))
	r.Quo(r, big.NewRat(100, 1))
	k := new(big.Int).Quo(r.Num(), r.Denom()) // floor (r ≥ 0)
	if !r.IsInt() {
		k.Add(k, big.NewInt(1))
	}
	return max(1, min(n, int(k.Int64())))
}

// percentileOf is the value at the nearest rank over distinct values with
// their multiplicities.
func percentileOf(p *big.Rat, n int, es []*entry) algebra.Value {
	slices.SortFunc(es, func(a, b *entry) int { return algebra.Compare(a.v, b.v) })
	rank := percentileRank(p, n)
	for _, e := range es {
		if rank <= e.n {
			return canonical(e.v)
		}
		rank -= e.n
	}
	return canonical(es[len(es)-1].v)
}

// bucket is one histogram bucket: k = ⌊x/w⌋, or a float special.
type bucket struct {
	k       big.Int
	special int // 0 finite; 1 NaN, 2 +Inf, 3 −Inf (in that order, after the finite ones)
	n       int
}

// bucketKey is v's bucket under width w, as a map key and the bucket.
func bucketKey(v algebra.Value, t algebra.Type, w *big.Rat) (string, bucket) {
	var b bucket
	var x big.Rat
	if t.Kind == algebra.KindFloat {
		f := v.F()
		switch {
		case f != f:
			b.special = 1
		case math.IsInf(f, 1):
			b.special = 2
		case math.IsInf(f, -1):
			b.special = 3
		}
		if b.special != 0 {
			return strconv.Itoa(-b.special), b
		}
		x.SetFloat64(f)
	} else {
		x.SetInt64(v.N)
	}
	x.Quo(&x, w)
	// Floor of a rational: Go's Div is Euclidean, which for a positive
	// denominator is the floor.
	b.k.Div(x.Num(), x.Denom())
	return b.k.String(), b
}

// histogramOf formats the buckets.
func histogramOf(t algebra.Type, w *big.Rat, bs []*bucket) algebra.Value {
	slices.SortFunc(bs, func(a, b *bucket) int {
		if c := cmp.Compare(a.special, b.special); c != 0 {
			return c
		}
		return a.k.Cmp(&b.k)
	})
	var sb strings.Builder
	for i, b := range bs {
		if i > 0 {
			sb.WriteByte(' ')
		}
		switch b.special {
		case 1:
			sb.WriteString("NaN")
		case 2:
			sb.WriteString("+Inf")
		case 3:
			sb.WriteString("-Inf")
		default:
			lo := new(big.Rat).Mul(new(big.Rat).SetInt(&b.k), w)
			sb.WriteString(formatLow(t, lo))
		}
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(b.n))
	}
	return algebra.Str(sb.String())
}

// formatLow writes a bucket's lower bound: a duration as a duration, an
// integer as an integer, anything else as the shortest float.
func formatLow(t algebra.Type, lo *big.Rat) string {
	if lo.IsInt() && lo.Num().IsInt64() {
		if t.Kind == algebra.KindDuration {
			return algebra.DurationVal(lo.Num().Int64()).String()
		}
		return lo.Num().String()
	}
	f, _ := lo.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// computeSummary is Compute for the summaries over a non-empty multiset,
// from the whole multiset (Acc keeps the same quantities as values come
// and go).
func computeSummary(f expr.AggFunc, t algebra.Type, p *big.Rat, vals []algebra.Value) algebra.Value {
	switch f {
	case expr.AggStddev:
		var s sum
		var q squares
		for _, x := range vals {
			s.add(x, t, 1)
			q.add(x, t, 1)
		}
		return stddev(t, int64(len(vals)), &s, &q)
	case expr.AggPercentile:
		sorted := slices.Clone(vals)
		slices.SortStableFunc(sorted, algebra.Compare)
		return canonical(sorted[percentileRank(p, len(sorted))-1])
	}
	m := map[string]*bucket{}
	var bs []*bucket
	for _, x := range vals {
		k, b := bucketKey(x, t, p)
		if m[k] == nil {
			m[k] = &b
			bs = append(bs, &b)
		}
		m[k].n++
	}
	return histogramOf(t, p, bs)
}
