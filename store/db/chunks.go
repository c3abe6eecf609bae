package db

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// chunkRows is how many tuples Chunk hands over at most (as
// store/history's: a consumer's cost per chunk is paid per thousands of
// tuples).
const chunkRows = 4096

// unended marks a pending tuple whose End has not been read yet: no
// tuple ends at Beginning (an interval is never empty).
const unended = algebra.Beginning

// resolveAt is how many tuples Chunk holds before it looks up the ends of
// those still unended in the ends index (resolve).
const resolveAt = 4 * chunkRows

// chunker is a relation's state when it is read by Chunk: the tuples
// begun, in the order the reader delivered their Begins and Events (their
// starts'), from the first not yet handed over.
//
// Invariant: pend[i] is the tuple of sequence number base+i (ids[i] its
// id); at[rec] is the sequence number of the tuple whose Begin carried
// rec, for exactly the pending tuples still unended (an End deletes its
// entry as it sets the end); early[rec] is the end the ends index gave a
// tuple whose End has not been read yet (Forever: none recorded), so that
// its End, when read, is checked against it. A tuple is handed over when
// every tuple before it has been (start order) and its own end is known —
// read, looked up, or the relation's end reached, where a tuple still
// unended is open (Forever), as Next leaves it (a Begin without an End).
type chunker struct {
	done  bool
	pend  []algebra.Tuple
	ids   []uint64
	head  int // pend[:head] were handed over
	base  int
	at    map[*stream.Rec]int
	early map[*stream.Rec]int64
	// resolveAt, if not 0, replaces the constant (tests).
	resolveAt int
}

// Chunk appends to buf the next tuples of relation rel — values, start
// and end (Forever for one still open) — in order of their starts, and
// returns it: the relation read whole (or through its window: exactly the
// tuples Next delivers, with their whole valid times), a chunk at a time,
// instead of as Begin, End and Event elements (exec.Network.RunChunks
// reads it so). It returns buf unchanged at the end of the relation. It
// reads only rel, and a source is read either by Chunk or by Next, not
// both: Chunk fails once Next has begun. It appends at most chunkRows
// tuples.
//
// Bound: the elements are stored as Begins and Ends, so a tuple is handed
// over once its End is read; Chunk holds the tuples begun since the
// earliest one still unended, and when they reach resolveAt it looks up
// the ends of the unended ones in the ends index (every End is filed there
// in the commit that stores it, so one not found was never recorded: the
// tuple is open), which lets every tuple held go. So it holds fewer than
// resolveAt+chunkRows tuples, plus the ends looked up whose Ends are still
// to be read.
func (s *Source) Chunk(rel string, buf []algebra.Tuple) (out []algebra.Tuple, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			s.err = faulted(s.dir, r)
			out, err = buf, s.err
		}
	}()
	if s.err != nil {
		return buf, s.err
	}
	if s.cur >= 0 {
		return buf, fmt.Errorf("database %s: relation %s is read by Next", s.dir, rel)
	}
	var r *relReader
	for _, x := range s.rels {
		if x.m.rel.Name == rel {
			r = x
		}
	}
	if r == nil {
		return buf, fmt.Errorf("database %s: relation %s not opened", s.dir, rel)
	}
	s.chunked = true
	c := &r.chunk
	if c.at == nil {
		c.at, c.early = map[*stream.Rec]int{}, map[*stream.Rec]int64{}
	}
	for n := 0; n < chunkRows; {
		if c.head < len(c.pend) && (c.done || c.pend[c.head].To != unended) {
			tu := c.pend[c.head]
			if tu.To == unended {
				tu.To = algebra.Forever
			}
			c.pend[c.head] = algebra.Tuple{} // (its values are the consumer's now)
			c.head++
			buf = append(buf, tu)
			n++
			continue
		}
		if c.done {
			break
		}
		// Forget what was handed over once it is most of what is held.
		if c.head > 1024 && 2*c.head > len(c.pend) {
			k := copy(c.pend, c.pend[c.head:])
			copy(c.ids, c.ids[c.head:])
			clear(c.pend[k:])
			c.pend, c.ids = c.pend[:k], c.ids[:k]
			c.base += c.head
			c.head = 0
		}
		if len(c.pend)-c.head >= cmp.Or(c.resolveAt, resolveAt) && c.pend[c.head].To == unended {
			if err = c.resolve(r); err != nil {
				s.err = fmt.Errorf("database %s: %s: %w", s.dir, r.m.rel.Name, err)
				return buf, s.err
			}
			continue
		}
		if err = r.step(); err != nil {
			s.err = fmt.Errorf("database %s: %s: %w", s.dir, r.m.rel.Name, err)
			return buf, s.err
		}
		if !r.ok {
			c.done = true
			continue
		}
		s.stats.Elements++
		e := &r.head
		switch e.Kind {
		case stream.Begin:
			c.at[e.Rec] = c.base + len(c.pend)
			c.pend = append(c.pend, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: unended})
			c.ids = append(c.ids, r.headID)
		case stream.End:
			if to, ok := c.early[e.Rec]; ok {
				if to != e.T {
					s.err = fmt.Errorf("database %s: %s: %w: a tuple from %s ends at %s, its end in the ends index %s",
						s.dir, r.m.rel.Name, ErrCorrupt, spanTime(e.Rec.From), spanTime(e.T), spanTime(to))
					return buf, s.err
				}
				delete(c.early, e.Rec)
				continue
			}
			i, ok := c.at[e.Rec]
			if !ok {
				s.err = fmt.Errorf("database %s: %s: %w: an end at %s of a tuple not begun", s.dir, r.m.rel.Name, ErrCorrupt, spanTime(e.T))
				return buf, s.err
			}
			delete(c.at, e.Rec)
			c.pend[i-c.base].To = e.T
		default:
			c.pend = append(c.pend, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Next(e.T)})
			c.ids = append(c.ids, 0)
		}
	}
	return buf, nil
}

// resolve sets the ends of the held tuples still unended from the ends
// index, Forever for those it has none for (never ended, as far as the
// database's snapshot goes); their Ends, read later, are checked against
// them (early).
func (c *chunker) resolve(r *relReader) error {
	type open struct {
		id  uint64
		seq int
	}
	opens := make([]open, 0, len(c.at))
	for _, seq := range c.at {
		opens = append(opens, open{c.ids[seq-c.base], seq})
	}
	slices.SortFunc(opens, func(a, b open) int { return cmp.Compare(a.id, b.id) })
	ids := make([]uint64, len(opens))
	for i, o := range opens {
		ids[i] = o.id
	}
	err := r.endsOf(ids, func(id uint64, to int64) error {
		k, _ := slices.BinarySearchFunc(opens, id, func(o open, id uint64) int { return cmp.Compare(o.id, id) })
		tu := &c.pend[opens[k].seq-c.base]
		if to <= tu.From {
			return fmt.Errorf("%w: tuple %d from %s ends at %s", ErrCorrupt, id, spanTime(tu.From), spanTime(to))
		}
		tu.To = to
		return nil
	})
	if err != nil {
		return err
	}
	for rec, seq := range c.at {
		tu := &c.pend[seq-c.base]
		if tu.To == unended {
			tu.To = algebra.Forever
		}
		c.early[rec] = tu.To
	}
	clear(c.at)
	return nil
}
