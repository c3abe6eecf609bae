package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// RunSource plays a time-ordered source into a network of scan plans,
// like RunHistory, then ends every stream (tuples still open are valid
// until forever). window, when not nil, is the observation span: Clock
// ticks exist inside it. Elements of relations no statement reads are
// skipped. It returns the number of elements read.
func (n *Network) RunSource(src stream.Source, window *algebra.Window) (int, error) {
	if len(n.Alphas) > 0 {
		return 0, fmt.Errorf("the plan has α operators: run it acquisitionally")
	}
	tees := []*stream.Tee{n.Heartbeat}
	for _, t := range n.Sources {
		tees = append(tees, t)
	}
	type clk struct {
		step, next algebra.Time
		tee        *stream.Tee
	}
	var clocks []*clk
	if window != nil {
		for c, tee := range n.Clocks {
			step := c * n.ClockPeriod
			if step > 0 {
				clocks = append(clocks, &clk{step: step, next: algebra.FirstTick(step, window.From), tee: tee})
			}
			tees = append(tees, tee)
		}
	}
	advance := func(t algebra.Time) {
		for _, tee := range tees {
			tee.Advance(t)
		}
		n.notePeak()
	}
	// ticks delivers the clock ticks before t (each its own instant) and,
	// at t, the tick after any End at t.
	ticks := func(t algebra.Time, atToo bool) {
		for {
			next := algebra.Forever
			for _, c := range clocks {
				if c.next <= window.To && (c.next < t || atToo && c.next == t) {
					next = min(next, c.next)
				}
			}
			if next == algebra.Forever {
				return
			}
			for _, c := range clocks {
				if c.next == next {
					c.tee.Push(stream.Elem{Kind: stream.Event, T: next, Rec: &stream.Rec{From: next}})
					c.next = algebra.NextTick(c.next, c.step)
				}
			}
			if next < t {
				advance(next)
			}
		}
	}
	// Tuples every reader rejects for their values (and their Ends) are
	// not played.
	skip := map[string]func([]algebra.Value) bool{}
	for name, tee := range n.Sources {
		if f := screen(tee); f != nil {
			skip[name] = f
		}
	}
	count := 0
	have := false
	var cur algebra.Time
	for {
		rel, e, ok, err := src.Next()
		if err != nil {
			return count, err
		}
		if !ok {
			break
		}
		count++
		if have && e.T < cur {
			return count, fmt.Errorf("source is not in time order: %s element at %d after %d", rel, e.T, cur)
		}
		if !have || e.T != cur {
			if have {
				ticks(cur, true)
				advance(cur)
				if err := n.Err(); err != nil {
					return count, err
				}
			}
			if len(clocks) > 0 {
				ticks(e.T, false)
			}
			cur, have = e.T, true
		}
		if tee := n.Sources[rel]; tee != nil {
			if f := skip[rel]; f != nil && e.Rec != nil && f(e.Rec.Vals) {
				if e.Kind != stream.End {
					n.Skipped++
				}
				continue
			}
			tee.Push(e)
		}
	}
	if have {
		ticks(cur, true)
		advance(cur)
	}
	if len(clocks) > 0 {
		ticks(algebra.Next(window.To), false)
	}
	advance(algebra.Forever)
	return count, n.Err()
}
