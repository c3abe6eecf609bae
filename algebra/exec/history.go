package exec

import (
	"fmt"
	"sort"

	"github.com/tqmon/tqmon/algebra"
)

type srcElem struct {
	e   Elem
	tee *Tee
}

// RunHistory plays a recorded history into the network in time order — the
// order live packets arrive in — then ends every stream. Tuples still open
// at the end of the history end at Forever. Clock ticks exist inside the
// history's extent (algebra.History.Extent).
func (n *Network) RunHistory(h *algebra.History) error {
	var elems []srcElem
	for name := range n.Sources {
		if h.Table(name) == nil {
			return fmt.Errorf("history has no relation %s", name)
		}
	}
	// Every relation of the history marks the passing of time, read or not:
	// the system's clock moves on whatever a query looks at. Elements of
	// relations no statement reads only advance time (tee nil).
	for _, rel := range h.Catalog.Relations {
		t := h.Table(rel.Name)
		if t == nil {
			continue
		}
		tee := n.Sources[rel.Name]
		event := t.Rel.IsEvent()
		for i := range t.Rows {
			row := &t.Rows[i]
			rec := &Rec{Vals: row.Vals, From: row.From}
			if event {
				elems = append(elems, srcElem{Elem{Kind: Event, T: row.From, Rec: rec}, tee})
				continue
			}
			elems = append(elems, srcElem{Elem{Kind: Begin, T: row.From, Rec: rec}, tee},
				srcElem{Elem{Kind: End, T: row.To, Rec: rec}, tee})
		}
	}
	sort.SliceStable(elems, func(i, j int) bool { return elemLess(elems[i].e, elems[j].e) })

	// Clock ticks, generated lazily in order.
	type clock struct {
		next, step, end algebra.Time
		tee             *Tee
		done            bool
	}
	var clocks []*clock
	if start, end, ok := h.Extent(); ok {
		for c, tee := range n.Clocks {
			step := c * n.ClockPeriod
			if step <= 0 {
				continue
			}
			first := algebra.FirstTick(step, start)
			clocks = append(clocks, &clock{next: first, step: step, end: end, tee: tee, done: first > end})
		}
	}
	sort.Slice(clocks, func(i, j int) bool { return clocks[i].step < clocks[j].step })

	tees := []*Tee{n.Heartbeat}
	for _, t := range n.Sources {
		tees = append(tees, t)
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

	i := 0
	have := false
	var cur algebra.Time
	for {
		// The next element: a source element or a clock tick (an event, so
		// after Ends at the same time).
		var next *Elem
		var nextTee *Tee
		var nextClock *clock
		if i < len(elems) {
			next, nextTee = &elems[i].e, elems[i].tee
		}
		for _, c := range clocks {
			if c.done {
				continue
			}
			tick := Elem{Kind: Event, T: c.next}
			if next == nil || elemLess(tick, *next) {
				t := tick
				next, nextTee, nextClock = &t, c.tee, c
			}
		}
		if next == nil {
			break
		}
		if have && next.T != cur {
			advance(cur)
			if err := n.Err(); err != nil {
				return err
			}
		}
		cur, have = next.T, true
		if nextTee == nil {
			i++
			continue
		}
		if nextClock != nil {
			nextTee.Push(Elem{Kind: Event, T: next.T, Rec: &Rec{From: next.T}})
			if uint64(nextClock.end)-uint64(nextClock.next) < uint64(nextClock.step) {
				nextClock.done = true
			} else {
				nextClock.next += nextClock.step
			}
			continue
		}
		nextTee.Push(*next)
		i++
	}
	advance(algebra.Forever)
	return n.Err()
}
