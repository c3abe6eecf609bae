package scene

import (
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// TestObservationBounded: past MaxGaps a relation's gaps are merged into
// the last kept — the count lost stays exact, the gaps held stay at the
// bound, the last one spans what was merged into it; gaps count only once
// begun; a relation sampled at several periods keeps the shortest.
func TestObservationBounded(t *testing.T) {
	o := newObservation()
	const n = MaxGaps + 1000
	for i := range n {
		o.Lose(Loss{Rel: "S", From: algebra.Time(10 * i), To: algebra.Time(10*i + 5), Count: 2})
	}
	o.Lose(Loss{Rel: "W", From: 100, To: 200, Count: 0}) // nothing lost: no gap
	if g := o.Gaps("S"); len(g) != MaxGaps || g[len(g)-1].From != 10*(MaxGaps-1) || g[len(g)-1].To != 10*(n-1)+5 || g[len(g)-1].Count != 2*1001 {
		t.Errorf("%d gaps kept, the last %+v", len(g), g[len(g)-1])
	}
	if got := o.Lost(algebra.Forever); got != 2*n {
		t.Errorf("lost %d, want %d", got, 2*n)
	}
	if got := o.Lost(10); got != 2 {
		t.Errorf("lost by 10: %d, want 2 (the gap begun at 0)", got)
	}
	if l := o.Lossy(algebra.Forever); len(l) != 1 || l[0] != "S" {
		t.Errorf("lossy %v", l)
	}
	o.Sample("R", time.Second)
	o.Sample("R", 0)
	o.Sample("R", 100*time.Millisecond)
	o.Sample("A", 0)
	if s := o.Sampled(); len(s) != 2 || s[0] != (Sampling{"A", 0}) || s[1] != (Sampling{"R", 100 * time.Millisecond}) {
		t.Errorf("sampled %v", s)
	}
}
