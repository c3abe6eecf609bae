package session

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tqmon/tqmon/resident/wire"
)

// The mailbox: what the drain gave a session and the session's remote has
// not taken yet.
//
// A drain round ends with Deliver: the round's packets for the session
// (and the entity definitions they need), the round's watermark W and
// the cumulative per-sensor counts. Deliver merges the packets with those
// the session holds back, sorts them by timestamp, and moves those
// stamped ≤ W into a batch (merged into the last one not taken yet, or
// made; Handoff makes one per round, see Memory), with watermark W; the
// rest are held for a later round. Recv takes the batches made in the
// order they were made.
// Enqueue adds one packet between rounds (a sample, the resident's last
// word on an interval still open); it is held like the others until a
// watermark passes it.
//
// Why each batch is in order: the resident promises that every packet it
// delivers or enqueues after a round with watermark W is stamped > W
// (the drain's argument, in each resident's drain). Deliver sends only
// packets ≤ W, in timestamp order, and watermarks never go back (W is
// raised to the last one sent): so a session's packets arrive in
// non-decreasing timestamp order, each batch's after the previous batch's
// watermark. A final round (the resident closing) sends everything, the
// watermark raised to cover the last packet.
//
// Why a session's memory is bounded whatever its remote does: the packets
// it holds — held back (q) and in the batches not taken yet (box) — are
// counted (n), at most MaxHeld, and taken from the resident's Budget
// (MaxHeldTotal for all its sessions). A packet that does not fit, in
// Deliver or Enqueue, is dropped and counted for its sensor (over), and
// the counts every batch carries add those drops, so per sensor delivered
// + dropped = wanted still holds for the session, and a remote that keeps
// its lease but reads slowly, or never, learns what it lost when it
// reads. Nothing waits: Deliver and Enqueue hold qmu for a copy of the
// round's packets (Handoff: for a swap of two slices), never for the
// remote. The one exception to the bound
// is a session's first packets (Prime: the live entities, which are not
// dropped), counted all the same, so the packets after them wait for
// room. Released batches kept for reuse are at most MaxFree, of at most
// 2·MaxHeld packets' capacity together (a batch holds at most MaxHeld
// packets, in a slice grown by appending: at most twice that capacity).
// So the largest batch — a remote that fell behind takes what many rounds
// merged — is reused too: before, a batch over MaxHeld/MaxFree was
// dropped and the next grown again (318 bytes allocated per packet).
//
// Memory: the packets' values may live in the drain's round arena,
// reused next round, so Deliver copies them into the batch's own arena
// (Batch.Arena), or, for packets held back, into the held arena. A
// receiver that gives batches back (Release: the transport does once it
// has encoded one, the in-process remote once it has taken one) has them
// reused, so a steady stream allocates nothing per packet.
//
// Handoff (the kernel drain's Deliver) copies nothing when the round's
// packets all go out now and none waits in q: a new batch takes the
// drain's slice of packets, and the drain's arena too (each when its
// capacity is at most twice what the batch's packets hold or name, as a
// slice grown by appending may be, or small, and while fewer than
// MaxHanded such batches wait: so the batches not taken pin little more
// than copies would; at most one session a round takes the arena: the
// drain stops offering it once taken), and the drain gets in exchange
// the emptied
// slice and arena of a released batch (newBatch), which it fills next
// round. Nothing is overwritten that a packet still names: a released
// batch's storage is its receiver's no more (Release), the drain's arena
// taken by a batch is written again only after that batch is released
// and handed back, and the other sessions' packets that name its values
// are copied out of it in the same round (Deliver). That a handed round
// is a batch of its own, not merged into the last one not taken, costs a
// receiver more batches (one a round at most: a round a millisecond)
// instead of a copy of every packet and value; MaxFree is what a receiver
// a few rounds behind releases at once, so that the drain is served from
// released storage (TestDrainAllocations). Bound: see MaxHanded.
//
// The held arena (held), and what points where:
//
//   - every packet held (q[qh:]) has its values in held[:len(held)] — one array,
//     the mailbox's own: never the drain's round arena, a caller's
//     (Prime, Enqueue copy them in), nor a batch's arena. live counts
//     those values; the rest of held[:len(held)] is dead (values of
//     packets since sent, which the batch copied into its own arena);
//   - a packet enters held once, when it is first held (Deliver, for the
//     round's packets stamped after the watermark; Enqueue; Prime), and
//     stays where it is while held: a round costs the copies of its new
//     held packets, not of all held (before, every round copied all of
//     q into the spare arena: O(q) a round, quadratic in a backlog);
//   - held is compacted — q's values copied into spare, which becomes
//     held — only when its dead values are more than half of it, or a
//     new packet's values do not fit its capacity (then into an arena of
//     twice what is live and new). Each compaction copies at most what
//     entered since the last one (dead ≥ live; or, growing, capacity
//     2·(live+new) leaves room for live+new more), so over any rounds
//     the values copied into held are at most 3× those that entered
//     (TestHeldCopiesAmortised);
//   - an arena is overwritten only as spare, at a compaction: spare is
//     the array held was before the last compaction, which moved every
//     packet of q out of it, and no batch points into held (Deliver
//     copies what it sends into Batch.Arena, which Release gives back
//     with its batch) — so no value a packet refers to is overwritten.
//
// The queue itself (q) is as cheap: the packets sent from it are a dead
// prefix (q[:qh], cleared), the queue compacted when that prefix is
// longer than the rest (so each packet moved is paid for by one sent),
// and a round's packets are sorted among themselves and merged with the
// held ones after the first of them (order), not sorted with all held.
//
// Bounds: after each Deliver, len(held) ≤ 2·live (the dead at most half),
// and cap(held) ≤ 2·(live+new) at the largest round, so the two arenas
// hold at most 4× the values of MaxHeld packets, as before (then: each
// arena up to twice q's values); q's dead prefix is at most its live
// part, and order's scratch (merge) at most the held packets: MaxHeld.

// emptyEvery is how often a session gets a batch without packets (to
// advance its watermark).
const emptyEvery = 5 * time.Millisecond

// MaxHanded is how many batches Handoff makes that may wait for the
// receiver at once; past it, a round's packets are copied into the last
// batch not taken, as Deliver does. HandFloor is the storage, in packets
// and four times that in values, a handed batch may hold beyond twice
// what its packets need. So the batches a session's receiver has not
// taken pin at most MaxHanded·(HandFloor packets and 4·HandFloor values)
// more than copies would (≈ 0.4 MB: 24 MB over MaxSessions sessions), and
// the packets and values those copies would take, at most twice.
const (
	MaxHanded = 4
	HandFloor = 512
)

// MaxFree is how many released batches a session keeps for reuse: a
// receiver that releases each batch before it takes the next is served
// from at most MaxFree+1 batches. It is 16 (it was 4): a receiver a few
// rounds behind takes and releases several batches at once (one a round,
// Handoff), and each one not kept is storage the drain grows again.
const MaxFree = 16

type mailbox struct {
	qmu      sync.Mutex
	q        []wire.Packet    // q[qh:]: packets held back (timestamp > last watermark)
	qh, qs   int              // q[:qh] sent (cleared); q[qh:qs] in order, q[qs:] added since (Prime, Enqueue)
	merge    []wire.Packet    // scratch of order
	defs     []wire.EntityDef // definitions not yet sent
	box      []*wire.Batch    // box[boxH:]: the batches made and not taken, in order (Recv takes box[boxH])
	boxH     int
	held     []wire.Value  // values of the packets in q, and dead ones (see Memory)
	live     int           // values in held of the packets in q
	spare    []wire.Value  // the other held arena, for the next compaction
	copied   uint64        // values copied into held, all told (TestHeldCopiesAmortised)
	moved    uint64        // held packets moved within q, all told (order, compacting: the same)
	free     []*wire.Batch // released batches, for reuse (Release)
	lastW    int64         // the last watermark sent
	lastEmit int64         // when the last batch was made (real ns)
	over     []uint64      // per sensor: packets lost to a full session
	own      []uint64      // per sensor: packets wanted by this session alone (Prime; Shed's unsent)
	base     []wire.Count  // the resident's counts when the session opened (Base)
	n        int           // packets held: len(q) + the packets of box[boxH:]
	budget   *Budget       // the resident's, shared by its sessions
	// nApplied commands were carried out, the last at appliedAt (the
	// packets' clock): Batch.Applied, AppliedAt.
	nApplied  uint64
	appliedAt int64
	ended     bool
	err       error
	ready     chan struct{} // a batch is waiting
	done      chan struct{} // closed when the session ends
}

// Base records the resident's cumulative counts as the session opens,
// before the drain can see it: the session's batches count from there
// (what was produced while it was open), not the resident's past — an
// earlier session's packets are not this one's "produced while enabled".
func (m *mailbox) Base(counts []wire.Count) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	m.base = append(m.base[:0], counts...)
}

// Unwanted counts n of the resident's wanted packets of sensor (the
// counts Deliver receives) as not the session's: counted before the
// drain first served it, or made before it opened and read after (the
// Go resident's drain: resident/drain.go, "Counts of a new session").
// They are its base, the resident's past.
func (m *mailbox) Unwanted(sensor uint16, n uint64) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	j := slices.IndexFunc(m.base, func(b wire.Count) bool { return b.Sensor == sensor })
	if j < 0 {
		j = len(m.base)
		m.base = append(m.base, wire.Count{Sensor: sensor})
	}
	m.base[j].Wanted += n
}

// Prime gives a new session its first packets and definitions (the live
// entities), before the drain can see the session: they go out with the
// next round whose watermark passes them.
//
// They are wanted by this session alone: counted in its counts (own), not
// the resident's — which every session's counts start from, so a
// session's snapshot counted there would be wanted and never delivered
// for the sessions already open (TestSnapshotCountsOwn).
func (m *mailbox) Prime(pkts []wire.Packet, defs []wire.EntityDef) {
	m.budget.force(m.n, len(pkts))
	m.n += len(pkts)
	for _, p := range pkts {
		if int(p.Sensor) < len(m.own) {
			m.own[p.Sensor]++
		}
	}
	m.hold(pkts)
	m.defs = append(m.defs, defs...)
}

// End marks the session ended with err (the first call wins); keep keeps
// the batch not taken yet for Recv (the resident's last batch as it
// closes), which then returns err.
func (m *mailbox) End(err error, keep bool) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if m.ended {
		return
	}
	m.ended, m.err = true, err
	kept := 0
	if keep {
		for _, b := range m.box[m.boxH:] {
			kept += len(b.Packets)
		}
	} else {
		m.box, m.boxH = nil, 0
	}
	m.budget.give(m.n, m.n-kept)
	m.budget.leave()
	m.n = kept
	m.q, m.qh, m.qs, m.merge = nil, 0, 0, nil
	m.held, m.spare, m.live = nil, nil, 0
	close(m.done)
}

// Err returns the error the session ended with, or nil.
func (m *mailbox) Err() error {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	return m.err
}

// Recv returns the session's next batch: packets in timestamp order (and
// after the previous batch's watermark), the definitions of the entity
// keys the session has not seen, the new watermark and the cumulative
// per-sensor counts. It blocks until a round made a batch (one with
// packets, or without, every emptyEvery, to advance the watermark). It
// returns the session's error once the session ended (after the kept
// batch, if any), or ctx's.
//
// Packet values may be shared with other packets, of this batch (the
// kernel drain decodes a repeated event once) or of other sessions'
// batches: do not modify
// them.
func (m *mailbox) Recv(ctx context.Context) (*wire.Batch, error) {
	for {
		m.qmu.Lock()
		if m.boxH < len(m.box) {
			b := m.box[m.boxH]
			m.box[m.boxH] = nil
			switch m.boxH++; {
			case m.boxH == len(m.box):
				m.box, m.boxH = m.box[:0], 0
			case m.boxH > len(m.box)-m.boxH: // compacting costs no more than taking did
				k := copy(m.box, m.box[m.boxH:])
				clear(m.box[k:])
				m.box, m.boxH = m.box[:k], 0
			}
			m.budget.give(m.n, len(b.Packets))
			m.n -= len(b.Packets)
			m.qmu.Unlock()
			return b, nil
		}
		if m.ended {
			err := m.err
			m.qmu.Unlock()
			return nil, err
		}
		m.qmu.Unlock()
		select {
		case <-m.ready:
		case <-m.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Release gives back a batch Recv returned, once the caller is done with
// it and its packets (encoded them, say): the session reuses its memory
// for later batches, so a steady stream allocates nothing per packet.
// Optional; after it, b and every packet and value in it must not be
// used. Releasing a batch twice, or one Recv did not return, is an error
// that Release ignores where it can detect it.
func (m *mailbox) Release(b *wire.Batch) {
	if b == nil {
		return
	}
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if len(m.free) >= MaxFree || slices.Contains(m.box[m.boxH:], b) || slices.Contains(m.free, b) {
		return
	}
	kept := cap(b.Packets)
	for _, f := range m.free {
		kept += cap(f.Packets)
	}
	if kept > 2*MaxHeld {
		return
	}
	m.free = append(m.free, b)
}

// Enqueue adds packet p (stamped after the last round's watermark) to the
// session's held packets; if it is taken (the session is open and has
// room), defs is called to add the definitions of the entities p names
// that the session was not sent.
func (m *mailbox) Enqueue(p wire.Packet, defs func(add func(wire.EntityDef))) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if m.ended {
		return
	}
	if m.room(1) == 0 {
		m.over[p.Sensor]++
		return
	}
	if defs != nil {
		defs(m.addDef)
	}
	m.hold([]wire.Packet{p})
}

// room takes room for up to k more packets (qmu held): at most MaxHeld
// for the session, what the budget has left; it returns how many.
func (m *mailbox) room(k int) int {
	g := m.budget.take(m.n, min(k, MaxHeld-m.n))
	m.n += g
	return g
}

// Room returns how many more packets the session could take now (at
// most MaxHeld in all, within what the budget grants it): a drain that
// hands it no more than this in a round loses none of them to the
// session's bounds. An ended session has none.
func (m *mailbox) Room() int {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if m.ended {
		return 0
	}
	return m.budget.avail(m.n, MaxHeld-m.n)
}

// Lost counts n packets of sensor the session did not get although it
// asked for them (a sampling tick skipped): they are drops in its counts.
func (m *mailbox) Lost(sensor uint16, n uint64) { m.Shed(sensor, n, 0) }

// Shed counts packets of sensor the resident shed for the session while
// it was full (Full): dropped ones were counted as wanted by the
// resident (its counts, which Deliver receives, include them) and are
// drops for this session; unsent ones were never counted by the
// resident — no packet was written — so they are both wanted and dropped
// in this session's counts.
func (m *mailbox) Shed(sensor uint16, dropped, unsent uint64) {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if int(sensor) < len(m.over) {
		m.over[sensor] += dropped + unsent
		m.own[sensor] += unsent
	}
}

// Full reports whether the session can take no packet now: it holds
// MaxHeld, or the Budget grants it nothing (its reserve, its share or
// the shared part is full). Until its
// remote takes a batch, whatever is delivered to it is dropped, so the
// resident may shed its packets (drop and count them without making
// them).
func (m *mailbox) Full() bool {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	return m.n >= MaxHeld || m.budget.full(m.n)
}

func (m *mailbox) addDef(d wire.EntityDef) { m.defs = append(m.defs, d) }

func byTS(a, b wire.Packet) int {
	switch {
	case a.TS < b.TS:
		return -1
	case a.TS > b.TS:
		return 1
	}
	return 0
}

// Deliver ends a drain round for the session: it adds the round's packets
// (and the definitions they need) to the session and moves those stamped
// ≤ w into its batch (see above); counts are the resident's cumulative
// per-sensor counts, now the real time of the round. final (the resident
// closing) sends everything.
func (m *mailbox) Deliver(in []wire.Packet, defs []wire.EntityDef, w int64, counts []wire.Count, now int64, final bool) {
	m.deliver(&in, nil, false, defs, w, counts, now, final)
}

// Handoff is Deliver for a drain that hands over its storage (see
// "Handoff" above): when every packet in *in goes out now (none is held
// back, none waits in q), a batch of its own, made now, takes *in as its
// packets and, if arena is not nil, *arena as
// its arena — every value of *in's packets must then lie in *arena or in
// memory nothing writes any more — and *in and *arena become the batch's
// old storage (emptied, capacity kept), which the drain fills next round;
// else the values are copied as Deliver copies them and *in, *arena stay
// the drain's. It reports whether the batch took *arena: its values are
// then written by no one until that batch is released.
func (m *mailbox) Handoff(in *[]wire.Packet, arena *[]wire.Value, defs []wire.EntityDef, w int64, counts []wire.Count, now int64, final bool) bool {
	return m.deliver(in, arena, true, defs, w, counts, now, final)
}

func (m *mailbox) deliver(inp *[]wire.Packet, arena *[]wire.Value, handoff bool, defs []wire.EntityDef, w int64, counts []wire.Count, now int64, final bool) (tookArena bool) {
	in := *inp
	m.qmu.Lock()
	defer m.qmu.Unlock()
	if m.ended {
		return
	}
	if room := m.room(len(in)); room < len(in) {
		for _, p := range in[room:] {
			m.over[p.Sensor]++
		}
		in = in[:room]
	}
	m.defs = append(m.defs, defs...)
	w = max(w, m.lastW)
	// The round's packets that will be held (stamped after w; none in a
	// final round, which sends everything) move into held now, once:
	// those that go out this round are copied into the batch only.
	// sentIn counts the values of those (not in held).
	sentIn, need, sorted := 0, 0, true
	for i := range in {
		if k := len(in[i].Vals); !final && in[i].TS > w {
			need += k
		} else {
			sentIn += k
		}
		if i > 0 && in[i].TS < in[i-1].TS {
			sorted = false
		}
	}
	if need > 0 {
		m.reserve(need)
		for i := range in {
			if in[i].TS > w {
				m.held = moveVals(m.held, in[i:i+1]) // (within capacity: reserve)
			}
		}
		m.live += need
	}
	// The packets in order: the round's own when none is held back (the
	// drain's, in time order: moved into the batch without a stop in q),
	// else merged with those held.
	src := in
	queued := len(m.q) > 0 || !sorted
	if queued {
		m.q = append(m.q, in...)
		m.order()
		src = m.q[m.qh:]
	}
	n := len(src)
	if final {
		if n > 0 {
			w = max(w, src[n-1].TS)
		}
	} else {
		n = sort.Search(len(src), func(i int) bool { return src[i].TS > w })
	}
	m.lastW = w
	if n > 0 || len(m.defs) > 0 || m.boxH < len(m.box) || final || now-m.lastEmit >= int64(emptyEvery) {
		// A round's packets go into the last batch not taken, if there is
		// one, but those a drain hands over (Handoff) make a batch of
		// their own: copied into the last, they would cost what the
		// handing over saves.
		var b *wire.Batch
		take := handoff && !queued && n == len(in) && n > 0 && len(m.box)-m.boxH < MaxHanded
		if !take && m.boxH < len(m.box) {
			b = m.box[len(m.box)-1]
		} else {
			b = m.newBatch()
			m.box = append(m.box, b)
		}
		out := src[:n]
		if queued { // what leaves q is dead in held
			sent := 0
			for i := range out {
				sent += len(out[i].Vals)
			}
			m.live -= sent - sentIn
		}
		switch {
		case take:
			// The batch takes the round's packets and arena (Handoff)
			// when they are at most twice what it holds (as a slice
			// grown by appending), or small (HandFloor): see Handoff's
			// bound; else it copies them and the drain keeps its storage.
			if cap(in) <= max(2*len(in), HandFloor) {
				b.Packets, *inp = in, b.Packets[:0]
			} else {
				b.Packets = append(b.Packets, in...)
			}
			if arena != nil && cap(*arena) <= max(2*sentIn, 4*HandFloor) {
				b.Arena, *arena = *arena, b.Arena[:0]
				tookArena = true
			} else {
				b.Arena = moveVals(b.Arena, b.Packets)
			}
		default:
			b.Arena = moveVals(b.Arena, out)
			b.Packets = append(b.Packets, out...)
		}
		b.Defs = append(b.Defs, m.defs...)
		m.defs = m.defs[:0]
		b.Watermark = w
		b.Counts = m.countsFor(b.Counts[:0], counts)
		b.Applied, b.AppliedAt = m.nApplied, m.appliedAt
		m.lastEmit = now
		select {
		case m.ready <- struct{}{}:
		default:
		}
	} else {
		n = 0
	}
	if queued { // keep what was not sent: the sent are a dead prefix
		clear(m.q[m.qh : m.qh+n])
		m.qh += n
		switch {
		case m.qh == len(m.q):
			m.q, m.qh = m.q[:0], 0
		case m.qh > len(m.q)-m.qh: // compacting costs no more than sending did
			k := copy(m.q, m.q[m.qh:])
			clear(m.q[k:])
			m.moved += uint64(k)
			m.q, m.qh = m.q[:k], 0
		}
	} else if n < len(src) { // src is in (q empty): its packets after w, their values in held
		m.q = append(m.q, src[n:]...)
	}
	m.qs = len(m.q)
	switch {
	case len(m.q) == 0: // nothing points into held
		m.held, m.live = m.held[:0], 0
	case 2*m.live < len(m.held): // more than half dead
		m.compact(0)
	}
	return tookArena
}

// order puts the held packets, q[qh:], in timestamp order (stable, as a
// sort of all of them would): those added since the last round, q[qs:],
// are sorted, then merged with the held ones after the first of them —
// O(new · log new + the held ones after the first new), not O(held): a
// backlog whose packets precede the new ones (the watermark lagging)
// costs nothing. (qmu held.)
func (m *mailbox) order() {
	tail := m.q[m.qs:]
	if !slices.IsSortedFunc(tail, byTS) {
		slices.SortStableFunc(tail, byTS)
	}
	if m.qs == m.qh || len(tail) == 0 || m.q[m.qs-1].TS <= tail[0].TS {
		m.qs = len(m.q)
		return
	}
	held := m.q[m.qh:m.qs]
	pos := m.qh + sort.Search(len(held), func(i int) bool { return held[i].TS > tail[0].TS })
	// Merge q[pos:qs] (copied out) with the new, q[qs:], into q[pos:]:
	// the write position pos+i+(j−qs) never passes the read one j.
	m.merge = append(m.merge[:0], m.q[pos:m.qs]...)
	i, j, k := 0, m.qs, pos
	for i < len(m.merge) && j < len(m.q) {
		if m.merge[i].TS <= m.q[j].TS { // held first among equals
			m.q[k], i = m.merge[i], i+1
		} else {
			m.q[k], j = m.q[j], j+1
		}
		k++
	}
	copy(m.q[k:], m.merge[i:]) // (new ones left are in place)
	m.moved += uint64(len(m.merge))
	clear(m.merge)
	m.qs = len(m.q)
}

// hold appends pkts to q, their values copied into held (qmu held, or
// the session not yet seen by the drain: Prime).
func (m *mailbox) hold(pkts []wire.Packet) {
	need := 0
	for i := range pkts {
		need += len(pkts[i].Vals)
	}
	m.reserve(need)
	k := len(m.q)
	m.q = append(m.q, pkts...)
	m.held = moveVals(m.held, m.q[k:]) // (within capacity: reserve)
	m.live += need
}

// reserve makes room in held for need more values, compacting it if
// they do not fit; it counts them copied.
func (m *mailbox) reserve(need int) {
	if len(m.held)+need > cap(m.held) {
		m.compact(need)
	}
	m.copied += uint64(need)
}

// compact moves the values of q's packets (all of them in held) into the
// spare arena, with room for need more (grown to twice live+need if it
// has less), and makes it held; the old held, which no packet points
// into any more, becomes spare.
func (m *mailbox) compact(need int) {
	if cap(m.spare) < m.live+need {
		m.spare = make([]wire.Value, 0, 2*(m.live+need))
	}
	m.spare = moveVals(m.spare[:0], m.q[m.qh:])
	m.copied += uint64(len(m.spare))
	clear(m.held) // the dead values' strings, for the collector
	m.held, m.spare = m.spare, m.held[:0]
	m.live = len(m.held)
}

// moveVals copies the values of pkts into arena (appending) and points
// the packets at the copies; it returns the arena.
func moveVals(arena []wire.Value, pkts []wire.Packet) []wire.Value {
	need := 0
	for i := range pkts {
		need += len(pkts[i].Vals)
	}
	if cap(arena)-len(arena) < need {
		// The packets already in the old arena keep it alive as long as
		// they need it.
		arena = make([]wire.Value, 0, max(need, 2*cap(arena)))
	}
	for i := range pkts {
		p := &pkts[i]
		k := len(arena)
		arena = append(arena, p.Vals...)
		p.Vals = arena[k:len(arena):len(arena)]
	}
	return arena
}

// newBatch returns an empty batch, a released one if there is one (qmu
// held).
func (m *mailbox) newBatch() *wire.Batch {
	k := len(m.free)
	if k == 0 {
		return &wire.Batch{}
	}
	b := m.free[k-1]
	m.free[k-1] = nil
	m.free = m.free[:k-1]
	*b = wire.Batch{Packets: b.Packets[:0], Defs: b.Defs[:0], Counts: b.Counts[:0], Arena: b.Arena[:0]}
	return b
}

// countsFor appends to out the counts as this session sees them: its own
// overflows are drops too, and the packets it alone wanted (own: its
// first packets, those shed unsent for it) are wanted too (a sensor none
// of whose packets was written gets its entry).
func (m *mailbox) countsFor(out, counts []wire.Count) []wire.Count {
	k := len(out)
	out = append(out, counts...)
	for i := range out[k:] {
		c := &out[k+i]
		// Counts only grow: what they were at Base is the resident's
		// past.
		if j := slices.IndexFunc(m.base, func(b wire.Count) bool { return b.Sensor == c.Sensor }); j >= 0 {
			c.Wanted -= min(c.Wanted, m.base[j].Wanted)
			c.Drops -= min(c.Drops, m.base[j].Drops)
		}
		c.Drops += m.over[c.Sensor]
		c.Wanted += m.own[c.Sensor]
	}
	for sid, n := range m.own {
		if n != 0 && !slices.ContainsFunc(counts, func(c wire.Count) bool { return int(c.Sensor) == sid }) {
			out = append(out, wire.Count{Sensor: uint16(sid), Wanted: n, Drops: m.over[sid]})
		}
	}
	return out
}
