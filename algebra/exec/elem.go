package exec

import "github.com/tqmon/tqmon/algebra"

// runState is shared by the operators of a network: the first runtime error
// stops the run.
type runState struct {
	err error
	// check, when the run has a budget, checks it (Network.checkBudget);
	// poll calls it every pollStride steps.
	check func()
	steps uint
	// hash keys Coalesce groups and join indexes: algebra.HashTuple, or in
	// tests a hash under which keys collide (Options.collide).
	hash func([]algebra.Value) uint64
}

func (s *runState) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// holder is implemented by operators that keep tuples, for statistics.
type holder interface {
	// Held is the number of tuples (stored inputs, pending decisions and
	// buffered outputs) the operator holds now.
	Held() int
}
