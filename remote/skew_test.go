package remote

import (
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// TestMergeWatermarkSkew: a host's clock-skew bound widens its watermark
// in the merge — wm − skew — and only while it sends: an ended host, or
// one that said it sends nothing more (forever), holds nothing back; a
// bound larger than the time since the beginning of time does not wrap.
func TestMergeWatermarkSkew(t *testing.T) {
	sec := algebra.Time(time.Second)
	for _, c := range []struct {
		name  string
		wms   []algebra.Time
		skews []algebra.Time
		done  []bool
		want  algebra.Time
	}{
		{"no bound", []algebra.Time{10 * sec, 20 * sec}, []algebra.Time{0, 0}, []bool{false, false}, 10 * sec},
		{"the later host's bound", []algebra.Time{10 * sec, 20 * sec}, []algebra.Time{0, 15 * sec}, []bool{false, false}, 5 * sec},
		{"the earlier host's bound", []algebra.Time{10 * sec, 20 * sec}, []algebra.Time{3 * sec, 0}, []bool{false, false}, 7 * sec},
		{"an ended host", []algebra.Time{10 * sec, 20 * sec}, []algebra.Time{9 * sec, 0}, []bool{true, false}, 20 * sec},
		{"forever", []algebra.Time{algebra.Forever, 20 * sec}, []algebra.Time{sec, 0}, []bool{false, false}, 20 * sec},
		{"no wrap", []algebra.Time{algebra.Beginning + 5, 20 * sec}, []algebra.Time{sec, 0}, []bool{false, false}, algebra.Beginning},
	} {
		var states []*connState
		for i := range c.wms {
			states = append(states, &connState{wm: c.wms[i], skew: c.skews[i], done: c.done[i], loss: newLosses()})
		}
		if got, _ := mergeWatermark(states); got != c.want {
			t.Errorf("%s: merged watermark %d, want %d", c.name, got, c.want)
		}
	}
}
