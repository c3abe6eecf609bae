package scene

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// Loss is a gap in what the display was fed: Count packets of relation
// Rel lost between From and To (a live run's remote.Loss, or a row of a
// recording's Lost relation: its valid time the gap's span).
type Loss struct {
	Rel      string
	From, To algebra.Time
	Count    uint64
}

// Sampling says a relation was seen only at its sampling instants, every
// Period (0: period unknown).
type Sampling struct {
	Rel    string
	Period time.Duration
}

// MaxGaps bounds the gaps an Observation keeps per relation: past it, a
// new gap is merged into the last one kept (its span stretched to the new
// one's end, the counts added), so the count lost stays exact and only
// the timeline's marks grow coarser.
const MaxGaps = 1 << 12

// Observation is how the display's data was observed: per relation the
// gaps where packets were lost, with counts, and the relations that were
// sampled. Both sources of losses feed it the same way — a live run's
// residents as they report (Lose from the run's goroutine) and a
// recording's list of gaps, known before it plays — and what is drawn at
// a time counts only the gaps that began before it (Lost). It is safe for
// concurrent use: the run reports, the screen's goroutine reads.
type Observation struct {
	mu      sync.Mutex
	gaps    map[string][]Loss // per relation, in the order reported
	sampled []Sampling        // by relation name
}

func newObservation() *Observation { return &Observation{gaps: map[string][]Loss{}} }

// Lose adds a gap (a count of 0 is ignored).
func (o *Observation) Lose(l Loss) {
	if l.Count == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.gaps[l.Rel]
	if n := len(g); n >= MaxGaps {
		last := &g[n-1]
		last.From, last.To = min(last.From, l.From), max(last.To, l.To)
		last.Count += l.Count
		return
	}
	o.gaps[l.Rel] = append(g, l)
}

// Sample says a relation was sampled, every period (the shortest period
// given is kept).
func (o *Observation) Sample(rel string, period time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i, found := slices.BinarySearchFunc(o.sampled, rel, func(s Sampling, r string) int { return cmp.Compare(s.Rel, r) })
	if !found {
		o.sampled = slices.Insert(o.sampled, i, Sampling{Rel: rel, Period: period})
		return
	}
	if s := &o.sampled[i]; s.Period == 0 || period > 0 && period < s.Period {
		s.Period = period
	}
}

// Lost counts the packets lost in the gaps that began before now.
func (o *Observation) Lost(now algebra.Time) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n uint64
	for _, g := range o.gaps {
		for _, l := range g {
			if l.From < now {
				n += l.Count
			}
		}
	}
	return n
}

// Gaps lists a relation's gaps, in time order.
func (o *Observation) Gaps(rel string) []Loss {
	o.mu.Lock()
	g := slices.Clone(o.gaps[rel])
	o.mu.Unlock()
	slices.SortStableFunc(g, func(a, b Loss) int { return cmp.Compare(a.From, b.From) })
	return g
}

// Lossy lists the relations with gaps that began before now, by name.
func (o *Observation) Lossy(now algebra.Time) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for rel, g := range o.gaps {
		if slices.ContainsFunc(g, func(l Loss) bool { return l.From < now }) {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// Sampled lists the sampled relations, by name.
func (o *Observation) Sampled() []Sampling {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.sampled)
}
