package resident

import (
	"sync"

	"github.com/tqmon/tqmon/resident/wire"
)

// Counting triggers: the first phase of two-phase monitoring, evaluated
// where the packets are. A CTrigger with Count enables its target for an
// entity once at least Count of its sensor's packets carrying the entity
// (and satisfying its conditions) fell within the last Period ns — the
// remote's count(s.X by s.X for each Period) ≥ Count — before the sensor
// call that makes it so returns, like any trigger. Without While it holds
// the enable for the session; with While (wire.CapCountWhile) only while
// the count is at least Count: the resident's drain takes it back in its
// first round that starts after the count fell (expireCounts), and the
// intervals of the target in progress on the entity then are still owed
// their end (takeBack and owe.go, the one mechanism of every while
// trigger).
//
// The remote sends one only when what it enables is a superset of what
// the plan can use (α keeps exactly what its argument says; with While,
// the block keeps the join that drops the rest: remote/twophase.go): so
// the counter may enable early or keep an entity longer, never late, nor
// give it up early. Hence the inclusive window, the disable only once the
// oldest of the last Count packets is out of it, and the rule for what it
// cannot hold: an entity it has no room to count is enabled at once, for
// the session (a superset, exact), never refused or waited for.
//
// The while lag, stated: an entity whose count falls at U (the oldest of
// its last Count packets, o, leaves the inclusive window: U = o + Period +
// 1) is disabled by the first drain round that reads its clock at or
// after U — one drain period (drainEvery, 1 ms) after U at most, plus
// however late the round's goroutine is scheduled; never before U
// (TestCountWhileDisables, TestCountWhileDrainLag).

// Bounds of a counting trigger: Count at most wire.MaxCount (a ring of that
// many timestamps per entity counted), at most maxCountKeys entities
// counted at once (those enabled included), at most maxCountTriggers per
// session (of its maxTriggers). A counting trigger runs in the subject's
// thread on every packet of its sensor: a lock of its own (not r.mu, which
// entity operations hold), a map look-up and a ring write, and r.mu only
// to enable (once per busy spell, with While). So what one session can make a sensor call cost is
// maxCountTriggers of those, and the resident hold for counting at most
// maxCountTriggers × maxCountKeys × wire.MaxCount timestamps (4 × 1,024 ×
// 64 × 8 B = 2 MB) — TestCountTriggerBound, TestHostileCountTriggers;
// besides, one entry of held per entity enabled for the session (as the
// session's own enables: t.done). The drain's share (while): per round,
// nothing unless some enabled entity's count can have fallen
// (nextExpiry), then a scan of the trigger's enabled entities (≤
// maxCountKeys) and, for each it disables, r.mu's take-back: a record on
// the entity (owe.go) and the flag cleared (TestHostileCountWhileTriggers).
const (
	maxCountKeys     = 1024
	maxCountTriggers = 4
)

// counter is a counting trigger's state (mu): for each entity counted,
// the timestamps of its latest packets (at most n).
type counter struct {
	mu     sync.Mutex
	n      int
	window int64 // ns; 0: for ever
	while  bool  // hold the enable only while the count is at least n
	keys   map[string]*countRing
	// held are the entities enabled for the session: those that reached
	// n (not while) and those there was no room to count (either mode).
	held map[string]struct{}
	// on (while) are the entities of keys enabled now, their count at
	// least n; none of them can fall below n before nextExpiry.
	on         map[string]*countRing
	nextExpiry int64
	// noPruneBefore: keys is full and nothing in it can go stale before
	// this time, so a newcomer does not rescan it (the scan is bounded,
	// maxCountKeys, but need not be paid per packet).
	noPruneBefore int64
	// overflowed counts the entities enabled because keys was full.
	overflowed uint64
}

// countRing holds an entity's last timestamps, oldest at head once full.
type countRing struct {
	ts   []int64
	head int
	on   bool // in counter.on
}

func newCounter(n int, window int64, while bool) *counter {
	return &counter{n: n, window: window, while: while && window > 0, keys: map[string]*countRing{},
		held: map[string]struct{}{}, on: map[string]*countRing{}, nextExpiry: 1<<63 - 1}
}

// countArgs checks a counting trigger's arguments.
func (s *Session) countArgs(cmd *wire.Command, on *Sensor) error {
	switch {
	case !on.traced() || on.class != ClassEvent:
		return s.fail(cmd, "on", "a counting trigger counts a traced event relation's packets, not %s", on.describe())
	case cmd.Count > wire.MaxCount:
		return s.fail(cmd, "count", "count %d exceeds %d, the most a resident counts", cmd.Count, wire.MaxCount)
	case cmd.Period < 0:
		return s.fail(cmd, "period", "negative window %d", cmd.Period)
	}
	n := 0
	for _, t := range s.triggers {
		if t.count != nil {
			n++
		}
	}
	if n >= maxCountTriggers {
		return s.fail(cmd, "count", "the session already has %d counting triggers, the most it may", maxCountTriggers)
	}
	return nil
}

// stale reports whether nothing of ring can fall within a window ending
// at or after now.
func (c *counter) stale(r *countRing, now int64) bool {
	newest := r.ts[(r.head+len(r.ts)-1)%len(r.ts)]
	return c.window > 0 && newest < now-c.window
}

// expiry is the instant an enabled entity's count falls below n if no
// packet of it comes first: when the oldest of its last n leaves the
// inclusive window.
func (c *counter) expiry(r *countRing) int64 { return r.ts[r.head] + c.window + 1 }

// add counts a packet of entity id at ts and reports whether the entity
// is now to be enabled: its count reached within the window, or no room
// to count it.
func (c *counter) add(id string, ts int64) bool {
	if _, ok := c.held[id]; ok {
		return false
	}
	r := c.keys[id]
	if r == nil {
		if len(c.keys) >= maxCountKeys && !c.prune(ts) {
			c.overflowed++
			c.held[id] = struct{}{}
			return true // no room: enabled now, for the session, a superset
		}
		r = &countRing{ts: make([]int64, 0, c.n)}
		c.keys[id] = r
	}
	if len(r.ts) < c.n {
		r.ts = append(r.ts, ts)
	} else {
		r.ts[r.head] = ts
		r.head = (r.head + 1) % c.n
	}
	if r.on || len(r.ts) < c.n {
		return false // (enabled: its expiry only moves later, nextExpiry stays a lower bound)
	}
	// Full: the oldest of the last n is at head. Inclusive, so that a
	// window the remote closes at either end is covered.
	if oldest := r.ts[r.head]; c.window != 0 && oldest < ts-c.window {
		return false
	}
	if !c.while {
		delete(c.keys, id)
		c.held[id] = struct{}{}
		return true
	}
	r.on = true
	c.on[id] = r
	c.nextExpiry = min(c.nextExpiry, c.expiry(r))
	return true
}

// expire (while) takes the entities whose count fell below n by now out
// of on and returns them: to be disabled.
func (c *counter) expire(now int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now < c.nextExpiry {
		return nil
	}
	var out []string
	next := int64(1<<63 - 1)
	for id, r := range c.on {
		if x := c.expiry(r); x > now {
			next = min(next, x)
			continue
		}
		r.on = false
		delete(c.on, id)
		out = append(out, id)
	}
	c.nextExpiry = next
	if len(out) > 0 {
		c.noPruneBefore = 0 // they may go stale now
	}
	return out
}

// wants reports whether entity id is to be enabled now.
func (c *counter) wants(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[id]; ok {
		return true
	}
	return c.on[id] != nil
}

// prune drops the entities whose packets can no longer count (all older
// than the window; not those enabled, which the drain disables first) and
// reports whether that made room.
func (c *counter) prune(now int64) bool {
	if c.window == 0 || now < c.noPruneBefore {
		return false
	}
	next := int64(1<<63 - 1)
	for id, r := range c.keys {
		if r.on {
			continue // expire resets noPruneBefore when it disables one
		}
		if c.stale(r, now) {
			delete(c.keys, id)
			continue
		}
		newest := r.ts[(r.head+len(r.ts)-1)%len(r.ts)]
		next = min(next, newest+c.window+1)
	}
	if len(c.keys) < maxCountKeys {
		return true
	}
	c.noPruneBefore = next
	return false
}

// countTrigger counts a packet for a counting trigger t and enables its
// target for entity id once the count is reached (under r.mu, if t is
// still live and the packet not older than its session).
func (r *Resident) countTrigger(t *trigger, id string, ep uint32, ts int64) {
	c := t.count
	c.mu.Lock()
	fire := c.add(id, ts)
	c.mu.Unlock()
	if fire {
		r.mu.Lock()
		if t.live(ep) {
			r.applyCount(t, []string{id})
		}
		r.mu.Unlock()
	}
}

// applyCount makes t's enables of ids what its counter wants now (r.mu).
// The subject (add) and the drain (expire) change the counter under its
// lock and then apply here, under r.mu, in either order: each apply reads
// the counter's latest state, so the last one to run leaves every flag as
// the counter's last change says — never disabled while the count holds,
// nor enabled for good after it fell.
func (r *Resident) applyCount(t *trigger, ids []string) {
	var off []string
	for _, id := range ids {
		_, done := t.done[id]
		switch want := t.count.wants(id); {
		case want && !done:
			r.fireLocked(t, id)
		case !want && done:
			off = append(off, id)
		}
	}
	r.takeBack(t, off)
}

// expireCounts is the drain's part of while counting triggers, at the
// start of each round: it disables the entities whose count fell by now.
func (r *Resident) expireCounts() {
	p := r.whileCounts.Load()
	if p == nil {
		return
	}
	now := r.now()
	for _, t := range *p {
		ids := t.count.expire(now)
		if len(ids) == 0 {
			continue
		}
		r.mu.Lock()
		if !t.dead && !t.sess.core.Closed() {
			r.applyCount(t, ids)
		}
		r.mu.Unlock()
	}
}

// listWhileCount adds (or, when remove, removes) a while counting trigger
// to the list the drain reads (copy on write, r.mu).
func (r *Resident) listWhileCount(t *trigger, remove bool) {
	var list []*trigger
	if p := r.whileCounts.Load(); p != nil {
		for _, x := range *p {
			if x != t {
				list = append(list, x)
			}
		}
	}
	if !remove {
		list = append(list, t)
	}
	if len(list) == 0 {
		r.whileCounts.Store(nil)
		return
	}
	r.whileCounts.Store(&list)
}
