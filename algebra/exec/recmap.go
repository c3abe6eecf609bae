package exec

import (
	"math/bits"
	"unsafe"

	"github.com/tqmon/tqmon/algebra/stream"
)

// recMap maps records, by identity, to Vs: the table an operator keeps of
// the tuples it has seen begin and not yet end (a Begin puts, its End
// takes the entry out). It replaces a Go map keyed by *stream.Rec on the
// operators' hot path, as a hashMap keyed by the record's address times an
// odd constant: a bijection on 64 bits, so distinct records have distinct
// keys, and a multiplicative (Fibonacci) hash, so the top bits hashMap
// homes by are spread.
//
// Keying by address is sound because Go's collector does not move heap
// objects, and a record in the table is on the heap (the slot points to
// it); the slot holds the pointer itself, so the record stays alive while
// it is a key.
type recMap[V any] struct {
	m hashMap[recEntry[V]]
}

type recEntry[V any] struct {
	rec *stream.Rec
	v   V
}

func recKey(k *stream.Rec) uint64 {
	return uint64(uintptr(unsafe.Pointer(k))) * 0x9e3779b97f4a7c15
}

func (m *recMap[V]) len() int { return m.m.len() }

// get is k's value.
func (m *recMap[V]) get(k *stream.Rec) (V, bool) {
	if i := m.m.find(recKey(k)); i >= 0 {
		return m.m.slots[i].v.v, true
	}
	var zero V
	return zero, false
}

// put maps k to v.
func (m *recMap[V]) put(k *stream.Rec, v V) { m.m.put(recKey(k), recEntry[V]{k, v}) }

// take removes k and returns its value.
func (m *recMap[V]) take(k *stream.Rec) (V, bool) {
	i := m.m.find(recKey(k))
	if i < 0 {
		var zero V
		return zero, false
	}
	v := m.m.slots[i].v.v
	m.m.remove(i)
	return v, true
}

// del removes k, if present.
func (m *recMap[V]) del(k *stream.Rec) { m.m.del(recKey(k)) }

// any is some key and its value; ok is false when the map is empty.
func (m *recMap[V]) any() (k *stream.Rec, v V, ok bool) {
	i := m.m.any()
	if i < 0 {
		return nil, v, false
	}
	e := m.m.slots[i].v
	return e.rec, e.v, true
}

// reset empties the map, keeping its slots.
func (m *recMap[V]) reset() {
	clear(m.m.slots)
	m.m.n = 0
}

// hashMap maps hash keys (algebra.HashTuple's or the run's hash, already
// mixed) to Vs: the tables of Coalesce groups, join indexes, aggregate
// groups and (recMap) open tuples, the operators' hot path, instead of Go
// maps. Open addressing over one array of slots: a key's home slot is its
// top bits, linear probing, deletion by backward shift, so there are no
// tombstones and a probe stops at the first empty slot. A slot's full flag
// tells an empty slot from key 0.
//
// Invariants: len(slots) is 0 or a power of two at least twice n (the load
// stays ≤ 1/2, so probes are short and an empty slot always exists); every
// key lies in the run of full slots that starts at its home slot (linear
// probing's invariant, which remove's backward shift keeps).
type hashMap[V any] struct {
	slots []hashSlot[V]
	n     int
	shift uint // 64 − log2(len(slots))
	scan  int  // where any resumes its search
}

type hashSlot[V any] struct {
	k    uint64
	full bool
	v    V
}

func (m *hashMap[V]) home(k uint64) int { return int(k >> m.shift) }

// find is k's slot, or −1.
func (m *hashMap[V]) find(k uint64) int {
	if m.n == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := m.home(k); m.slots[i].full; i = (i + 1) & mask {
		if m.slots[i].k == k {
			return i
		}
	}
	return -1
}

func (m *hashMap[V]) len() int { return m.n }

// get is k's value (zero when absent).
func (m *hashMap[V]) get(k uint64) V {
	if i := m.find(k); i >= 0 {
		return m.slots[i].v
	}
	var zero V
	return zero
}

// ref is a pointer to k's value, made zero if k was absent; valid until
// the next put, ref or del.
func (m *hashMap[V]) ref(k uint64) *V {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	i := m.home(k)
	for ; m.slots[i].full; i = (i + 1) & mask {
		if m.slots[i].k == k {
			return &m.slots[i].v
		}
	}
	m.slots[i] = hashSlot[V]{k: k, full: true}
	m.n++
	return &m.slots[i].v
}

// put maps k to v.
func (m *hashMap[V]) put(k uint64, v V) { *m.ref(k) = v }

// del removes k, if present.
func (m *hashMap[V]) del(k uint64) {
	if i := m.find(k); i >= 0 {
		m.remove(i)
	}
}

// remove empties slot i and shifts back the entries after it that probed
// past it, so that every key stays reachable from its home slot.
func (m *hashMap[V]) remove(i int) {
	mask := len(m.slots) - 1
	for j := (i + 1) & mask; m.slots[j].full; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies
		// cyclically in (i, j]: then i is before its home.
		if h := m.home(m.slots[j].k); (j-h)&mask >= (j-i)&mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = hashSlot[V]{}
	m.n--
}

// reset empties the map in time proportional to the keys it held: a
// table more than eight times larger than they need (after an instant
// with many events, say) is dropped, to grow again as keys come.
func (m *hashMap[V]) reset() {
	if m.n == 0 {
		return
	}
	if len(m.slots) > 64 && len(m.slots) > 8*m.n {
		m.slots = nil
	} else {
		clear(m.slots)
	}
	m.n, m.scan = 0, 0
}

// any is the slot of some key, or −1 when the map is empty.
func (m *hashMap[V]) any() int {
	if m.n == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := m.scan & mask; ; i = (i + 1) & mask {
		if m.slots[i].full {
			m.scan = i
			return i
		}
	}
}

func (m *hashMap[V]) grow() {
	old := m.slots
	size := max(16, 2*len(old))
	m.slots = make([]hashSlot[V], size)
	m.shift = uint(64 - bits.Len(uint(size-1)))
	m.n = 0
	for _, s := range old {
		if s.full {
			m.put(s.k, s.v)
		}
	}
}
