package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// inbuf is one input of a merge: the elements an operator's input has
// received and the operator has not yet processed, and the input's
// watermark.
type inbuf struct {
	buf  []stream.Elem
	head int          // buf[head:] are still to be processed
	wm   algebra.Time // the input's last Advance
	seen bool         // an Advance has come
}

func (b *inbuf) push(e stream.Elem) { b.buf = append(b.buf, e) }

// advance records the input's watermark t and reports whether it rose; a
// watermark that does not rise is ignored.
func (b *inbuf) advance(t algebra.Time) bool {
	if b.seen && t <= b.wm {
		return false
	}
	b.wm, b.seen = t, true
	return true
}

// held counts the elements still to be processed.
func (b *inbuf) held() int { return len(b.buf) - b.head }

// merge is the k-way watermark merge of an operator's buffered inputs
// (Join's and SetOp's): each input pushes into its inbuf; when an input's
// watermark rises the operator asks for the merge's watermark and then takes
// elements from next until there are none.
//
// Invariant: next releases elements in time order, Ends first at equal
// times (stream.Less; between inputs tied on both, the lower-numbered
// input's first), and nothing later than the least input watermark — as of
// the last call of watermark, and nothing at all before every input has
// sent an Advance. Each input's stream is in time order and no input will
// deliver anything at or before its watermark, so comparing the inputs'
// first unprocessed elements suffices: once next is exhausted the operator
// has processed, from every input, everything at or before the watermark
// and nothing after.
type merge struct {
	in []*inbuf
	w  algebra.Time // next releases elements at or before w
	ok bool         // every input has sent an Advance
}

// watermark is the least input watermark; ok is false until every input
// has sent an Advance (before that, an input may deliver anything).
func (m *merge) watermark() (algebra.Time, bool) {
	w := algebra.Forever
	for _, b := range m.in {
		if !b.seen {
			return 0, false
		}
		w = min(w, b.wm)
	}
	m.w, m.ok = w, true
	return w, true
}

// next removes and returns the next element and the index of its input;
// ok is false when there is none at or before the watermark.
func (m *merge) next() (i int, e stream.Elem, ok bool) {
	if !m.ok {
		return 0, stream.Elem{}, false
	}
	w := m.w
	var best *inbuf
	for n, b := range m.in {
		if b.head < len(b.buf) && b.buf[b.head].T <= w {
			if best == nil || stream.Less(b.buf[b.head], best.buf[best.head]) {
				best, i = b, n
			}
		}
	}
	if best == nil {
		return 0, stream.Elem{}, false
	}
	e = best.buf[best.head]
	best.buf[best.head] = stream.Elem{}
	best.head++
	return i, e, true
}

// reclaim frees the room of processed elements: an input's buffer starts
// over once it is drained, and is moved down once more than half of it
// (and over 1024 elements) is processed.
func (m *merge) reclaim() {
	for _, b := range m.in {
		if b.head == len(b.buf) {
			b.buf, b.head = b.buf[:0], 0
		} else if b.head > 1024 && b.head*2 > len(b.buf) {
			n := copy(b.buf, b.buf[b.head:])
			b.buf, b.head = b.buf[:n], 0
		}
	}
}

// held counts the elements buffered and not yet processed.
func (m *merge) held() int {
	n := 0
	for _, b := range m.in {
		n += b.held()
	}
	return n
}
