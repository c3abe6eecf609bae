package remote

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/resident/wire"
)

// ErrIncomplete marks a live run whose answer may be incomplete: a
// resident lost packets, or a session was lost (lease expiry, a broken
// stream) before the run ended. RunLive returns it (wrapped) for a lost
// session; LiveStats.Incomplete says whether packets were lost.
var ErrIncomplete = errors.New("the answer may be incomplete")

// SessionLostError is a resident session lost before the run ended: what
// the resident saw after Since was not observed.
type SessionLostError struct {
	Resident string
	Since    algebra.Time
	Err      error
	// Format prints Since (LiveOptions.TimeFormat).
	Format algebra.TimeFormat
}

func (e *SessionLostError) Error() string {
	return fmt.Sprintf("resident %s: session lost (%v): nothing observed after %s", e.Resident, e.Err, algebra.FormatTime(e.Since, e.Format))
}

func (e *SessionLostError) Unwrap() []error { return []error{e.Err, ErrIncomplete} }

// Observation is what a live run watched of one primitive relation: from
// From (the time the residents had carried out every command the run's
// plans needed: entity relations, primed with the entities alive then,
// and sensors alike; with several residents, each resident's part is
// watched from its own time, and From is the earliest) to To (the last
// time the residents' merged streams reached), with the gaps where
// packets were lost. A sampled relation is seen only at its sampling
// instants, every Period.
type Observation struct {
	Rel      string
	From, To algebra.Time
	// Period is a sampled relation's sampling period (0: traced, or an
	// entity relation).
	Period time.Duration
	// Gaps are where packets were lost, in time order.
	Gaps []Gap
}

// Lost counts the packets lost in every gap.
func (o *Observation) Lost() uint64 {
	var n uint64
	for _, g := range o.Gaps {
		n += g.Lost
	}
	return n
}

// Gap is a loss: Lost packets of a relation, stamped between the
// watermarks that bracket the batch that reported them (From, To].
type Gap struct {
	From, To algebra.Time
	Lost     uint64
}

// Loss is a loss as a live run reports it (LiveOptions.OnLoss).
type Loss struct {
	Rel string
	Gap
}

// PrintLosses returns an OnLoss that prints each loss on w as it happens
// ("tqmon: lost N SendMessage packets between T1 and T2"), times in f.
func PrintLosses(w io.Writer, f algebra.TimeFormat) func(Loss) {
	return func(l Loss) { fmt.Fprintf(w, "tqmon: %s\n", l.Format(f)) }
}

// Format says it bpftrace's way: "lost N SendMessage packets between T1
// and T2", times in format f.
func (l Loss) Format(f algebra.TimeFormat) string {
	return fmt.Sprintf("lost %d %s packets between %s and %s", l.Lost, l.Rel, algebra.FormatTime(l.From, f), algebra.FormatTime(l.To, f))
}

// Incomplete reports whether any answer of the run may be incomplete:
// packets were lost, or a session was (Lost).
func (st *LiveStats) Incomplete() bool {
	if st.SessionLost != nil {
		return true
	}
	for _, o := range st.Observed {
		if o.Lost() > 0 {
			return true
		}
	}
	return false
}

// IncompleteError is a run that lost packets: Lost of each relation.
type IncompleteError struct {
	Lost map[string]uint64
}

func (e *IncompleteError) Error() string {
	names := make([]string, 0, len(e.Lost))
	var total uint64
	for n, k := range e.Lost {
		names = append(names, fmt.Sprintf("%s %d", n, k))
		total += k
	}
	sort.Strings(names)
	return fmt.Sprintf("%d packets lost (%s): %v", total, strings.Join(names, ", "), ErrIncomplete)
}

func (e *IncompleteError) Unwrap() error { return ErrIncomplete }

// Err says why the run's answers may be incomplete (an error that is
// ErrIncomplete), or nil: the session lost, or else the packets lost.
func (st *LiveStats) Err() error {
	if st.SessionLost != nil {
		return st.SessionLost
	}
	lost := map[string]uint64{}
	for _, o := range st.Observed {
		if n := o.Lost(); n > 0 {
			lost[o.Rel] += n
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return &IncompleteError{Lost: lost}
}

// LostPackets counts the packets lost, every relation.
func (st *LiveStats) LostPackets() uint64 {
	var n uint64
	for _, o := range st.Observed {
		n += o.Lost()
	}
	return n
}

// losses follows one resident's cumulative drop counts: each rise after
// the run's commands took effect is a loss between the watermark before
// and the batch's own. Rises in a row are reported as one loss, at most
// every flushEvery of real time, or when a batch brings none.
type losses struct {
	base    map[uint16]uint64 // drops counted before the run's commands took effect
	last    map[uint16]uint64
	pending map[uint16]*Gap
	since   map[uint16]time.Time
}

const flushEvery = time.Second

func newLosses() losses {
	return losses{base: map[uint16]uint64{}, last: map[uint16]uint64{}, pending: map[uint16]*Gap{}, since: map[uint16]time.Time{}}
}

// sensorGap is a loss of one sensor, to report.
type sensorGap struct {
	sensor uint16
	gap    Gap
}

// counts takes a batch's counts: before marks a batch made before the
// run's commands took effect (its drops are not the run's); prev and w
// are the watermarks before and of the batch. It returns the losses to
// report now.
func (l *losses) counts(cs []wire.Count, before bool, prev, w algebra.Time) []sensorGap {
	rose := map[uint16]bool{}
	for _, c := range cs {
		if before {
			l.base[c.Sensor], l.last[c.Sensor] = c.Drops, c.Drops
			continue
		}
		last, ok := l.last[c.Sensor]
		if !ok {
			last = l.base[c.Sensor]
		}
		l.last[c.Sensor] = max(last, c.Drops)
		if c.Drops <= last {
			continue
		}
		rose[c.Sensor] = true
		g := l.pending[c.Sensor]
		if g == nil {
			g = &Gap{From: prev}
			l.pending[c.Sensor] = g
			l.since[c.Sensor] = time.Now()
		}
		g.To, g.Lost = w, g.Lost+(c.Drops-last)
	}
	return l.flush(func(s uint16) bool { return !rose[s] || time.Since(l.since[s]) >= flushEvery })
}

// rest returns the losses not reported yet.
func (l *losses) rest() []sensorGap { return l.flush(func(uint16) bool { return true }) }

// flush takes the pending losses of the sensors due, in sensor order.
func (l *losses) flush(due func(uint16) bool) []sensorGap {
	var out []sensorGap
	for s, g := range l.pending {
		if due(s) {
			out = append(out, sensorGap{s, *g})
			delete(l.pending, s)
		}
	}
	slices.SortFunc(out, func(a, b sensorGap) int { return cmp.Compare(a.sensor, b.sensor) })
	return out
}

// clip restricts an input to what was watched, from st.from (f) on:
// nothing of a relation before f is known. The rule (Restrict applies it
// to a history): a tuple is kept when it ends after f, beginning no
// earlier than f; an event [t, t+1) is so kept when t ≥ f. So an event,
// a sample or a whole interval before f is dropped; a tuple that began
// before f (an entity relation's tuples alive when the session opened,
// an interval whose end alone is seen) begins at f, and is dropped whole
// when it ends by f. It reports whether the input is kept.
func (st *connState) clip(it *Input) bool {
	f := st.from
	ends := it.Entity && !it.Begin || it.Kind == stream.PacketEnd || it.Kind == stream.PacketSampleEnd
	begins := it.Entity && it.Begin || it.Kind == stream.PacketBegin
	switch {
	case ends && it.T <= f:
		if st.early[it.Key] {
			delete(st.early, it.Key)
			st.void[it.Key] = true // its begin, held at f, goes too
		}
		return false
	case begins && it.T < f:
		st.early[it.Key] = true
		it.T = f
		return true
	case it.Kind == stream.PacketWhole && it.T <= f, it.T < f:
		return false
	}
	if !begins && it.From < f {
		it.From = f
	}
	if ends {
		delete(st.early, it.Key)
	}
	return true
}

// Restrict returns h as a live run that watched it from from on knows it
// (the rule RunLive applies to what residents report): the tuples that
// end after from, each beginning no earlier than from — so the events at
// or after from — and a window from from to h's end. A live answer is
// the complete-history answer over the restricted history.
func Restrict(h *algebra.History, from algebra.Time) *algebra.History {
	out := algebra.NewHistory(h.Catalog)
	for name, t := range h.Tables {
		rt := out.Table(name)
		if rt == nil {
			continue
		}
		for _, row := range t.Rows {
			if row.To > from {
				rt.Add(row.Vals, max(row.From, from), row.To)
			}
		}
	}
	if _, end, ok := h.Extent(); ok {
		out.Window = &algebra.Window{From: from, To: max(end, from)}
	}
	return out
}
