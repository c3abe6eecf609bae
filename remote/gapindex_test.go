package remote

import (
	"math/rand/v2"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// The gap index (inGap, meets) answers as a scan of every gap does, for
// gaps overlapping, nested, touching and reported out of order.
func TestGapIndexAgreesWithScan(tt *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var x gapIndex
		var gaps []algebra.Span
		n := 1 + rng.IntN(40)
		at := algebra.Time(0)
		for range n {
			from := at + algebra.Time(rng.IntN(20))
			if rng.IntN(5) == 0 { // out of order
				from = algebra.Time(rng.IntN(int(at) + 1))
			}
			g := algebra.Span{From: from, To: from + 1 + algebra.Time(rng.IntN(30))}
			at = max(at, from)
			gaps = append(gaps, g)
			x.add(g)
		}
		for t := algebra.Time(-1); t < at+40; t++ {
			in := false
			for _, g := range gaps {
				in = in || g.From <= t && t < g.To
			}
			if got := x.in(t); got != in {
				tt.Fatalf("round %d: in(%d) = %v, want %v (gaps %v)", round, t, got, in, gaps)
			}
			for to := t; to < t+25; to++ {
				meets := false
				for _, g := range gaps {
					meets = meets || t < g.From && g.From < to
				}
				if got := x.meets(t, to); got != meets {
					tt.Fatalf("round %d: meets(%d, %d) = %v, want %v (gaps %v)", round, t, to, got, meets, gaps)
				}
			}
		}
	}
}
