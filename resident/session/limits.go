package session

import (
	"sync/atomic"
	"time"
)

// The bounds on what a remote monitor can make its resident hold, the
// same for every resident (each resident adds its own: samplers, the
// shortest sampling period). A command that would pass one is refused
// with a *CommandError naming it; a packet that does not fit is dropped
// and counted (Count.Drops), so the loss reaches the remote.
const (
	// MaxHeld bounds the packets one session holds: those held back by
	// the watermark plus those in the batch its remote has not taken.
	// A held packet of two values costs its resident ≈ 330 bytes of
	// heap (the packet and its values in the batch and its arena, with
	// the slack of their growth: measured by TestHostileNeverReads,
	// 43 MB for 131,072 packets), so about 22 MB.
	MaxHeld = 1 << 16
	// MaxHeldTotal bounds the packets all of a resident's sessions hold
	// together (a Budget): about 85 MB, whatever the number of sessions
	// (TestHostileEntityFlood fills it with 48 sessions that never read).
	// Four sessions that never read can fill it; an honest remote then
	// loses packets too (counted), but its resident does not grow.
	MaxHeldTotal = 1 << 18
	// MaxEnables bounds the keys (sensor and entity) one session holds
	// enabled, pending or not: a key costs its resident ≈ 100 bytes.
	MaxEnables = 1 << 16
	// MaxLease is the longest lease a remote may ask for: a remote that
	// vanishes leaves its enables in force at most this long.
	MaxLease = time.Hour
)

// Budget is what all of a resident's sessions may hold together, in
// packets: each session's mailbox takes from it what it holds and gives
// it back as its remote takes batches (or the session ends). The zero
// value holds nothing; NewBudget makes one.
type Budget struct {
	held atomic.Int64
	max  int64
}

// NewBudget returns a budget of max packets (MaxHeldTotal for a resident).
func NewBudget(max int) *Budget { return &Budget{max: int64(max)} }

// Held returns the packets held now.
func (b *Budget) Held() int { return int(b.held.Load()) }

// take takes up to n packets from the budget and returns how many it got
// (a nil budget grants everything).
func (b *Budget) take(n int) int {
	if b == nil || n <= 0 {
		return max(n, 0)
	}
	for {
		h := b.held.Load()
		g := min(int64(n), b.max-h)
		if g <= 0 {
			return 0
		}
		if b.held.CompareAndSwap(h, h+g) {
			return int(g)
		}
	}
}

// force takes n packets however many are held (a new session's first
// packets, which are not dropped).
func (b *Budget) force(n int) {
	if b != nil {
		b.held.Add(int64(n))
	}
}

// Exhausted reports whether the budget has no packet left.
func (b *Budget) Exhausted() bool { return b != nil && b.held.Load() >= b.max }

// give gives n packets back.
func (b *Budget) give(n int) {
	if b != nil && n > 0 {
		b.held.Add(-int64(n))
	}
}
