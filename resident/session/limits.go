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
	// together (a Budget): about 85 MB, whatever the number of sessions.
	// Sessions that never read can fill no more than half of it beyond
	// their reserves (Reserve): the other half is kept for the sessions'
	// reserves, so an honest remote is still served.
	MaxHeldTotal = 1 << 18
	// Reserve is what every session may hold whatever the others hold:
	// MaxHeldTotal / (2·MaxSessions) packets (2,048). A session takes
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
// A session's first reserve packets are its own; beyond them it takes
// from a shared part of max − pool packets (pool = MaxSessions·reserve
// = max/2), and at most its share of that, (max − pool) / the sessions
// open (as of its take): one that never reads cannot take what the
// others may need. The budget counts the packets held beyond reserves
// (beyond; a session gives back from beyond its reserve first) and
// grants a take beyond a reserve only while beyond stays ≤ max − pool;
// takes within a reserve it always grants. So, but for force, the
// packets held are at most (max − pool) beyond reserves plus
// MaxSessions·reserve = pool within them: max.
type Budget struct {
	held     atomic.Int64 // packets held, all told
	beyond   atomic.Int64 // of those, held beyond their sessions' reserves
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

// over returns how many of has packets are beyond a session's reserve.
func (b *Budget) over(has int) int64 { return max(int64(has)-b.reserve, 0) }

// take takes up to n packets from the budget for a session that holds
// has, and returns how many it got (a nil budget grants everything):
// what fits in the session's reserve, then what fits in its share and
// in the shared part (see Budget).
func (b *Budget) take(has, n int) int {
	if b == nil || n <= 0 {
		return max(n, 0)
	}
	own := min(int64(n), max(b.reserve-int64(has), 0))
	want := min(int64(n)-own, (b.max-b.pool)/max(b.sessions.Load(), 1)-b.over(has))
	var g int64
	for want > 0 {
		a := b.beyond.Load()
		g = min(want, b.max-b.pool-a)
		if g <= 0 {
			g = 0
			break
		}
		if b.beyond.CompareAndSwap(a, a+g) {
			break
		}
	}
	b.held.Add(own + g)
	return int(own + g)
}

// avail returns how many packets take(has, n) would grant now for a
// large n: what is left of the session's reserve, plus what is left of
// its share and of the shared part (a nil budget: n, unbounded).
func (b *Budget) avail(has, n int) int {
	if b == nil {
		return n
	}
	own := max(b.reserve-int64(has), 0)
	share := (b.max-b.pool)/max(b.sessions.Load(), 1) - b.over(has)
	shared := b.max - b.pool - b.beyond.Load()
	return int(min(int64(n), own+max(min(share, shared), 0)))
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

// force takes n packets for a session that holds has, however many are
// held (a new session's first packets, which are not dropped).
func (b *Budget) force(has, n int) {
	if b != nil {
		b.held.Add(int64(n))
		b.beyond.Add(b.over(has+n) - b.over(has))
	}
}

// full reports whether a session that holds has packets can take none
// now (take would grant nothing): its reserve is full, and so is its
// share or the shared part.
func (b *Budget) full(has int) bool {
	if b == nil || int64(has) < b.reserve {
		return false
	}
	share := (b.max-b.pool)/max(b.sessions.Load(), 1) - b.over(has)
	return share <= 0 || b.beyond.Load() >= b.max-b.pool
}

// give gives back n of the has packets a session holds.
func (b *Budget) give(has, n int) {
	if b != nil && n > 0 {
		b.held.Add(-int64(n))
		b.beyond.Add(b.over(has-n) - b.over(has))
	}
}
