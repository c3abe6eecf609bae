package exec

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/stream"
)

// joinInput is one input of a Join: its buffered elements and watermark
// (merged with the other inputs' by Join.merge) and the store of its tuples
// that the other inputs' future tuples may bind with.
type joinInput struct {
	j      *Join
	i      int
	event  bool
	stored bool // other inputs' future tuples may bind with these
	// maxLate bounds the lateness of this input's tuples (0: never late).
	maxLate algebra.Time
	// minB is, for a late input, a lower bound of the begins of its stored
	// entries (they are not stored in order of begin); recomputed at
	// compaction.
	minB algebra.Time

	inbuf // buffered elements and watermark, merged by Join.merge

	entries   []*entry // stored, in arrival (= begin) order
	entHead   int
	closedQ   []*entry // stored and closed, in order of end
	closedH   int
	nOpen     int
	nLive     int
	nDead     int
	threshold int
	sweepMin  int
	open      recMap[*entry]
	idx       []*index
	sum       *summary     // witness summary of an existential variable, or nil
	scr       expr.Binding // rejects' binding
}

// entry is a tuple of an input: stored when the input is, and the
// candidates waiting for its end (deps) while it is open.
type entry struct {
	hash uint64 // its hash in the input's first index
	rec  *stream.Rec
	b, e algebra.Time
	open bool
	dead bool
	deps []*cand
}

func (in *joinInput) Push(e stream.Elem) { in.push(e) }

// rejects reports whether the join would drop a tuple of this input for
// its values alone: a conjunct over this input's variable is false.
func (in *joinInput) rejects(vals []algebra.Value) bool {
	if in.i >= len(in.j.filters) || len(in.j.filters[in.i]) == 0 {
		return false
	}
	if in.scr == nil {
		in.scr = make(expr.Binding, in.j.k)
	}
	return rejectedBy(in.j.filters[in.i], in.scr, in.i, vals)
}

func (in *joinInput) screens() bool {
	return in.i < len(in.j.filters) && len(in.j.filters[in.i]) > 0
}

func (in *joinInput) Advance(t algebra.Time) {
	if in.advance(t) {
		in.j.advance()
	}
}

func (j *Join) advance() {
	if j.finished || j.st.err != nil {
		return
	}
	w, ok := j.merge.watermark()
	if !ok {
		return
	}
	if j.k == 0 {
		// The single empty binding.
		if !j.started {
			j.started = true
			if j.checks(j.unit) {
				j.newCand(algebra.Beginning, nil)
			}
		}
	}
	if j.started && w <= j.done {
		return
	}
	j.started = true
	// Process buffered elements up to w in time order, Ends first.
	for {
		i, e, ok := j.merge.next()
		if !ok {
			break
		}
		if j.sw != nil {
			j.sweepProcess(j.in[i], e)
		} else {
			j.process(j.in[i], e)
		}
		if j.st.err != nil {
			return
		}
	}
	j.merge.reclaim()
	if j.sw != nil {
		// Every result is emitted as it is decided: the output watermark
		// is the input's (join_sweep.go).
		if w == algebra.Forever {
			j.sweepFinish()
		}
		j.done = w
		if w > j.lastAdv || w == algebra.Forever && !j.finished {
			j.lastAdv, j.finished = w, w == algebra.Forever
			j.out.Advance(w)
		}
		return
	}
	if w == algebra.Forever {
		// The stream is over: what is still open is valid until Forever.
		for _, in := range j.in {
			for in.open.len() > 0 {
				rec, ent, _ := in.open.any()
				in.open.del(rec)
				j.close(in, ent, algebra.Forever)
			}
		}
	}
	j.done = w
	h := algebra.Next(w)
	if w != algebra.Forever {
		j.wakeUp(h)
		j.sweep(h)
	}
	j.release(w, h)
}

func (j *Join) process(in *joinInput, e stream.Elem) {
	switch e.Kind {
	case stream.End:
		ent, _ := in.open.take(e.Rec)
		if ent == nil {
			return
		}
		j.close(in, ent, e.T)
	default:
		vals := e.Rec.Vals
		if fs := j.filters[in.i]; len(fs) > 0 {
			for v := range j.vals {
				j.vals[v] = nil
			}
			j.vals[in.i] = vals
			if !j.checks(fs) {
				return
			}
		}
		var sumKey string
		if in.sum != nil {
			var skip bool
			if sumKey, skip = j.summarize(in, e, vals); skip {
				return
			}
		}
		ent := j.entBlk.one()
		ent.rec, ent.b = e.Rec, e.T
		h := algebra.Next(e.T) // Ends at e.T are done
		switch e.Kind {
		case stream.Event:
			ent.e = algebra.Next(e.T)
		case stream.Whole:
			ent.b, ent.e = e.Rec.From, e.T
			h = e.T // Ends at e.T may still come
		case stream.Late:
			ent.b = e.Rec.From
			fallthrough
		default:
			ent.open = true
			ent.e = algebra.Forever
			in.open.put(e.Rec, ent)
		}
		if in.stored {
			in.entries = append(in.entries, ent)
			in.nLive++
			if in.maxLate != 0 {
				in.minB = min(in.minB, ent.b)
			}
			for i, ix := range in.idx {
				var h uint64
				h, j.keyVals = j.hashCols(vals, ix.cols)
				ix.add(h, ent)
				if i == 0 {
					ent.hash = h
				}
			}
			if ent.open {
				in.nOpen++
			} else {
				in.closedQ = append(in.closedQ, ent)
			}
		}
		if in.sum != nil {
			in.sum.keep(sumKey, ent)
		}
		j.enumerate(in.i, ent, h)
		if !in.stored && ent.open && len(ent.deps) == 0 {
			in.open.del(e.Rec)
		}
		if in.stored && !ent.open && j.purgeable(in.i, ent, e.T) {
			j.kill(in, ent)
		}
	}
}

// close records that an open entry's valid time ends at t and decides what
// that settles.
func (j *Join) close(in *joinInput, ent *entry, t algebra.Time) {
	if in.sum != nil && in.sum.cover && !in.sum.ended(ent) {
		return // a span with members still open (join_semi.go)
	}
	ent.e, ent.open = t, false
	if in.stored && !ent.dead {
		in.nOpen--
		in.closedQ = append(in.closedQ, ent)
	}
	deps := ent.deps
	ent.deps = nil
	for _, c := range deps {
		if c.state != dead {
			j.eval(c, t)
		}
	}
	j.recycleDeps(deps)
	// A tuple that has just ended often cannot meet any later one (with
	// the default clauses, never): drop it now rather than at a sweep.
	// Tuples at this time may still come, so the future begins at t.
	if in.stored && !ent.dead && j.purgeable(in.i, ent, t) {
		j.kill(in, ent)
	}
}
