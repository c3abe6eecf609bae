package resident

import (
	"sync"
	"sync/atomic"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Sampled relations. Generated code reports a sampled relation's tuples
// as they begin and end (StateBegin, StateEnd) — always, armed or not: the
// resident keeps them in the sensor's state table, so that a sampling
// request started later sees the tuples already valid. Nothing is sent
// then. A sampling request (CSample) reports, at every multiple c of its
// period on the global clock, every tuple of its entity (or of every
// entity) valid at c — begin ≤ c < end — as PSample{TS: c, Tuple, Begin,
// Vals}: once per tick per tuple and session. A tuple a session was told
// about gets a PEnd when it ends.
//
// Ticks run in the drain goroutine, a little after c. A tuple that ended
// after c but before the tick ran is still reported, from the grace log:
// the tuples ended since the earliest pending tick of the sensor's
// samplers (exact, however late the tick runs). The session's watermark
// stays below a pending tick, so a late sample is never behind it.
//
// Exactness at the boundaries: StateBegin and StateEnd read the clock
// under the table's lock, and a tick c runs (under that lock) only once the
// clock is past c, so every tuple is on the right side of c.

// minSamplePeriod bounds the sampling rate: every tick scans the state
// table, and the drain runs a sampler's tick at most once a round
// (drainEvery), so a shorter period could only skip ticks.
const minSamplePeriod = int64(drainEvery)

// maxCatchUp bounds how far behind a sampler may fall, in ticks: a drain
// late by up to that many periods (a loaded machine starving the drain: at
// the demo's scale a tick is due every real millisecond, so about a second
// of starvation) still reports every tick, exactly; older ticks are
// skipped, and the samples of the tuples they alone would have shown
// counted as lost (hidden). It is counted in ticks, not real time,
// because the resident's clock is the subject's, which may run faster
// than real time. The bound is what keeps a sampler that can never catch
// up from falling behind without end, and it bounds the grace log (the
// tuples ended within the lag); sampleBudget bounds the work a round does
// to catch up.
const maxCatchUp = 1024

// sampleBudget bounds a round's sampling work (real time), a tenth of the
// drain's period, so that sampling takes at most about a tenth of a core
// from the subject: ticks still due then wait for the next round (the
// watermark waits with them), and the rings are drained every round
// however much sampling is asked for.
const sampleBudget = drainEvery / 10

// maxSamplers bounds one session's sampling requests: a round scans a
// sensor's state table once per distinct tick instant, and the drain
// holds the samplers' lock meanwhile.
const maxSamplers = 64

// stateTuple is a live tuple of a sampled relation.
type stateTuple struct {
	id       uint64 // 0: free entry
	begin    int64
	holder   *Entity
	reported uint64 // sessions that got a PSample of it (they get its PEnd)
	n        uint8
	vals     [MaxAttrs]Value
}

// graceTuple is a recently ended tuple.
type graceTuple struct {
	stateTuple
	end     int64
	endSent uint64 // sessions its PEnd went to
}

// stateTable is a sampled sensor's state: live tuples (a slab indexed by
// Interval.idx) and the grace log.
type stateTable struct {
	mu    sync.Mutex
	live  []stateTuple
	free  []uint32
	grace []graceTuple
	nsamp int // samplers on the sensor
}

// sampler is a CSample request.
type sampler struct {
	sess   *Session
	id     uint64
	sensor *Sensor
	all    bool
	entity string
	period int64 // ns
	next   int64 // next tick, global clock (smu)
	dead   atomic.Bool
}

// StateBegin records that a tuple of a sampled relation begins (vals in
// attribute order; the flag holder's tuples are what an entity's sampling
// request reports). No packet is sent. Call it whether or not the sensor
// is armed (sampled sensors always are).
func (s *Sensor) StateBegin(vals []Value) Interval {
	r := s.r
	st := s.st
	if st == nil {
		return Interval{Begin: r.now()}
	}
	id := r.tupleID()
	st.mu.Lock()
	ts := r.now()
	var idx uint32
	if n := len(st.free); n > 0 {
		idx = st.free[n-1]
		st.free = st.free[:n-1]
	} else {
		idx = uint32(len(st.live))
		st.live = append(st.live, stateTuple{})
	}
	t := &st.live[idx]
	t.id, t.begin, t.reported = id, ts, 0
	t.n = uint8(copy(t.vals[:s.nattr], vals))
	t.holder = nil
	if s.flag >= 0 && s.flag < int(t.n) {
		t.holder = t.vals[s.flag].E
	}
	st.mu.Unlock()
	if r.truth != nil {
		r.truth.Begin(s.id, id, r.truthVals(vals), ts)
	}
	return Interval{ID: id, Begin: ts, idx: idx}
}

// StateEnd records that the tuple iv ends; sessions that were sent a
// sample of it get a PEnd (with the values recorded at StateBegin).
func (s *Sensor) StateEnd(iv Interval, vals []Value) {
	r := s.r
	st := s.st
	if st == nil || iv.ID == 0 {
		return
	}
	st.mu.Lock()
	if int(iv.idx) >= len(st.live) || st.live[iv.idx].id != iv.ID {
		st.mu.Unlock()
		return
	}
	t := &st.live[iv.idx]
	var ts int64
	if t.reported != 0 {
		// reported is only changed under st.mu and a closing session
		// clears its bit (under st.mu) before the epoch moves on, so the
		// epoch read here names the sessions in it.
		var ok bool
		if ts, ok = s.put(wire.PEnd, t.reported, r.epoch.Load(), t.id, t.begin, 0, 0, t.vals[:t.n]); !ok {
			ts = r.now()
		}
	} else {
		ts = r.now()
	}
	if st.nsamp > 0 {
		st.grace = append(st.grace, graceTuple{stateTuple: *t, end: ts, endSent: t.reported})
	}
	*t = stateTuple{}
	st.free = append(st.free, iv.idx)
	st.mu.Unlock()
	if r.truth != nil {
		r.truth.End(s.id, iv.ID, ts)
	}
}

func (s *Session) addSampler(cmd *wire.Command) error {
	r := s.r
	sen, err := s.sensorArg(cmd, "sensor", cmd.Sensor)
	if err != nil {
		return err
	}
	if sen.st == nil {
		return s.fail(cmd, "sensor", "%s is not a sampled sensor", sen.describe())
	}
	if s.samplers[cmd.ID] != nil {
		return s.fail(cmd, "id", "sampling request %d already exists in this session", cmd.ID)
	}
	if len(s.samplers) >= maxSamplers {
		return s.fail(cmd, "id", "the session already has %d sampling requests, the most it may", maxSamplers)
	}
	if !cmd.All {
		if err := s.entityArg(cmd, sen); err != nil {
			return err
		}
	}
	period := cmd.Period
	if period < 0 {
		return s.fail(cmd, "period", "sampling period %d ns is negative", period)
	}
	if period == 0 {
		period = r.period
	}
	if period < minSamplePeriod {
		return s.fail(cmd, "period", "sampling period %d ns is below the minimum %d ns", period, minSamplePeriod)
	}
	sp := &sampler{sess: s, id: cmd.ID, sensor: sen, all: cmd.All, entity: cmd.Entity, period: period}
	r.smu.Lock()
	sen.st.mu.Lock()
	sen.st.nsamp++
	// The first tick is the first multiple of the period not before now:
	// tuples ended before it are not needed in the grace log, and it is
	// after every watermark the session was sent.
	sp.next = ceilMultiple(r.global(r.now()), period)
	sen.st.mu.Unlock()
	r.samplers = append(r.samplers, sp)
	r.smu.Unlock()
	s.samplers[sp.id] = sp
	return nil
}

// removeSampler removes a sampling request (r.mu): it marks it, and drops
// it at once if the samplers' lock is free, or else the drain's next round
// does (pruneSamplers): nothing holding r.mu waits for a sampling round.
func (r *Resident) removeSampler(sp *sampler) {
	delete(sp.sess.samplers, sp.id)
	sp.dead.Store(true)
	if r.smu.TryLock() {
		r.pruneSamplers()
		r.smu.Unlock()
	}
}

// forgetReported clears a closing session's bit from every sampled
// tuple (r.mu).
func (r *Resident) forgetReported(bit uint64) {
	for _, s := range r.sensors {
		st := s.st
		if st == nil {
			continue
		}
		st.mu.Lock()
		for i := range st.live {
			st.live[i].reported &^= bit
		}
		for i := range st.grace {
			st.grace[i].reported &^= bit
			st.grace[i].endSent &^= bit
		}
		st.mu.Unlock()
	}
}

// sampleDue runs every sampling tick that is due — whose instant the clock
// has passed — in time order. The drain calls it each round; tests call it
// to tick deterministically.
func (r *Resident) sampleDue() { r.sampleThrough(false) }

// sampleThrough runs the due sampling ticks: those before now, or, when
// closing (the subject has stopped and its state is settled), those at now
// too, in time order, exact however late (the grace log). A sampler
// never falls more than maxCatchUp ticks behind: the ticks before those
// are skipped, and the samples only they would have shown are counted
// as lost for its session (hidden). A call
// stops after sampleBudget of work (not when closing); the ticks still
// due run next round. So a round's sampling work is bounded, and
// sampling cannot keep the drain from the rings.
func (r *Resident) sampleThrough(closing bool) {
	r.smu.Lock()
	defer r.smu.Unlock()
	r.pruneSamplers()
	now := r.now()
	deadline := nanotime() + int64(sampleBudget)
	due := func(c int64) bool { m := r.mono(c); return m < now || m == now && closing }
	var group []*sampler
	for _, sp := range r.samplers {
		if !due(sp.next) {
			continue
		}
		// The latest due tick: next + k·period, k as large as due allows.
		k := int64(0)
		for lo, hi := int64(0), (r.global(now)-sp.next)/sp.period+1; lo <= hi; {
			mid := lo + (hi-lo)/2
			if due(sp.next + mid*sp.period) {
				k, lo = mid, mid+1
			} else {
				hi = mid - 1
			}
		}
		// The last maxCatchUp due ticks run; those before are skipped,
		// and what they alone would have shown is lost.
		if k -= maxCatchUp - 1; k > 0 {
			if lost := r.hidden(sp, k); lost > 0 {
				sp.sensor.wanted.Add(lost)
				sp.sess.core.Lost(uint16(sp.sensor.id), lost)
			}
			sp.next += k * sp.period
		}
	}
	for {
		if len(r.samplers) == 0 {
			break
		}
		c := r.samplers[0].next
		for _, sp := range r.samplers[1:] {
			c = min(c, sp.next)
		}
		if !due(c) {
			break
		}
		group = group[:0]
		for _, sp := range r.samplers {
			if sp.next == c {
				group = append(group, sp)
			}
		}
		for i, sp := range group {
			if sp == nil {
				continue
			}
			// All the group's samplers on this sensor run together: one
			// packet per tuple per session.
			var same []*sampler
			for j := i; j < len(group); j++ {
				if group[j] != nil && group[j].sensor == sp.sensor {
					same = append(same, group[j])
					group[j] = nil
				}
			}
			r.sampleAt(sp.sensor, c, same)
		}
		for _, sp := range r.samplers {
			if sp.next == c {
				sp.next += sp.period
			}
		}
		if !closing && nanotime() > deadline {
			break // the rest waits for the next round
		}
	}
	r.pruneGrace()
}

// hidden returns how many samples sampler sp's next k ticks, which are
// skipped, would have reported that no tick it runs will (smu): the
// samples of the tuples the skip hides — valid at one of the skipped
// ticks, never reported to the session, and ended before the first tick
// that runs — one per skipped tick each was valid at. A tuple still
// valid at the first tick that runs (live, or ended since: the grace
// log) is reported then, with its begin: the skipped ticks would only
// have re-confirmed it, so they lose nothing of it; one reported before
// the skip got its PEnd when it ended. So the session's drops count
// exactly the samples it missed of tuples it never learns of. (Two
// samplers of one session with the same ticks on one sensor share their
// samples, but each counts what its skip hid.)
func (r *Resident) hidden(sp *sampler, k int64) uint64 {
	st := sp.sensor.st
	m0 := r.mono(sp.next)
	first := r.mono(sp.next + k*sp.period) // the first tick that runs
	// ticks counts the skipped ticks m0 + j·period, 0 ≤ j < k, in
	// [begin, end).
	ticks := func(begin, end int64) int64 {
		lo, hi := ceilDiv(begin-m0, sp.period), ceilDiv(end-m0, sp.period)
		return max(0, min(hi, k)-max(lo, 0))
	}
	var n int64
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := range st.grace {
		g := &st.grace[i]
		if g.end > first || g.reported&sp.sess.bit != 0 {
			continue
		}
		if sp.all || (g.holder != nil && g.holder.id == sp.entity) {
			n += ticks(g.begin, g.end)
		}
	}
	return uint64(n)
}

// ceilDiv returns ⌈a/b⌉ for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// pruneSamplers removes the samplers that were removed (smu): removing
// one (removeSampler) only marks it, so that a session's end never waits
// for a sampling round.
func (r *Resident) pruneSamplers() {
	keep := r.samplers[:0]
	for _, sp := range r.samplers {
		if !sp.dead.Load() {
			keep = append(keep, sp)
			continue
		}
		st := sp.sensor.st
		st.mu.Lock()
		st.nsamp--
		if st.nsamp == 0 {
			clear(st.grace)
			st.grace = st.grace[:0]
		}
		st.mu.Unlock()
	}
	clear(r.samplers[len(keep):])
	r.samplers = keep
}

// sampleAt runs the tick at global time c of samplers on sensor s (smu).
func (r *Resident) sampleAt(s *Sensor, c int64, samplers []*sampler) {
	st := s.st
	cm := r.mono(c)
	var sess [MaxSessions]*Session
	ft := s.frags.Load()
	deliver := func(m uint64, p wire.Packet, ents []*Entity) {
		s.wanted.Add(1)
		for i := range session.Indices(m) {
			q := p
			q.Vals = ft.project(i, p.Vals, func(n int) []wire.Value { return make([]wire.Value, n) })
			sess[i].enqueue(q, ents)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// A sampler removed since the round began is left out, under st.mu:
	// its session's end clears its bit from the tuples (forgetReported)
	// under st.mu after marking it, so the bit is not set again here.
	live := samplers[:0:0]
	for _, sp := range samplers {
		if !sp.dead.Load() {
			live = append(live, sp)
			sess[sp.sess.idx] = sp.sess
		}
	}
	// A tuple the session's fragments reject is not sampled for it (not
	// wanted, not reported, so no PEnd follows).
	match := func(t *stateTuple) uint64 {
		var m uint64
		for _, sp := range live {
			if sp.all || (t.holder != nil && t.holder.id == sp.entity) {
				m |= sp.sess.bit
			}
		}
		if m != 0 && ft != nil {
			m &= ft.pass(&s.kinds, t.vals[:t.n])
		}
		return m
	}
	if len(live) == 0 {
		return
	}
	for i := range st.live {
		t := &st.live[i]
		if t.id == 0 || t.begin > cm {
			continue
		}
		m := match(t)
		if m == 0 {
			continue
		}
		p, ents := samplePacket(s, wire.PSample, cm, t)
		deliver(m, p, ents)
		t.reported |= m
	}
	for i := range st.grace {
		g := &st.grace[i]
		if g.begin > cm || cm >= g.end {
			continue
		}
		m := match(&g.stateTuple)
		if m == 0 {
			continue
		}
		p, ents := samplePacket(s, wire.PSample, cm, &g.stateTuple)
		deliver(m, p, ents)
		if late := m &^ g.endSent; late != 0 {
			// Ended before the tick ran: its PEnd goes now.
			p, ents := samplePacket(s, wire.PEnd, g.end, &g.stateTuple)
			deliver(late, p, ents)
			g.endSent |= late
		}
	}
}

// pruneGrace drops grace entries no pending tick can see (smu).
func (r *Resident) pruneGrace() {
	for _, s := range r.sensors {
		st := s.st
		if st == nil {
			continue
		}
		next, any := int64(0), false
		for _, sp := range r.samplers {
			if sp.sensor == s && (!any || sp.next < next) {
				next, any = sp.next, true
			}
		}
		st.mu.Lock()
		if !any {
			st.grace = st.grace[:0]
		} else {
			nm := r.mono(next)
			keep := st.grace[:0]
			for _, g := range st.grace {
				if g.end > nm {
					keep = append(keep, g)
				}
			}
			clear(st.grace[len(keep):])
			st.grace = keep
		}
		st.mu.Unlock()
	}
}

// sampleHold returns, per session index, the earliest pending tick of its
// samplers (monotonic), for the watermark; ok[i] false when none.
func (r *Resident) sampleHold(hold *[MaxSessions]int64, ok *[MaxSessions]bool) {
	r.smu.Lock()
	defer r.smu.Unlock()
	for _, sp := range r.samplers {
		if sp.dead.Load() {
			continue
		}
		i := sp.sess.idx
		c := r.mono(sp.next)
		if !ok[i] || c < hold[i] {
			hold[i], ok[i] = c, true
		}
	}
}
