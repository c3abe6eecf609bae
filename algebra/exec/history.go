package exec

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// sourceSeq is one time-ordered sequence of source elements: the begins (or
// events) of a relation, its ends, or the ticks of a clock.
type sourceSeq struct {
	tee   *stream.Tee
	elems []stream.Elem
	pos   int
	// clock ticks, generated lazily instead of elems
	clock          bool
	next, step, to algebra.Time
	// rows, when set, are a relation's rows in order of start, played
	// as Events or Begins (kind) made as they go instead of elems: no
	// element list. Their records are rowRecs (an interval's, which its
	// End carries too) or, for events, made in blocks (recs) the run can
	// free as it goes.
	rows    []algebra.Tuple
	kind    stream.Kind
	rowRecs []stream.Rec
	recs    slab[stream.Rec]
}

func (s *sourceSeq) head() (stream.Elem, bool) {
	if s.clock {
		if s.pos > 0 {
			return stream.Elem{}, false
		}
		return stream.Elem{Kind: stream.Event, T: s.next}, true
	}
	if s.rows != nil {
		if s.pos < len(s.rows) {
			return stream.Elem{Kind: s.kind, T: s.rows[s.pos].From}, true
		}
		return stream.Elem{}, false
	}
	if s.pos < len(s.elems) {
		return s.elems[s.pos], true
	}
	return stream.Elem{}, false
}

func (s *sourceSeq) pop() stream.Elem {
	if s.clock {
		e := stream.Elem{Kind: stream.Event, T: s.next, Rec: &stream.Rec{From: s.next}}
		if uint64(s.to)-uint64(s.next) < uint64(s.step) {
			s.pos = 1 // done
		} else {
			s.next += s.step
		}
		return e
	}
	if s.rows != nil {
		row := &s.rows[s.pos]
		var rec *stream.Rec
		if s.rowRecs != nil {
			rec = &s.rowRecs[s.pos]
		} else {
			rec = newRec(&s.recs, row.Vals, row.From)
		}
		s.pos++
		return stream.Elem{Kind: s.kind, T: row.From, Rec: rec}
	}
	e := s.elems[s.pos]
	s.elems[s.pos] = stream.Elem{}
	s.pos++
	return e
}

func byTime(a, b stream.Elem) int { return cmp.Compare(a.T, b.T) }

// RunHistory plays a recorded history into the network in time order — the
// order live packets arrive in — then ends every stream. Tuples still open
// at the end of the history end at Forever. Clock ticks exist inside the
// history's extent (algebra.History.Extent). Statements the columnar path
// takes (columnar.go) are evaluated first, over the history's columns; a
// relation only they read is not played (its tuples no columnar statement
// selected count as Skipped).
func (n *Network) RunHistory(h *algebra.History) error {
	if len(n.Alphas) > 0 {
		return fmt.Errorf("the plan has α operators: run it acquisitionally")
	}
	var streams []*sourceSeq
	quiet := n.columnar(h)
	names := make([]string, 0, len(n.Sources))
	for name := range n.Sources {
		names = append(names, name)
	}
	sort.Strings(names)
	var scratch []stream.Elem // sortByTime's
	for _, name := range names {
		tee := n.Sources[name]
		t := h.Table(name)
		if t == nil {
			return fmt.Errorf("history has no relation %s", name)
		}
		if skipped, ok := quiet[tee]; ok {
			n.Skipped += skipped // every reader ran columnar
			continue
		}
		event := t.Rel.IsEvent()
		// Tuples every reader rejects for their values are not played:
		// keep lists the others (nil: every row). Not with gaps: a tuple
		// not played is an instant the network does not see pass, and a
		// Cut resumes tuples after a gap only once time is seen past it
		// (RunSource, which reads every tuple, still advances at a
		// skipped one's time).
		var keep []int
		var packed [][]algebra.Value
		kept := len(t.Rows)
		if skip := screen(tee); skip != nil && n.opts.Gaps == nil {
			keep, packed = screenRows(t, skip)
			kept = len(keep)
			n.Skipped += len(t.Rows) - kept
		}
		// Every row, in order of start (as recorded): Events and Begins
		// are made as they are played.
		inOrder := keep == nil && slices.IsSortedFunc(t.Rows, func(a, b algebra.Tuple) int { return cmp.Compare(a.From, b.From) })
		if event && inOrder {
			streams = append(streams, &sourceSeq{tee: tee, rows: t.Rows, kind: stream.Event})
			continue
		}
		var begins []stream.Elem
		if !inOrder {
			begins = make([]stream.Elem, kept)
		}
		var ends []stream.Elem
		if !event {
			ends = make([]stream.Elem, 0, kept)
		}
		recs := make([]stream.Rec, kept) // one allocation per relation
		for k := range kept {
			row := &t.Rows[k]
			if keep != nil {
				row = &t.Rows[keep[k]]
			}
			rec := &recs[k]
			*rec = stream.Rec{Vals: row.Vals, From: row.From}
			if packed != nil {
				rec.Vals = packedRow(packed, k)
			}
			if event {
				begins[k] = stream.Elem{Kind: stream.Event, T: row.From, Rec: rec}
				continue
			}
			if begins != nil {
				begins[k] = stream.Elem{Kind: stream.Begin, T: row.From, Rec: rec}
			}
			if row.To != algebra.Forever { // open at the end: ends with the stream
				ends = append(ends, stream.Elem{Kind: stream.End, T: row.To, Rec: rec})
			}
		}
		// Recorded histories are usually in time order already.
		if !slices.IsSortedFunc(begins, byTime) {
			scratch = sortByTime(begins, scratch)
		}
		if !slices.IsSortedFunc(ends, byTime) {
			scratch = sortByTime(ends, scratch)
		}
		if begins != nil {
			streams = append(streams, &sourceSeq{tee: tee, elems: begins})
		} else if kept > 0 {
			streams = append(streams, &sourceSeq{tee: tee, rows: t.Rows, kind: stream.Begin, rowRecs: recs})
		}
		if !event {
			streams = append(streams, &sourceSeq{tee: tee, elems: ends})
		}
	}
	if len(n.Clocks) == 0 {
		// No clock: the extent (a pass over every row) is not needed.
	} else if start, end, ok := h.Extent(); ok {
		clocks := make([]int64, 0, len(n.Clocks))
		for c := range n.Clocks {
			clocks = append(clocks, c)
		}
		slices.Sort(clocks)
		for _, c := range clocks {
			step := c * n.ClockPeriod
			if step <= 0 {
				continue
			}
			first := algebra.FirstTick(step, start)
			s := &sourceSeq{tee: n.Clocks[c], clock: true, next: first, step: step, to: end}
			if first > end {
				s.pos = 1
			}
			streams = append(streams, s)
		}
	}

	tees := []*stream.Tee{n.Heartbeat}
	for _, name := range names {
		tees = append(tees, n.Sources[name])
	}
	for _, t := range n.Clocks {
		tees = append(tees, t)
	}
	advance := func(t algebra.Time) {
		for _, tee := range tees {
			tee.Advance(t)
		}
		n.notePeak()
	}

	have := false
	var cur algebra.Time
	for {
		// The next element over all streams: least time, Ends first.
		var best *sourceSeq
		var bestE stream.Elem
		for _, s := range streams {
			e, ok := s.head()
			if ok && (best == nil || stream.Less(e, bestE)) {
				best, bestE = s, e
			}
		}
		if best == nil {
			break
		}
		if have && bestE.T != cur {
			advance(cur)
			if err := n.Err(); err != nil {
				return err
			}
		}
		cur, have = bestE.T, true
		best.tee.Push(best.pop())
	}
	advance(algebra.Forever)
	return n.Err()
}
