package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"slices"

	"github.com/tqmon/tqmon/algebra/stream"
)

// sortByTime sorts elements by time, stably (elements at equal times keep
// their order), in linear time: a least-significant-digit radix sort on
// the time's offset from the least, a byte a pass, skipping the bytes
// every element shares (a history's times span far fewer than 64 bits).
// Short slices are sorted by comparison. scratch, when long enough, is
// used for the passes; the buffer used (scratch or a new one) is returned
// for reuse.
func sortByTime(elems, scratch []stream.Elem) []stream.Elem {
	n := len(elems)
	if n < 256 {
		slices.SortStableFunc(elems, byTime)
		return scratch
	}
	lo, hi := elems[0].T, elems[0].T
	for i := range elems {
		lo, hi = min(lo, elems[i].T), max(hi, elems[i].T)
	}
	span := uint64(hi) - uint64(lo) // the offsets' range, without overflow
	if cap(scratch) < n {
		scratch = make([]stream.Elem, n)
	}
	src, dst := elems, scratch[:n]
	var count [256]int
	for shift := uint(0); shift < 64 && span>>shift != 0; shift += 8 {
		clear(count[:])
		for i := range src {
			count[byte((uint64(src[i].T)-uint64(lo))>>shift)]++
		}
		if count[byte((uint64(src[0].T)-uint64(lo))>>shift)] == n {
			continue // every element has this byte: the pass would not move one
		}
		pos := 0
		for d, c := range count {
			count[d] = pos
			pos += c
		}
		for i := range src {
			d := byte((uint64(src[i].T) - uint64(lo)) >> shift)
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &elems[0] {
		copy(elems, src)
	}
	return scratch
}

// screenRows lists the rows of a table that skip does not reject, and,
// while they are at most half the rows read so far (and packSlack more),
// copies their values in order into blocks of packRows rows (packed; nil
// once they are more), so that the network reads them in sequence: the
// kept rows of a selective screen lie far apart in the table and reading
// each again would miss the cache (measured: half the time of
// BenchmarkInterpreterSelectProject). Each row is copied while the screen
// has it in cache. The copy holds at most half the table's values and
// packSlack rows; a dense screen gives up within its first packSlack rows
// kept. A table whose rows differ in width is not packed. packedRow finds
// a kept row's values.
func screenRows(t *algebra.Table, skip func([]algebra.Value) bool) (keep []int, packed [][]algebra.Value) {
	keep = make([]int, 0, 64)
	w := len(t.Rel.Attrs)
	pack := w > 0
	var block []algebra.Value
	for i := range t.Rows {
		vals := t.Rows[i].Vals
		if skip(vals) {
			continue
		}
		keep = append(keep, i)
		if !pack {
			continue
		}
		if pack = len(vals) == w && 2*len(keep) <= i+1+2*packSlack; !pack {
			packed = nil
			continue
		}
		if len(block) == cap(block) {
			block = make([]algebra.Value, 0, packRows*w)
			packed = append(packed, block)
		}
		block = append(block, vals...)
	}
	return keep, packed
}

// packRows is the rows of a block of screenRows; packSlack how many more
// than half the rows read it packs before it gives up.
const (
	packRows  = 1024
	packSlack = 64
)

// packedRow is kept row k's values in blocks packed by screenRows.
func packedRow(packed [][]algebra.Value, k int) []algebra.Value {
	b := packed[k/packRows]
	w := cap(b) / packRows
	at := k % packRows * w
	return b[at : at+w : at+w]
}
