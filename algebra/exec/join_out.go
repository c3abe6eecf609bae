package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// emit buffers a result until the output watermark passes it; seq keeps
// results at the same time and phase in the order they were decided.
func (j *Join) emit(e stream.Elem) {
	j.seq++
	j.outBuf.push(e, j.seq)
}

// futureLow bounds the time of any output of a binding still to be formed.
func (j *Join) futureLow(h algebra.Time) algebra.Time {
	low := algebra.Forever
	if j.k == 0 {
		return low
	}
	valid := j.spec.Valid
	for f := 0; f < j.k; f++ {
		for v, in := range j.in {
			if v == f {
				j.vs[v] = in.futureSpan(h)
			} else {
				j.vs[v] = j.storedSpan(in, h)
			}
		}
		var t algebra.Time
		if valid.At != nil {
			t = evalT(valid.At, j.vs).b.lo
		} else {
			t = evalT(valid.From, j.vs).b.lo
		}
		low = min(low, t)
	}
	return low
}

// release sends every buffered output that comes before any output still
// possible, then advances the output stream.
func (j *Join) release(w, h algebra.Time) {
	var low algebra.Time
	final := w == algebra.Forever
	if !final {
		low = min(h, j.futureLow(h))
		for j.lb.len() > 0 {
			top := j.lb.top()
			if top.c.ver != top.ver || top.c.state == dead {
				j.lb.pop()
				continue
			}
			low = min(low, top.key)
			break
		}
	}
	for j.outBuf.len() > 0 {
		e := j.outBuf.top()
		if !final && e.T >= low {
			break
		}
		j.outBuf.pop()
		j.out.Push(e)
	}
	adv := algebra.Forever
	if !final {
		adv = algebra.Prev(low)
	}
	if adv > j.lastAdv || (final && !j.finished) {
		j.lastAdv = adv
		if final {
			j.finished = true
		}
		j.out.Advance(adv)
	}
}

// ---- heaps ----

type candItem struct {
	key algebra.Time
	c   *cand
	ver uint32
}

type candHeap struct{ a []candItem }

func (h *candHeap) len() int      { return len(h.a) }
func (h *candHeap) top() candItem { return h.a[0] }
func (h *candHeap) push(x candItem) {
	h.a = append(h.a, x)
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.a[p].key <= h.a[i].key {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}
func (h *candHeap) pop() candItem {
	x := h.a[0]
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a[n] = candItem{}
	h.a = h.a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.a[l].key < h.a[m].key {
			m = l
		}
		if r < n && h.a[r].key < h.a[m].key {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return x
}

type seqElem struct {
	e   stream.Elem
	seq uint64
}

type elemHeap struct{ a []seqElem }

func seqLess(x, y seqElem) bool {
	if x.e.T != y.e.T {
		return x.e.T < y.e.T
	}
	if px, py := x.e.Phase(), y.e.Phase(); px != py {
		return px < py
	}
	return x.seq < y.seq
}

func (h *elemHeap) len() int         { return len(h.a) }
func (h *elemHeap) top() stream.Elem { return h.a[0].e }
func (h *elemHeap) push(e stream.Elem, seq uint64) {
	h.a = append(h.a, seqElem{e, seq})
	i := len(h.a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !seqLess(h.a[i], h.a[p]) {
			break
		}
		h.a[p], h.a[i] = h.a[i], h.a[p]
		i = p
	}
}
func (h *elemHeap) pop() stream.Elem {
	x := h.a[0].e
	n := len(h.a) - 1
	h.a[0] = h.a[n]
	h.a[n] = seqElem{}
	h.a = h.a[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && seqLess(h.a[l], h.a[m]) {
			m = l
		}
		if r < n && seqLess(h.a[r], h.a[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.a[m], h.a[i] = h.a[i], h.a[m]
		i = m
	}
	return x
}
