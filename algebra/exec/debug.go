package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
)

// DebugHeld describes what each operator holds (for diagnosing state).
func DebugHeld(n *Network) string {
	s := ""
	for _, h := range n.holders {
		switch x := h.h.(type) {
		case *Join:
			for i, in := range x.in {
				s += fmt.Sprintf("join input %d: live %d dead %d open %d entries %d closedQ %d buf %d\n", i, in.nLive, in.nDead, in.open.len(), len(in.entries)-in.entHead, len(in.closedQ)-in.closedH, len(in.buf)-in.head)
			}
			s += fmt.Sprintf("join: live cands %d outBuf %d lb %d wake %d\n", x.live, x.outBuf.len(), x.lb.len(), x.wake.len())
		default:
			s += fmt.Sprintf("%T: %d\n", h.h, h.h.Held())
		}
	}
	return s
}

// DebugPurge reports, for the first stored entry of each join input, whether
// it is purgeable now.
func DebugPurge(n *Network) string {
	s := ""
	for _, h := range n.holders {
		x, ok := h.h.(*Join)
		if !ok {
			continue
		}
		hz := algebra.Next(x.done)
		for i, in := range x.in {
			if in.entHead < len(in.entries) {
				e := in.entries[in.entHead]
				s += fmt.Sprintf("input %d maxLate %d: entry [%d,%d) open %v purgeable at h=%d: %v; threshold %d\n", i, in.maxLate, e.b, e.e, e.open, hz, x.purgeable(i, e, hz), in.threshold)
				for v, jn := range x.in {
					s += fmt.Sprintf("   input %d future %+v stored %+v\n", v, jn.futureSpan(hz), x.storedSpan(jn, hz))
				}
			}
		}
	}
	return s
}
