package resident_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
)

// TestPlanOutputBound: a plan session whose monitor reads nothing holds
// at most Options.PlanQueue result packets; past it the fragment stops,
// and the session, read at last, says so (PResultLost) after the results
// it held — never more than the bound. A plan session takes no other
// command.
func TestPlanOutputBound(t *testing.T) {
	const bound = 50
	clock := demo.NewClock(1000)
	opts := demo.Options(clock, nil)
	opts.PlanQueue = bound
	res := resident.New(ossensors.Spec(), opts)
	defer res.Close()
	s := res.Open()
	err := s.Apply(&wire.Command{Kind: wire.CPlan, Text: `range of p is Process
range of s is SendMessage
retrieve (s.Process, s.Mailbox) where p.Process = s.Process`})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(&wire.Command{Kind: wire.CEnableAll, Sensor: 1}); err == nil || !strings.Contains(err.Error(), "plan session") {
		t.Fatalf("a plan session took another command: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	demo.New(ossensors.New(res), demo.DefaultConfig(1)).Run(ctx)
	clock.Stop()
	results, lost := 0, ""
	for lost == "" {
		b, err := s.Recv(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Packets {
			switch p.Kind {
			case wire.PResultBegin, wire.PResultEnd, wire.PResultEvent:
				results++
			case wire.PResultLost:
				lost = p.Vals[0].S
			}
		}
	}
	if results > bound || !strings.Contains(lost, "output bound") {
		t.Fatalf("%d results held (bound %d), lost %q: want at most the bound, then the output bound named", results, bound, lost)
	}
	t.Logf("%d results, then: %s", results, lost)
}
