package rewrite_test

import (
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// TestProgramPlacementAcquisitional: the rule "resident plans"
// (PlaceProgram) is exact — every query of the placement corpora it
// places, run acquisitionally over the random histories as the resident
// runs it, its result elements sent as result packets (encoded, through a
// wire batch's encoding, decoded) and collected at the monitor, gives the
// reference evaluator's results over the complete histories.
func TestProgramPlacementAcquisitional(t *testing.T) {
	cat, corpus := placementCorpus(t)
	placed, costly, joins, aggs, sent := 0, 0, 0, 0, 0
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg, stmts, opt := placementPlans(t, cat, q)
			pl := rewrite.PlaceProgram(cat, opt...)
			// Costly ones too: the rule "placement cost" keeps them at
			// the monitor for the wire's sake, not for exactness.
			if !pl.Resident && !pl.Costly {
				return
			}
			placed++
			if pl.Costly {
				costly++
			}
			joins += min(pl.Joins, 1)
			aggs += min(pl.Aggregates, 1)
			// A fifth of the histories: the network is the one the other
			// differential tests hold to the reference; what this adds is
			// the results' way across the wire.
			eachHistory(t, cat, cfg, stmts, max(testkit.Histories()/5, 10), func(seed int, h *algebra.History, want []*algebra.Table) {
				// At the resident: the network, its elements encoded.
				net, err := exec.Build(cat, stmts, opt, exec.Options{SweepMin: 1})
				if err != nil {
					t.Fatal(err)
				}
				enc := remote.NewResultEncoder(func(t algebra.Time) int64 { return t })
				for i, s := range net.Stmts {
					s.Result.OnElem = func(e stream.Elem) { enc.Add(i, e) }
					s.Result.Discard = true
				}
				if _, err := net.RunAcquire(h); err != nil {
					t.Fatal(err)
				}
				if enc.Err() != "" {
					t.Fatal(enc.Err())
				}
				// Across the wire.
				frame, err := (&wire.Batch{Packets: enc.Take(), Watermark: 0}).MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				var b wire.Batch
				if err := b.UnmarshalBinary(frame); err != nil {
					t.Fatal(err)
				}
				sent += len(b.Packets)
				// At the monitor.
				dec := remote.NewResultDecoder()
				cols := make([]*exec.Collector, len(stmts))
				for i, s := range stmts {
					cols[i] = exec.NewCollector(s.Result)
				}
				for i := range b.Packets {
					stmt, e, err := dec.Elem(&b.Packets[i], b.Packets[i].TS)
					if err != nil {
						t.Fatal(err)
					}
					cols[stmt].Push(e)
				}
				for i := range want {
					if g, w := testkit.Rows(cols[i].Table()), testkit.Rows(want[i]); g != w {
						t.Fatalf("seed %d, statement %d, plan %s:\n--- placed\n%s--- reference\n%s", seed, i+1, plan.String(opt[i]), g, w)
					}
				}
			})
		})
	}
	t.Logf("%d of %d queries placeable whole at the resident (%d left at the monitor by the rule \"placement cost\"; %d with a join, %d with an aggregate); %d result packets", placed, len(corpus), costly, joins, aggs, sent)
	if joins == 0 || aggs == 0 {
		t.Error("no placed query with a join, or none with an aggregate")
	}
}
