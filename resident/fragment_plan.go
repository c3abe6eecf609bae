package resident

import (
	"context"
	"io"
	"sync"

	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
)

// Plan fragments (CPlan; remote: plan fragments). A session whose first
// command is a CPlan becomes a plan session: the resident runs the
// program — compiled again over its own description, with the monitor's
// algebra — over a session of its own (Local), and the plan session
// carries the program's results instead of packets.
//
// Where it runs. In a goroutine of its own (remote.RunFragment), beside
// the drain: never in a subject's thread. What it costs the subject is
// what any session costs it (its inner session's bounds, shedding and
// counts are a session's like any other: a fragment that falls behind
// loses packets there, and its answers are cut at those gaps), and its
// state is bounded:
//   - operator state: cmd.Limit bytes (remote.DefaultFragmentLimit, at
//     most remote.MaxFragmentLimit), the network's memory budget;
//   - result tuples begun and not ended: remote.MaxFragmentOpen;
//   - results waiting for the monitor: Options.PlanQueue packets
//     (maxPlanQueued at most).
//
// Past any of them the fragment stops and the session says where
// (PResultLost): the answer is then incomplete from there — what was sent
// is right, nothing after it was observed — never wrong.

// maxPlanQueued bounds the result packets a plan session holds for a
// monitor that does not read them (Options.PlanQueue may lower it).
const maxPlanQueued = 1 << 16

// planQueue is Options.PlanQueue, defaulted and bounded.
func planQueue(n int) int {
	if n <= 0 || n > maxPlanQueued {
		return maxPlanQueued
	}
	return n
}

// planOut is a plan session's results waiting for its monitor.
type planOut struct {
	mu     sync.Mutex
	q      []*wire.Batch
	queued int           // packets in q
	max    int           // of queued (Resident.planQueue)
	ended  bool          // the fragment stopped: q holds its last batches
	done   chan struct{} // closed when ended is set
	cancel context.CancelFunc
	// endErr is how the session itself ended (closeWith's error, or its
	// Recv's), once it did: said after the fragment's last results.
	endErr error
}

// Put queues the packets settled up to wm (remote.FragmentSink).
func (o *planOut) Put(pks []wire.Packet, wm int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queued+len(pks) > o.max {
		return false
	}
	o.q = append(o.q, &wire.Batch{Packets: pks, Watermark: wm})
	o.queued += len(pks)
	return true
}

// Stop queues where and why the fragment stopped (remote.FragmentSink);
// "" is a normal end (the session it ran over ended).
func (o *planOut) Stop(at int64, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if why != "" && why != "ended" {
		o.q = append(o.q, &wire.Batch{Watermark: at, Packets: []wire.Packet{{Kind: wire.PResultLost, TS: at,
			Vals: []wire.Value{{Kind: wire.VString, S: why}}}}})
	}
	if !o.ended {
		o.ended = true
		close(o.done)
	}
}

// end notes how the session ended (the first said).
func (o *planOut) end(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.endErr == nil {
		o.endErr = err
	}
}

// ending is how the session ended (nil: it has not).
func (o *planOut) ending() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.endErr
}

// next pops the next batch (nil: none yet) and whether the fragment has
// ended with nothing left to send.
func (o *planOut) next() (*wire.Batch, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.q) == 0 {
		return nil, o.ended
	}
	b := o.q[0]
	o.q[0] = nil
	o.q = o.q[1:]
	o.queued -= len(b.Packets)
	return b, false
}

// startPlan makes s a plan session running cmd (r.mu held; the fragment
// starts in its own goroutine: opening its session takes r.mu).
func (s *Session) startPlan(cmd *wire.Command) error {
	switch {
	case s.plan.Load() != nil:
		return s.fail(cmd, "kind", "the session already runs a plan")
	case s.flags.Len() > 0 || s.all.Len() > 0 || len(s.triggers) > 0 || len(s.samplers) > 0 || len(s.frags) > 0:
		return s.fail(cmd, "kind", "a plan must be the session's first command")
	case cmd.Limit < 0 || cmd.Limit > remote.MaxFragmentLimit:
		return s.fail(cmd, "limit", "%d bytes out of range (at most %d)", cmd.Limit, remote.MaxFragmentLimit)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &planOut{cancel: cancel, done: make(chan struct{}), max: s.r.planQueue}
	s.plan.Store(o)
	c := *cmd
	c.Args = append([]string(nil), cmd.Args...)
	go func() {
		if err := remote.RunFragment(ctx, s.r.Local(), &c, o); err != nil {
			o.Stop(s.core.Stamp(), "refused: "+err.Error())
		}
	}()
	return nil
}

// recvPlan is Recv for a plan session: the fragment's results. The
// session's own batches (it enables nothing; the entity tuples every
// session is sent) are taken and dropped, which also keeps its lease and
// end noticed as any session's. Once the fragment is finished (a CPlan
// without text) or the session ends (the monitor's bye, its lease, the
// resident's close) the fragment stops and its last results — what its
// network settles at its end, as a monitor's does when its run ends — are
// still sent, then the session's end (io.EOF when normal).
func (s *Session) recvPlan(ctx context.Context, o *planOut) (*wire.Batch, error) {
	for {
		if b, ended := o.next(); b != nil {
			return b, nil
		} else if ended {
			s.Close() // everything said
			if err := o.ending(); err != nil {
				return nil, err // the session's own end (io.EOF: normal)
			}
			return nil, io.EOF
		}
		if o.ending() != nil {
			// Ended: by its monitor or its lease (closeWith stopped the
			// fragment) or with the resident (the fragment's own session
			// ends with it, after its last packets): the fragment ends
			// either way.
			select {
			case <-o.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		b, err := s.core.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			o.end(err)
			continue
		}
		s.core.Release(b) // (it blocks a few ms at most: the loop's pace)
	}
}
