package kernel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/kernel"
)

// WaitApplied, which ends a -c run, follows the monitor: while the
// monitor is stopped with its session full, the drain keeps the rest in
// the ring and the wait does not end (the context's deadline does);
// once the monitor reads again the wait ends, and every record reaches
// it. A closed resident ends the wait at once.
func TestWaitAppliedFollowsTheMonitor(t *testing.T) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	const n = 100000 // more than a session holds, less than the ring and the session together
	resume := make(chan struct{})
	c := consume(t, s, time.Second, func(k int64) {
		if k == 1000 {
			<-resume
		}
	})
	write(s, n)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	err = s.R.WaitApplied(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with the monitor stopped the wait ended with %v; want the deadline", err)
	}
	close(resume)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.R.WaitApplied(ctx); err != nil {
		t.Errorf("with the monitor reading the wait ended with %v", err)
	}
	ok := c.wait(n, 10*time.Second)
	s.Close()
	c.stop()
	if !ok {
		t.Errorf("%d of %d results printed", c.seen.Load(), n)
	}
	if d := c.stats.Dropped["Syscall"]; d != 0 {
		t.Errorf("%d packets dropped", d)
	}
	if err := s.R.WaitApplied(context.Background()); err != nil {
		t.Errorf("a closed resident: %v", err)
	}
}
