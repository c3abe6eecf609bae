package resident

import (
	"github.com/tqmon/tqmon/resident/wire"
)

// Plan fragments (CPlan): a session whose first command is a CPlan
// becomes a plan session, run by package plans (the fragment runner the
// kernel resident shares) over a session of the resident's own (Local),
// in goroutines of their own — never in a subject's thread. Its bounds
// (state, open results, queued results: Options.PlanQueue, fragments at
// once, program text) are package plans'.

// startPlan makes s a plan session running cmd (r.mu held).
func (s *Session) startPlan(cmd *wire.Command) error {
	switch {
	case s.plan.Load() != nil:
		return s.fail(cmd, "kind", "the session already runs a plan")
	case s.flags.Len() > 0 || s.all.Len() > 0 || len(s.triggers) > 0 || len(s.samplers) > 0 || len(s.frags) > 0:
		return s.fail(cmd, "kind", "a plan must be the session's first command")
	}
	o, err := s.r.plans.Start(&s.core, cmd, s.r.Local, s.core.Stamp)
	if err != nil {
		return err
	}
	s.plan.Store(o)
	return nil
}

// PlanFragments returns how many plan fragments run (one for all the
// sessions that share it).
func (r *Resident) PlanFragments() int { return r.plans.Runs() }
