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
	// At ≈ 150 bytes a packet of two or three values (the packet, its
	// values in the arena), about 20 MB.
	MaxHeld = 1 << 17
	// MaxHeldTotal bounds the packets all of a resident's sessions hold
	// together (a Budget): about 80 MB, whatever the number of sessions.
	// Sessions that never read can fill no more than half of it beyond
	// their reserves (Reserve): the other half is kept for the sessions'
	// reserves, so an honest remote is still served.
	MaxHeldTotal = 1 << 19
	// Reserve is what every session may hold whatever the others hold:
	// MaxHeldTotal / (2·MaxSessions) packets (4,096). A session takes
	// from the Budget freely up to its reserve, and beyond it only while
	// MaxSessions reserves stay free, and only its fair share of the
	// rest (the other half of the budget over the sessions open) — so
	// sessions that never read take at most half the budget between
	// them, each at most its share, and a remote that reads promptly
	// beside them (a drain round's packets within its reserve and share)
	// loses nothing to them (TestReserveServesHonest,
	// TestKernelHostileNeverReads).
	Reserve = MaxHeldTotal / (2 * MaxSessions)
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
//
// Each session's first reserve packets are its own: take grants them
// while the budget holds ≤ max in all; the packets a session holds
// beyond its reserve, only while the budget holds ≤ max − pool
// (pool = MaxSessions·reserve = max/2). Why every session always gets
// its reserve, and the budget never holds more than max (but for
// force): let A be the packets held beyond reserves and B those within
// (a session gives back from beyond its reserve first, so A only grows
// by a take beyond a reserve). Such a take leaves A + B ≤ max − pool,
// so A ≤ max − pool at all times; B ≤ MaxSessions·reserve = pool; so
// A + B ≤ max, and a take within a reserve, which keeps B ≤ pool,
// never finds the budget full. Beyond its reserve a session also holds
// at most its share, (max − pool) / the sessions open (as of its take):
// one that never reads cannot take what the others may need.
type Budget struct {
	held     atomic.Int64
	sessions atomic.Int64 // sessions open on the budget (join, leave)
	max      int64
	reserve  int64 // per session: max / (2·MaxSessions)
	pool     int64 // MaxSessions·reserve
}

// NewBudget returns a budget of max packets (MaxHeldTotal for a resident).
func NewBudget(max int) *Budget {
	r := int64(max) / (2 * MaxSessions)
	return &Budget{max: int64(max), reserve: r, pool: r * MaxSessions}
}

// Held returns the packets held now.
func (b *Budget) Held() int { return int(b.held.Load()) }

// take takes up to n packets from the budget for a session that holds
// has, and returns how many it got (a nil budget grants everything):
// within the session's reserve while the budget holds at most max,
// beyond it while it holds at most max − pool (see Budget).
func (b *Budget) take(has, n int) int {
	if b == nil || n <= 0 {
		return max(n, 0)
	}
	for {
		h := b.held.Load()
		own := min(int64(n), max(b.reserve-int64(has), 0))
		g := max(min(own, b.max-h), 0)
		if g == own {
			share := (b.max - b.pool) / max(b.sessions.Load(), 1)
			beyond := max(int64(has)-b.reserve, 0)
			g += max(min(int64(n)-own, share-beyond, b.max-b.pool-(h+g)), 0)
		}
		if g <= 0 {
			return 0
		}
		if b.held.CompareAndSwap(h, h+g) {
			return int(g)
		}
	}
}

// join and leave count the sessions open on the budget (their shares).
func (b *Budget) join() {
	if b != nil {
		b.sessions.Add(1)
	}
}

func (b *Budget) leave() {
	if b != nil {
		b.sessions.Add(-1)
	}
}

// force takes n packets however many are held (a new session's first
// packets, which are not dropped).
func (b *Budget) force(n int) {
	if b != nil {
		b.held.Add(int64(n))
	}
}

// give gives n packets back.
func (b *Budget) give(n int) {
	if b != nil && n > 0 {
		b.held.Add(-int64(n))
	}
}
