package db

import (
	"fmt"
	"runtime/debug"

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

// chunker is a relation's state when it is read by Chunk: the tuples
// begun, in the order the reader delivered their Begins and Events (their
// starts'), from the first not yet handed over.
//
// Invariant: pend[i] is the tuple of sequence number base+i; at[rec] is
// the sequence number of the tuple whose Begin carried rec, for exactly
// the pending tuples still unended (an End deletes its entry as it sets
// the end). A tuple is handed over when every tuple before it has been
// (start order) and its own end is known — read, or the relation's end
// reached, where a tuple still unended is open (Forever), as Next leaves
// it (a Begin without an End).
type chunker struct {
	done bool
	pend []algebra.Tuple
	head int // pend[:head] were handed over
	base int
	at   map[*stream.Rec]int
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
// over only once its End is read; Chunk holds the tuples begun since the
// earliest one still open (a relation whose tuples all end soon holds a
// few; one with a tuple open from its first element to its last holds
// every tuple, as a loaded history would).
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
		c.at = map[*stream.Rec]int{}
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
			clear(c.pend[k:])
			c.pend = c.pend[:k]
			c.base += c.head
			c.head = 0
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
		case stream.End:
			i, ok := c.at[e.Rec]
			if !ok {
				s.err = fmt.Errorf("database %s: %s: %w: an end at %s of a tuple not begun", s.dir, r.m.rel.Name, ErrCorrupt, spanTime(e.T))
				return buf, s.err
			}
			delete(c.at, e.Rec)
			c.pend[i-c.base].To = e.T
		default:
			c.pend = append(c.pend, algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Next(e.T)})
		}
	}
	return buf, nil
}
