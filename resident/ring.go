package resident

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/tqmon/tqmon/resident/wire"
)

// MaxAttrs is the most attributes a relation may have (a packet holds at
// most that many values).
const MaxAttrs = 8

// cacheLine pads hot fields apart so producers and the drain do not share
// cache lines.
const cacheLine = 64

// slotVal is one value in a ring slot: an entity (p is its *Entity), a
// string (p its data, n its length — the string header, nothing copied) or
// a number (n). The sensor's attribute kinds say which.
type slotVal struct {
	p unsafe.Pointer
	n uint64
}

// slot is one ring position: 64 bytes, one cache line. A packet takes one
// or more consecutive positions:
//
//   - the head: w = {ts, session mask, epoch|sensor|kind|n|flags}, v =
//     values 0 and 1;
//   - for every kind but PEvent, an extra slot: w = {tuple, begin, smask},
//     v[0].n = sepoch, v[1] = value 2;
//   - then two values per slot.
//
// So an event with two values — the common case — is one cache line. The
// producer writes every slot of its packet, then publishes the head; the
// other slots' seq need no publication (the drain reads them after the
// head's, which orders them).
//
// mask: sessions (by index) that wanted the packet when it fired, as of
// epoch. smask/sepoch: sessions the interval's begin went to (a PEnd also
// goes to them), as of sepoch.
type slot struct {
	// seq is pos+1 once the packet whose head is at pos is published
	// (storeRel by the producer, atomic load by the drain).
	seq uint64
	w   [3]uint64
	v   [2]slotVal
}

// slot flags.
const (
	slotDeleted uint8 = 1 << iota // PEntityEnd of a deleted entity
)

// packHdr packs a head slot's third word.
func packHdr(ep uint32, sensor SensorID, kind wire.PacketKind, n, flags uint8) uint64 {
	return uint64(ep) | uint64(sensor)<<32 | uint64(kind)<<48 | uint64(n)<<56 | uint64(flags)<<60
}

// unpackHdr unpacks a head slot's third word.
func unpackHdr(h uint64) (ep uint32, sensor SensorID, kind wire.PacketKind, n, flags uint8) {
	return uint32(h), SensorID(h >> 32), wire.PacketKind(h >> 48), uint8(h>>56) & 0xf, uint8(h >> 60)
}

// extras reports whether packets of kind carry the extra slot.
func extras(kind wire.PacketKind) bool { return kind != wire.PEvent }

// slotsFor returns how many positions a packet of kind with n values
// takes.
func slotsFor(kind wire.PacketKind, n int) uint64 {
	if extras(kind) {
		return 2 + uint64(max(0, n-3)+1)/2
	}
	return 1 + uint64(max(0, n-2)+1)/2
}

// maxSlots is the most positions a packet takes.
var maxSlots = slotsFor(wire.PEnd, MaxAttrs)

// ring is a bounded single-producer single-consumer queue of slots: one
// per P (the runtime's processor a goroutine runs on). A producer pins
// its goroutine to its P (Resident.pin) for the few nanoseconds of a
// packet write, which makes it the ring's only producer: no other
// goroutine runs on that P until it unpins, and the runtime does not
// preempt a pinned goroutine. So a claim is a load and a store, not a
// compare-and-swap, and no instruction of the write path waits for the
// store buffer:
//
//   - the producer claims positions [claim, claim+k) if they are below
//     head+size (head: how far the drain has consumed), by storing
//     claim+k (storeRel); otherwise the ring is full and the caller counts
//     a drop;
//   - it reads the clock, writes the slots, then publishes the packet by
//     storing the head slot's seq = pos+1 (storeRel: the packet's other
//     slots need no publication, the drain reads them after the head's
//     seq);
//   - the drain consumes packets in position order up to the claim it
//     read, waiting for each head to be published, and advances head
//     (every few hundred packets and at the end of its round).
//
// A pinned producer writes its packets in claim order and reads the clock
// after each claim, so each ring's packets are in timestamp order; the
// drain merges the rings by timestamp.
//
// The watermark rule (drain.go) needs: a packet whose claim the drain did
// not see was stamped at or after the drain's clock read D0. With plain
// stores (amd64) the claim may still sit in the producer's store buffer
// when the drain looks; so the drain calls membarrier(2) after reading
// D0 and before reading the claims: every thread that made a claim store
// before the barrier point is seen, and every clock read after that point
// runs after D0. Where membarrier is not available the claim is an atomic
// (sequentially consistent) store, which the clock read cannot pass.
//
// The drain never writes a slot: cache lines only travel from producers
// to the drain. (So a slot keeps the entities and strings of its last
// packet reachable until it is overwritten, one lap later.)
type ring struct {
	_     [cacheLine]byte
	slots []slot // read-only after newRing
	size  uint64
	mask  uint64
	room  uint64 // positions sensor packets may fill: the rest is the entities' reserve
	_     [cacheLine - 48]byte
	claim uint64 // positions below are claimed (the P's producer; atomic loads)
	_     [cacheLine - 8]byte
	head  atomic.Uint64 // positions below are consumed (drain writes)
	_     [cacheLine - 8]byte
}

// newRing returns a ring of n slots (rounded up to a power of two, at
// least 16: room for the largest pair of packets an entity operation
// writes).
//
// Sensor packets may fill the ring only up to room: the last eighth is
// the entities' reserve, so that a flood of sensor packets does not keep
// entity packets waiting (emitEntity).
func newRing(n int) *ring {
	size := 16
	for size < n {
		size <<= 1
	}
	reserve := size / 8
	return &ring{slots: make([]slot, size), size: uint64(size), mask: uint64(size - 1), room: uint64(size - reserve)}
}

// reserve claims k consecutive positions (k ≤ size) and returns the first;
// false when the ring has no room for them below limit (room for sensor
// packets, size for entity packets). The caller is pinned to the ring's P.
// plain: the claim may be a plain store (the drain uses membarrier).
func (q *ring) reserve(k, limit uint64, plain bool) (uint64, bool) {
	// (An atomic load is a MOV: it costs nothing, and the race detector,
	// which knows nothing of pinning, sees the goroutines taking turns on
	// the P order their claims.)
	pos := atomic.LoadUint64(&q.claim)
	if pos+k-q.head.Load() > limit {
		return 0, false
	}
	if plain {
		storeRel(&q.claim, pos+k)
	} else {
		atomic.StoreUint64(&q.claim, pos+k)
	}
	return pos, true
}

// claimed returns the ring's claim (drain).
func (q *ring) claimed() uint64 { return atomic.LoadUint64(&q.claim) }

// at returns position pos's slot.
func (q *ring) at(pos uint64) *slot { return &q.slots[pos&q.mask] }

// val returns where value i of the packet at pos goes.
func (q *ring) val(pos uint64, ex bool, i int) *slotVal {
	if i < 2 {
		return &q.slots[pos&q.mask].v[i]
	}
	if ex {
		if i == 2 {
			return &q.slots[(pos+1)&q.mask].v[1]
		}
		i -= 3
		return &q.slots[(pos+2+uint64(i/2))&q.mask].v[i%2]
	}
	i -= 2
	return &q.slots[(pos+1+uint64(i/2))&q.mask].v[i%2]
}

// commit publishes the packet whose head is sl, at pos.
func (sl *slot) commit(pos uint64) { storeRel(&sl.seq, pos+1) }

// wait returns the head slot at pos once its producer has published it
// (drain only). A producer is between its claim and its publication for a
// few nanoseconds unless its thread was descheduled: spin briefly, then
// yield. (A slot's seq is always some earlier head position + 1, or 0:
// never pos+1 before the packet at pos is published.)
func (q *ring) wait(pos uint64) *slot {
	sl := &q.slots[pos&q.mask]
	for spins := 0; atomic.LoadUint64(&sl.seq) != pos+1; spins++ {
		if spins > 64 {
			runtime.Gosched()
		}
	}
	return sl
}
