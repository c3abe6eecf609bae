// Package truth records the complete ground truth of a live subject —
// every tuple of every relation, whatever is enabled — as a history that
// store/history can write and tqmon query can read.
package truth

import (
	"math"
	"slices"
	"sync"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident"
)

// Recorder records the complete ground truth of a subject — every tuple of
// every relation, whatever is enabled — as a history. It is a
// resident.TruthSink; the resident calls it from many goroutines.
type Recorder struct {
	mu       sync.Mutex
	h        *algebra.History
	rels     []*algebra.Relation // by SensorID
	open     map[uint64]openTuple
	monoBase int64
	wallBase int64
}

type openTuple struct {
	rel  *algebra.Relation
	vals []algebra.Value
	from algebra.Time
}

// NewTruth makes a recorder for a subject whose relations, in SensorID
// order, are those of cat (as generated sensor code numbers them) and
// whose clock maps to the global one as hello says.
func New(cat *algebra.Catalog, monoBase, wallBase int64) *Recorder {
	return &Recorder{h: algebra.NewHistory(cat), rels: cat.Relations, open: map[uint64]openTuple{},
		monoBase: monoBase, wallBase: wallBase}
}

// SetClock sets the mapping from the resident's clock to the global one
// (from its Hello), when it is known only after the recorder is made.
func (t *Recorder) SetClock(monoBase, wallBase int64) {
	t.mu.Lock()
	t.monoBase, t.wallBase = monoBase, wallBase
	t.mu.Unlock()
}

func (t *Recorder) global(mono int64) algebra.Time { return t.wallBase + (mono - t.monoBase) }

// Value converts a resident value of an attribute to an algebra value.
func Value(v resident.Value, a algebra.Attr) algebra.Value {
	switch a.Type.Kind {
	case algebra.KindEntity:
		if v.E == nil {
			return algebra.Entity("")
		}
		return algebra.Entity(v.E.ID())
	case algebra.KindEnum:
		i := int(v.N)
		if i < len(a.Type.Enum.Members) {
			return algebra.Enum(a.Type.Enum.Members[i], i)
		}
		return algebra.Enum("?", i)
	case algebra.KindInt:
		return algebra.Int(int64(v.N))
	case algebra.KindFloat:
		return algebra.Float(math.Float64frombits(v.N))
	case algebra.KindString:
		return algebra.Str(v.S)
	case algebra.KindBool:
		return algebra.Bool(v.N != 0)
	case algebra.KindTime:
		return algebra.TimeVal(int64(v.N))
	case algebra.KindDuration:
		return algebra.DurationVal(int64(v.N))
	}
	return algebra.Value{}
}

func (t *Recorder) vals(rel *algebra.Relation, vs []resident.Value) []algebra.Value {
	out := make([]algebra.Value, len(rel.Attrs))
	for i := range rel.Attrs {
		if i < len(vs) {
			out[i] = Value(vs[i], rel.Attrs[i])
		}
	}
	return out
}

// Event records an event tuple.
func (t *Recorder) Event(s resident.SensorID, vs []resident.Value, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rel := t.rels[s]
	t.h.Table(rel.Name).AddEvent(t.vals(rel, vs), t.global(at))
}

// Begin records the beginning of an interval tuple.
func (t *Recorder) Begin(s resident.SensorID, tuple uint64, vs []resident.Value, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rel := t.rels[s]
	t.open[tuple] = openTuple{rel: rel, vals: t.vals(rel, vs), from: t.global(at)}
}

// End records the end of an interval tuple. A tuple whose valid time would
// be empty (it began and ended at one instant) is not recorded.
func (t *Recorder) End(s resident.SensorID, tuple uint64, at int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.open[tuple]
	if !ok {
		return
	}
	delete(t.open, tuple)
	if to := t.global(at); to > o.from {
		t.h.Table(o.rel.Name).Add(o.vals, o.from, to)
	}
}

// History returns what was recorded so far; tuples still open are valid
// until forever. The observation window runs from the resident's start
// (its WallBase) to end (a monotonic time, usually when the subject
// stopped).
//
// A sampled relation is known only at its sampling instants: its truth
// holds the tuples valid at some tick of the base clock inside the window
// (with their exact begin and end), which is everything a monitor sampling
// at every tick sees. A tuple that begins and ends between two ticks is no
// part of any observable history.
func (t *Recorder) History(end int64) *algebra.History {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := algebra.NewHistory(t.h.Catalog)
	h.Window = &algebra.Window{From: t.wallBase, To: t.global(end)}
	for name, tab := range t.h.Tables {
		h.Tables[name].Rows = append(h.Tables[name].Rows, tab.Rows...)
	}
	for _, o := range t.open {
		h.Table(o.rel.Name).Add(o.vals, o.from, algebra.Forever)
	}
	for _, tab := range h.Tables {
		if tab.Rel.Strategy.Kind == algebra.Sampled {
			tab.Rows = slices.DeleteFunc(tab.Rows, func(row algebra.Tuple) bool {
				return !sampled(row, h.Window, h.Catalog.ClockPeriod)
			})
		}
		tab.SortRows()
	}
	return h
}

// sampled reports whether a tick of the base clock (every multiple of
// period inside w) falls in row's valid time.
func sampled(row algebra.Tuple, w *algebra.Window, period algebra.Time) bool {
	if period <= 0 {
		return true
	}
	from, last := max(row.From, w.From), min(row.To-1, w.To)
	return from <= last && algebra.FirstTick(period, from) <= last
}
