package exec

import (
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
