package resident

import (
	"context"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// planSDL describes testSpec's first relations, so that a plan fragment
// compiles over it (the other sensors are not described: no plan reads
// them). The subject sets states 0–7.
const planSDL = `entity type Processor, Process, Mailbox
entity relation Processor(Processor: Processor)
entity relation Process(Process: Process, State: enum(S0, S1, S2, S3, S4, S5, S6, S7))
entity relation Mailbox(Mailbox: Mailbox)
event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target)
    traced on initiator
`

// TestHostilePlanFragment: a plan fragment joining every send of the
// subject with its process's states (read by its monitor, so it works
// while it may; it falls behind, and its session sheds and reports the
// losses) costs the subject no more than the hostile bound against its
// unmonitored twin, grows the heap within the bound, and leaves the
// honest monitor beside it served.
func TestHostilePlanFragment(t *testing.T) {
	heap := heapInUse()
	spec := testSpec()
	spec.SDL = planSDL
	x := &trio{r: New(spec, Options{}), twin: New(testSpec(), Options{}), ref: New(testSpec(), Options{})}
	for _, r := range []*Resident{x.r, x.twin, x.ref} {
		t.Cleanup(r.Close)
	}
	x.hh, x.rh = honestOn(t, x.r), honestOn(t, x.ref)
	p := x.r.Open()
	mustApply(t, p, wire.Command{Kind: wire.CLease, Period: int64(time.Hour)})
	mustApply(t, p, wire.Command{Kind: wire.CPlan, Limit: 16 << 20, Text: `range of p is Process range of s is SendMessage
retrieve (s.Mailbox, p.State) where p.Process = s.Process`})
	results := make(chan int, 1)
	go func() {
		n := 0
		defer func() { results <- n }()
		for {
			b, err := p.Recv(context.Background())
			if err != nil {
				return
			}
			for _, pk := range b.Packets {
				if pk.Kind >= wire.PResultBegin && pk.Kind <= wire.PResultEvent {
					n++
				}
				if pk.Kind == wire.PResultLost {
					t.Logf("the fragment stopped: %s", pk.Vals[0].S)
				}
			}
		}
	}()
	h, w := x.run(nil)
	checkHeap(t, heap)
	x.end(t)
	t.Logf("the fragment sent %d results", <-results)
	checkSubject(t, h, w)
}
