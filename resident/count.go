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
// call that makes it so returns, like any trigger. The remote sends one
// only when its argument is a superset of what α needs from then on (α
// keeps exactly what its argument says): so the counter may enable early
// or keep an entity longer, never late. Hence the inclusive window, and
// the rule for what it cannot hold: an entity it has no room to count is
// enabled at once (a superset, exact), never refused or waited for.

// Bounds of a counting trigger: Count at most wire.MaxCount (a ring of that
// many timestamps per entity counted), at most maxCountKeys entities
// counted at once, at most maxCountTriggers per session (of its
// maxTriggers). A counting trigger runs in the subject's thread on every
// packet of its sensor: a lock of its own (not r.mu, which entity
// operations hold), a map look-up and a ring write, and r.mu only to
// enable. So what one session can make a sensor call cost is
// maxCountTriggers of those, and the resident hold for counting at most
// maxCountTriggers × maxCountKeys × wire.MaxCount timestamps (4 × 1,024 ×
// 64 × 8 B = 2 MB) — TestCountTriggerBound, TestHostileCountTriggers.
const (
	maxCountKeys     = 1024
	maxCountTriggers = 4
)

// counter is a counting trigger's state (mu): for each entity not yet
// enabled, the timestamps of its latest packets (at most n).
type counter struct {
	mu     sync.Mutex
	fired  map[string]struct{} // the entities enabled
	n      int
	window int64 // ns; 0: for ever
	keys   map[string]*countRing
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
}

func newCounter(n int, window int64) *counter {
	return &counter{n: n, window: window, keys: map[string]*countRing{}, fired: map[string]struct{}{}}
}

// countArgs checks a counting trigger's arguments.
func (s *Session) countArgs(cmd *wire.Command, on *Sensor) error {
	switch {
	case cmd.While:
		return s.fail(cmd, "while", "a counting trigger holds its enable from its count on, not while")
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

// add counts a packet of entity id at ts and reports whether the entity
// is now to be enabled: its count reached within the window, or no room
// to count it.
func (c *counter) add(id string, ts int64) bool {
	r := c.keys[id]
	if r == nil {
		if len(c.keys) >= maxCountKeys && !c.prune(ts) {
			c.overflowed++
			return true // no room: enabled now, a superset
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
	if len(r.ts) < c.n {
		return false
	}
	// Full: the oldest of the last n is at head. Inclusive, so that a
	// window the remote closes at either end is covered.
	if oldest := r.ts[r.head]; c.window == 0 || oldest >= ts-c.window {
		delete(c.keys, id)
		return true
	}
	return false
}

// prune drops the entities whose packets can no longer count (all older
// than the window) and reports whether that made room.
func (c *counter) prune(now int64) bool {
	if c.window == 0 || now < c.noPruneBefore {
		return false
	}
	next := int64(1<<63 - 1)
	for id, r := range c.keys {
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
// target for entity id once the count is reached (fireTrigger: under r.mu,
// if t is still live).
func (r *Resident) countTrigger(t *trigger, id string, ep uint32, ts int64) {
	c := t.count
	c.mu.Lock()
	if _, ok := c.fired[id]; ok {
		c.mu.Unlock()
		return
	}
	fire := c.add(id, ts)
	if fire {
		c.fired[id] = struct{}{}
	}
	c.mu.Unlock()
	if fire {
		r.fireTrigger(t, id, ep)
	}
}
