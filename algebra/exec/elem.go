package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

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

// holds reports whether every conjunct of fs is true over b, in order; a
// conjunct failing with an error fails the run and holds is false.
func (s *runState) holds(fs []expr.Fn, b expr.Binding) bool {
	for _, f := range fs {
		ok, err := f(b)
		if err != nil {
			s.fail(err)
			return false
		}
		if !ok.B() {
			return false
		}
	}
	return true
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

// slab hands out Ts from blocks of slabBlock, so that operators allocate
// per block, not per tuple. Nothing it hands out is handed out again (a
// block lives while any of it is referenced), so what takes from it may
// keep pointers for as long as it likes.
type slab[T any] struct{ rest []T }

// slabBlock is how many Ts a block holds (or how many runs of n, for n > 1).
const slabBlock = 256

// one takes a zero T.
func (s *slab[T]) one() *T { return &s.take(1)[0] }

// peek is the next n Ts, not taken: a later take(n) takes them (as they
// were then written). They are zero unless written since.
func (s *slab[T]) peek(n int) []T {
	if len(s.rest) < n {
		s.rest = make([]T, max(n*slabBlock, n))
	}
	return s.rest[:n:n]
}

// take takes the next n Ts.
func (s *slab[T]) take(n int) []T {
	p := s.peek(n)
	s.rest = s.rest[n:]
	return p
}

// newRec takes a record of vals from from.
func newRec(s *slab[stream.Rec], vals []algebra.Value, from algebra.Time) *stream.Rec {
	r := s.one()
	*r = stream.Rec{Vals: vals, From: from}
	return r
}
