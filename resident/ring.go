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
	// seq is pos+1 once the packet whose head is at pos is published.
	seq atomic.Uint64
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

// ring is a bounded lock-free multi-producer single-consumer queue of
// slots, after D. Vyukov's bounded queue, with per-slot sequence numbers
// for publication and a consumer index for room:
//
//   - a producer claims positions [tail, tail+k) with a CAS on tail, if
//     they are below head+size (head: how far the drain has consumed);
//     otherwise the ring is full and the caller counts a drop;
//   - it writes the slots, then publishes the packet by storing the head
//     slot's seq = pos+1 (the packet's other slots need no publication:
//     the drain reads them after the head's seq);
//   - the drain consumes packets in position order, waiting for each head
//     to be published, and advances head (published every few hundred
//     packets and at the end of its round).
//
// The drain never writes a slot: cache lines only travel from producers
// to the drain. (So a slot keeps the entities and strings of its last
// packet reachable until it is overwritten, one lap later.)
type ring struct {
	_     [cacheLine]byte
	slots []slot // read-only after newRing
	size  uint64
	mask  uint64
	_     [cacheLine - 40]byte
	tail  atomic.Uint64 // next position to claim (producers)
	_     [cacheLine - 8]byte
	head  atomic.Uint64 // positions below are consumed (drain writes)
	_     [cacheLine - 8]byte
}

// newRing returns a ring of n slots (rounded up to a power of two, at
// least 16: room for the largest pair of packets an entity operation
// writes).
func newRing(n int) *ring {
	size := 16
	for size < n {
		size <<= 1
	}
	return &ring{slots: make([]slot, size), size: uint64(size), mask: uint64(size - 1)}
}

// reserve claims k consecutive positions (k ≤ size) and returns the first;
// false when the ring has no room for them.
func (q *ring) reserve(k uint64) (uint64, bool) {
	for {
		pos := q.tail.Load()
		if pos+k-q.head.Load() > q.size {
			return 0, false
		}
		if q.tail.CompareAndSwap(pos, pos+k) {
			return pos, true
		}
	}
}

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
func (sl *slot) commit(pos uint64) { sl.seq.Store(pos + 1) }

// wait returns the head slot at pos once its producer has published it
// (drain only). A producer is between its claim and its publication for a
// few nanoseconds unless it was preempted: spin briefly, then yield. (A
// slot's seq is always some earlier head position + 1, or 0: never pos+1
// before the packet at pos is published.)
func (q *ring) wait(pos uint64) *slot {
	sl := &q.slots[pos&q.mask]
	for spins := 0; sl.seq.Load() != pos+1; spins++ {
		if spins > 64 {
			runtime.Gosched()
		}
	}
	return sl
}
