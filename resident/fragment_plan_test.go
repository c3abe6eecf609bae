package resident_test

import (
	"context"
	"errors"
	"fmt"
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

// TestPlanFragmentsBound: a resident runs at most four plan fragments at
// once; a fifth program is refused, an equal one shares, and one that
// ends makes room. A program over 64 KiB is refused.
func TestPlanFragmentsBound(t *testing.T) {
	res := resident.New(ossensors.Spec(), demo.Options(demo.NewClock(1000), nil))
	defer res.Close()
	plan := func(i int) (*resident.Session, error) {
		s := res.Open()
		text := fmt.Sprintf(`range of p is Process range of s is SendMessage retrieve (s.Mailbox, N = %d) where p.Process = s.Process`, i)
		return s, s.Apply(&wire.Command{Kind: wire.CPlan, Text: text})
	}
	var first *resident.Session
	for i := range 4 {
		s, err := plan(i)
		if err != nil {
			t.Fatalf("plan %d: %v", i, err)
		}
		if i == 0 {
			first = s
		}
	}
	if _, err := plan(4); err == nil || !strings.Contains(err.Error(), "plan fragments") {
		t.Fatalf("a fifth plan fragment: %v, want refused", err)
	}
	long := res.Open()
	if err := long.Apply(&wire.Command{Kind: wire.CPlan, Text: strings.Repeat(" ", 64<<10+1)}); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("a program over 64 KiB: %v, want refused", err)
	}
	if _, err := plan(2); err != nil {
		t.Fatalf("an equal program (shared): %v", err)
	}
	if n := res.PlanFragments(); n != 4 {
		t.Fatalf("%d plan fragments run, want 4", n)
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for res.PlanFragments() > 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := plan(5); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}
