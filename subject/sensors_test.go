package subject

import (
	"strings"
	"testing"
	"time"
)

// TestExplainCounts: \sensors says why fewer packets were received than
// produced while enabled: drops (shed), sampling, other sessions' packets.
func TestExplainCounts(t *testing.T) {
	for _, c := range []struct {
		p      int
		w, d   uint64
		period time.Duration
		want   []string
	}{
		{10, 10, 0, 0, nil},
		{0, 8432, 0, 0, []string{"none for this query: the 8432 were produced for other sessions"}},
		{400, 8432, 32, 0, []string{"32 dropped: lost to a full ring or a full session (shed)", "8000 not for this query"}},
		{50, 50, 0, 10 * time.Millisecond, []string{"sampled every 10ms"}},
	} {
		got := explainCounts(c.p, c.w, c.d, c.period)
		if len(got) != len(c.want) {
			t.Errorf("%d/%d/%d: %q, want %q", c.p, c.w, c.d, got, c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("%d/%d/%d: %q, want it to start %q", c.p, c.w, c.d, got[i], w)
			}
		}
	}
}
