package kernel

import (
	"slices"

	"github.com/tqmon/tqmon/resident/wire"
)

// Plan fragments (wire.CPlan; package plans, the fragment runner the Go
// resident shares): a session whose first command is a CPlan becomes a
// plan session. Its program — joins of the kernel's relations and
// aggregates over them included — is compiled again over the resident's
// own description and run (remote.RunFragment) over a session of the
// resident's own (Local), in goroutines of its own; the plan session
// carries the program's results, not the sensors' packets.
//
// Safety. The kernel resident runs in its own process (`tqmon resident
// --kernel`), not the subject's: what a fragment can harm is the
// resident's memory and the kernel's rings, and both are bounded.
//   - Memory: per fragment, operator state within the CPlan's bound
//     (remote.DefaultFragmentLimit, 64 MiB; at most
//     remote.MaxFragmentLimit), at most remote.MaxFragmentOpen (2^20)
//     result tuples open, at most Options.PlanQueue (plans.MaxQueued,
//     65,536) result packets waiting for the monitor; at most
//     plans.MaxPlans (4) fragments at once, equal ones shared, each
//     program at most plans.MaxText (64 KiB). Past any, the fragment
//     stops and its sessions are told where (PResultLost): the answer is
//     incomplete from there, never wrong (TestKernelPlanStateBound).
//   - The rings: the fragment reads its inner session as a remote
//     monitor would. The drain empties the rings every millisecond into
//     the sessions' mailboxes and never waits for a session: one that
//     falls behind sheds within its mailbox and the resident's
//     session.Budget, counted as its loss (the fragment reports the gap
//     as a PResultLoss, and its answer is cut there). So a slow or
//     stalled fragment cannot make the kernel's ring overflow any sooner
//     than a slow remote monitor can; the ring's own overflow is counted
//     as loss for every session, as always (drain.go).
//   - Sessions: a plan session and its inner session are two of the
//     resident's session.MaxSessions.

// localHello is the hello of an in-process connection (Local): the
// resident's without wire.CapPlans. In process (`tqmon query --kernel`)
// there is no wire a plan fragment could spare, so the monitor runs its
// network over the packets itself, one hop fewer; a monitor reaching
// the resident through a transport (Sessions) is offered plans.
func (r *Resident) localHello() *wire.Hello {
	h := r.Hello()
	h.Caps = slices.DeleteFunc(slices.Clone(h.Caps), func(c string) bool { return c == wire.CapPlans })
	return h
}

// startPlan makes s a plan session running cmd (r.mu held).
func (s *Session) startPlan(cmd *wire.Command) error {
	switch {
	case s.plan.Load() != nil:
		return s.core.Fail(cmd, "kind", "the session already runs a plan")
	case s.flags.Len() > 0 || s.all.Len() > 0 || len(s.trigs) > 0 || len(s.frags) > 0:
		return s.core.Fail(cmd, "kind", "a plan must be the session's first command")
	case s.r.plans == nil:
		return s.core.Fail(cmd, "kind", "the resident runs no plans (Options.NoPlans)")
	}
	o, err := s.r.plans.Start(&s.core, cmd, s.r.Local, monoNow)
	if err != nil {
		return err
	}
	s.plan.Store(o)
	return nil
}

// PlanFragments returns how many plan fragments run (one for all the
// sessions that share it).
func (r *Resident) PlanFragments() int {
	if r.plans == nil {
		return 0
	}
	return r.plans.Runs()
}
