package exec

import (
	"github.com/tqmon/tqmon/algebra"
)

// kill marks a stored entry purged: no future binding will use it. It
// leaves the store at the next compaction.
func (j *Join) kill(in *joinInput, e *entry) {
	e.dead = true
	in.nLive--
	in.nDead++
	for i, ix := range in.idx {
		h := e.hash
		if i > 0 {
			h, j.keyVals = j.hashCols(e.rec.Vals, ix.cols)
		}
		ix.remove(h, e)
	}
	if e.open {
		in.nOpen--
		if len(e.deps) == 0 {
			in.open.del(e.rec)
		}
	}
}

// sweep checks every stored entry of an input for purging once its store
// has doubled since the last check, and compacts the store once purged
// entries outnumber live ones.
func (j *Join) sweep(h algebra.Time) {
	for _, in := range j.in {
		if !in.stored {
			continue
		}
		if in.nLive >= in.threshold {
			for _, e := range in.entries[in.entHead:] {
				if !e.dead && j.purgeable(in.i, e, h) {
					j.kill(in, e)
				}
			}
			in.threshold = max(in.sweepMin, 2*in.nLive)
		}
		if in.nDead > 64 && in.nDead > in.nLive || in.sweepMin == 1 && in.nDead > 0 {
			in.compact()
			if in.sum != nil {
				in.sum.forget()
			}
			if j.groups != nil && !j.isExist(in.i) {
				j.dropGroups()
			}
		}
	}
}

// compact removes purged entries from the store's arrival list and closed
// queue (kill has already taken them out of the indexes).
func (in *joinInput) compact() {
	live := in.entries[:0]
	for _, e := range in.entries[in.entHead:] {
		if !e.dead {
			live = append(live, e)
		}
	}
	clear(in.entries[len(live):])
	in.entries, in.entHead = live, 0
	cq := in.closedQ[:0]
	for _, e := range in.closedQ[in.closedH:] {
		if !e.dead {
			cq = append(cq, e)
		}
	}
	clear(in.closedQ[len(cq):])
	in.closedQ, in.closedH = cq, 0
	in.nDead = 0
	if in.maxLate != 0 {
		in.minB = algebra.Forever
		for _, e := range in.entries {
			in.minB = min(in.minB, e.b)
		}
	}
}

// storedSpan bounds the valid time of any tuple input in may contribute to
// a future binding: one it stores now or one still to come.
func (j *Join) storedSpan(in *joinInput, h algebra.Time) varSpan {
	fut := in.futureSpan(h)
	minB, minE := fut.b.lo, fut.e.lo
	for in.entHead < len(in.entries) && in.entries[in.entHead].dead {
		in.entHead++
	}
	if in.maxLate != 0 {
		if in.nLive > 0 {
			minB = min(minB, in.minB)
		}
	} else if in.entHead < len(in.entries) {
		minB = min(minB, in.entries[in.entHead].b)
	}
	for in.closedH < len(in.closedQ) && in.closedQ[in.closedH].dead {
		in.closedH++
	}
	if in.closedH < len(in.closedQ) {
		minE = min(minE, in.closedQ[in.closedH].e)
	}
	return varSpan{b: rng{minB, algebra.Forever}, e: rng{minE, algebra.Forever}}
}

// futureSpan bounds the valid time of a tuple this input has still to
// deliver: it begins at h or later — or, for a late input, at most maxLate
// before — and ends after h (a late input's whole tuples end at h or later).
func (in *joinInput) futureSpan(h algebra.Time) varSpan {
	if in.maxLate == 0 {
		return varSpan{b: rng{h, algebra.Forever}, e: rng{algebra.Next(h), algebra.Forever}}
	}
	lo := algebra.Beginning
	if in.maxLate != algebra.Forever && h > algebra.Beginning+in.maxLate {
		lo = h - in.maxLate
	}
	return varSpan{b: rng{lo, algebra.Forever}, e: rng{h, algebra.Forever}}
}

// purgeable reports whether every future binding with e at input i fails
// the when clause.
func (j *Join) purgeable(i int, e *entry, h algebra.Time) bool {
	if j.spec.OverlapPurge {
		return !e.open && e.e <= h
	}
	for f := 0; f < j.k; f++ {
		if f == i {
			continue
		}
		for v, in := range j.in {
			switch {
			case v == i:
				if e.open {
					j.vs[v] = varSpan{b: point(e.b), e: rng{max(h, algebra.Next(e.b)), algebra.Forever}}
				} else {
					j.vs[v] = varSpan{b: point(e.b), e: point(e.e)}
				}
			case v == f:
				j.vs[v] = in.futureSpan(h)
			default:
				j.vs[v] = j.storedSpan(in, h)
			}
		}
		if evalP(j.spec.When, j.vs) != no {
			return false
		}
	}
	return true
}
