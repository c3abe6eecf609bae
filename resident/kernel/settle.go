package kernel

import (
	"context"
	"time"
)

// WaitApplied returns once the drain has applied every record stamped
// before the call — its watermark has passed the monotonic clock read
// at the call — or when ctx ends (its error), or the resident is closed
// or has nothing tracking (nil).
//
// A run that watches a command ends this way (subject: the command
// exits, its last context switch settles, then WaitApplied, then Close):
// the drain hands a round no more records than the roomiest session can
// hold, so the watermark passes the command's end only once the monitor
// has read all but its session's last round, which Close delivers. Before,
// the resident was closed a fixed 20 ms after the exit: a monitor still
// behind then lost what the ring held (counted and reported, but lost:
// TestKernelCountsEveryCall counted 599,274 of 1,000,000 calls with
// 877,802 delivered). The subject's threads are gone by then, so the
// wait costs the subject nothing; a monitor that stops reading holds the
// run open until ctx ends, as a stopped reader of any pipe does.
func (r *Resident) WaitApplied(ctx context.Context) error {
	target := monoNow()
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for {
		r.mu.Lock()
		tr, closed := r.tr, r.closed
		done := closed || tr == nil || tr.lastW >= target
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
