package agg

import (
	"math/big"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Acc is one group's aggregate kept up to date as contributions come and
// go: Add and Remove a value, read Value. Its Value equals Compute over the
// multiset of values added and not removed. count and any keep a counter
// only; the others keep what they need (a running exact sum, or the
// distinct values with their multiplicities).
type Acc struct {
	f        expr.AggFunc
	t        algebra.Type
	p        *big.Rat // percentile's p, histogram's width
	n        int
	distinct map[string]*entry // countU, sumU, avgU, min, max, percentile
	s        sum
	sq       *squares           // stddev
	hist     map[string]*bucket // histogram
	ext      algebra.Value      // min or max, when extOK
	extOK    bool
	keybuf   []byte
}

type entry struct {
	v algebra.Value
	n int
}

// New makes an empty accumulator of f over arguments of type t; p is the
// second argument of percentile and histogram (nil for the others).
func New(f expr.AggFunc, t algebra.Type, p *big.Rat) *Acc {
	a := &Acc{f: f, t: t, p: p}
	switch f {
	case expr.AggCountU, expr.AggSumU, expr.AggAvgU, expr.AggMin, expr.AggMax, expr.AggPercentile:
		a.distinct = map[string]*entry{}
	case expr.AggStddev:
		a.sq = &squares{}
	case expr.AggHistogram:
		a.hist = map[string]*bucket{}
	}
	return a
}

// Len is the number of contributions held.
func (a *Acc) Len() int { return a.n }

// Add adds one contribution.
func (a *Acc) Add(v algebra.Value) {
	a.n++
	switch a.f {
	case expr.AggSum, expr.AggAvg:
		a.s.add(v, a.t, 1)
	case expr.AggStddev:
		a.s.add(v, a.t, 1)
		a.sq.add(v, a.t, 1)
	case expr.AggHistogram:
		k, b := bucketKey(v, a.t, a.p)
		if a.hist[k] == nil {
			a.hist[k] = &b
		}
		a.hist[k].n++
	}
	if a.distinct == nil {
		return
	}
	a.keybuf = algebra.AppendKey(a.keybuf[:0], v)
	e := a.distinct[string(a.keybuf)]
	if e == nil {
		e = &entry{v: v}
		a.distinct[string(a.keybuf)] = e
		if a.f == expr.AggSumU || a.f == expr.AggAvgU {
			a.s.add(v, a.t, 1)
		}
		if a.extOK && a.better(v, a.ext) {
			a.ext = v
		}
		if a.n == 1 {
			a.ext, a.extOK = v, true
		}
	}
	e.n++
}

// Remove removes one contribution of v, which must have been added.
func (a *Acc) Remove(v algebra.Value) {
	a.n--
	switch a.f {
	case expr.AggSum, expr.AggAvg:
		a.s.add(v, a.t, -1)
	case expr.AggStddev:
		a.s.add(v, a.t, -1)
		a.sq.add(v, a.t, -1)
	case expr.AggHistogram:
		k, _ := bucketKey(v, a.t, a.p)
		if b := a.hist[k]; b != nil {
			if b.n--; b.n == 0 {
				delete(a.hist, k)
			}
		}
	}
	if a.distinct == nil {
		return
	}
	a.keybuf = algebra.AppendKey(a.keybuf[:0], v)
	e := a.distinct[string(a.keybuf)]
	if e == nil {
		return
	}
	e.n--
	if e.n > 0 {
		return
	}
	delete(a.distinct, string(a.keybuf))
	if a.f == expr.AggSumU || a.f == expr.AggAvgU {
		a.s.add(e.v, a.t, -1)
	}
	if a.extOK && algebra.Compare(e.v, a.ext) == 0 {
		a.extOK = false
	}
}

func (a *Acc) better(x, than algebra.Value) bool {
	c := algebra.Compare(x, than)
	return a.f == expr.AggMin && c < 0 || a.f == expr.AggMax && c > 0
}

// Value is the aggregate of what is held; ok is false where it has none.
func (a *Acc) Value() (v algebra.Value, ok bool, err error) {
	switch a.f {
	case expr.AggCount:
		return algebra.Int(int64(a.n)), true, nil
	case expr.AggCountU:
		return algebra.Int(int64(len(a.distinct))), true, nil
	case expr.AggAny:
		return algebra.Bool(a.n > 0), true, nil
	}
	if a.n == 0 {
		return algebra.Value{}, false, nil
	}
	switch a.f {
	case expr.AggSum, expr.AggSumU:
		v, err := a.s.total(a.t)
		return v, err == nil, err
	case expr.AggAvg:
		v, err := a.s.mean(a.t, int64(a.n))
		return v, err == nil, err
	case expr.AggAvgU:
		v, err := a.s.mean(a.t, int64(len(a.distinct)))
		return v, err == nil, err
	case expr.AggStddev:
		return stddev(a.t, int64(a.n), &a.s, a.sq), true, nil
	case expr.AggPercentile:
		es := make([]*entry, 0, len(a.distinct))
		for _, e := range a.distinct {
			es = append(es, e)
		}
		return percentileOf(a.p, a.n, es), true, nil
	case expr.AggHistogram:
		bs := make([]*bucket, 0, len(a.hist))
		for _, b := range a.hist {
			bs = append(bs, b)
		}
		return histogramOf(a.t, a.p, bs), true, nil
	}
	if !a.extOK {
		first := true
		for _, e := range a.distinct {
			if first || a.better(e.v, a.ext) {
				a.ext, first = e.v, false
			}
		}
		a.extOK = true
	}
	return canonical(a.ext), true, nil
}
