package session

import (
	"iter"
	"math/bits"
)

// MaxSessions is how many sessions (remote monitors) a resident serves at
// once: a packet's destination is a 64-bit set of session indices.
const MaxSessions = 64

// Table is a resident's open sessions by index (its lock held for every
// method). Indices are handed out round-robin, so an index just freed is
// the last to be taken again: a packet still on its way to a closed
// session is less likely to find a newer one at its index (the Go
// resident rules that out anyway, with epochs).
type Table[S any] struct {
	open [MaxSessions]*S
	mask uint64
	next int
}

// Add puts s at a free index and returns it, or ErrTooManySessions.
func (t *Table[S]) Add(s *S) (int, error) {
	for i := range MaxSessions {
		j := (t.next + i) % MaxSessions
		if t.open[j] == nil {
			t.open[j] = s
			t.mask |= 1 << j
			t.next = (j + 1) % MaxSessions
			return j, nil
		}
	}
	return -1, ErrTooManySessions
}

// Remove frees index i if s is still the session there.
func (t *Table[S]) Remove(i int, s *S) {
	if i >= 0 && i < MaxSessions && t.open[i] == s {
		t.open[i] = nil
		t.mask &^= 1 << i
	}
}

// At returns the session at index i, or nil.
func (t *Table[S]) At(i int) *S { return t.open[i] }

// Mask returns the indices of the open sessions.
func (t *Table[S]) Mask() uint64 { return t.mask }

// Len returns how many sessions are open.
func (t *Table[S]) Len() int { return bits.OnesCount64(t.mask) }

// Sessions returns the sessions by index (nil where none is open): a copy,
// for a drain round or a walk over every session.
func (t *Table[S]) Sessions() [MaxSessions]*S { return t.open }

// Indices iterates over the session indices in m, lowest first.
func Indices(m uint64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for ; m != 0; m &= m - 1 {
			if !yield(bits.TrailingZeros64(m)) {
				return
			}
		}
	}
}
