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
	"github.com/tqmon/tqmon/algebra/exec"
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
	// Hosts, in a fleet (algebra.Catalog.Fleet), are the hosts that
	// declare the relation, each watched from its own start to the
	// observation's end — or to where its session was lost (Lost set):
	// its part after that is unobserved, the other hosts' goes on.
	Hosts []HostSpan
	// Undeclared, in a fleet, are the hosts that do not declare the
	// relation: its part there is not observed at all (not empty).
	Undeclared []string
}

// HostSpan is the span over which one host's part of a relation was
// watched.
type HostSpan struct {
	Host     string
	From, To algebra.Time
	Lost     bool // To is where the host's session was lost
}

// Lost counts the packets lost in every gap.
func (o *Observation) Lost() uint64 {
	var n uint64
	for _, g := range o.Gaps {
		n += g.Lost
	}
	return n
}

// Gap is a loss: Lost packets of a relation, stamped in [From, To) — after
// the watermark before the batches that reported them (From is one past
// it), up to their own watermark (To is one past it). Half-open like every
// valid time: it is the valid time of the relation's Lost tuple, and the
// span answers reading the relation are cut out of (see Cut).
type Gap struct {
	From, To algebra.Time
	Lost     uint64
	// Host, in a fleet, is the host whose packets were lost: the gap is
	// that host's part of the relation only (the rule at gaps cuts its
	// tuples, not the other hosts').
	Host string
}

// gapAfter is the gap of packets stamped after watermark prev up to
// watermark w.
func gapAfter(prev, w algebra.Time) Gap {
	return Gap{From: min(algebra.Next(prev), algebra.Forever), To: min(algebra.Next(w), algebra.Forever)}
}

// observer makes a live run's observation queryable: it feeds the network
// (and the Tap) the built-in relations Observed and Lost, as inputs like
// an entity relation's — a tuple begins and ends — and keeps the gaps of
// each relation, which answers reading it are cut out of
// (exec.Options.Gaps). Its tuples are inputs of their own (keys above
// every resident's), delivered in time order with the residents' through
// deliver: an Observed tuple begins at the observation's start and ends at
// its end; a Lost tuple is queued when its loss is reported, which is
// before the run delivers anything it covers (losses.holds).
type observer struct {
	queue []Input
	next  uint64
	// fleet: Observed and Lost tuples carry their host (a last value), and
	// the input rule at gaps is each host's (algebra.Catalog.MarkFleet).
	fleet bool
	// open are the Observed tuples begun, by relation and host (resident
	// index; -1 for all, outside a fleet).
	open map[gapKey]Input
	// gaps are each relation's gaps, every host's (what answers reading
	// it are cut out of: exec.Options.Gaps).
	gaps map[string][]algebra.Span
	// The input rule at gaps (admit): the gaps it applies, by relation
	// and host (one resident's tuples meet its own host's gaps only; -1:
	// every resident's, outside a fleet); tuples delivered and not ended,
	// by key; tuples cut or dropped, whose later packets are dropped; the
	// gaps whose start has been handled (cut).
	rule   map[gapKey][]algebra.Span
	tuples map[uint64]Input
	void   map[uint64]bool
	cut    map[gapKey]int
	// byFrom indexes each part's gaps by start (inGap, meets: a search,
	// not a scan of every gap for every input — a long run that loses
	// often has thousands, and scanning them slowed the consumer as it
	// lost, so it lost more); nextEnd is the earliest start of a gap
	// not handled yet (ends: nothing to do before it, no map to range).
	byFrom  map[gapKey]*gapIndex
	nextEnd algebra.Time
}

// gapIndex is one part's gaps sorted by start, with the greatest end of
// each prefix: t is inside one of them iff, of those starting at or
// before t, the greatest end is after t.
type gapIndex struct {
	spans []algebra.Span
	maxTo []algebra.Time
}

// add inserts g (mostly at the end: losses are reported in time order).
func (x *gapIndex) add(g algebra.Span) {
	i := len(x.spans)
	for i > 0 && x.spans[i-1].From > g.From {
		i--
	}
	x.spans = slices.Insert(x.spans, i, g)
	x.maxTo = append(x.maxTo, 0)
	for j := i; j < len(x.spans); j++ {
		x.maxTo[j] = x.spans[j].To
		if j > 0 {
			x.maxTo[j] = max(x.maxTo[j], x.maxTo[j-1])
		}
	}
}

// starting returns how many gaps start at or before t.
func (x *gapIndex) starting(t algebra.Time) int {
	i, _ := slices.BinarySearchFunc(x.spans, t, func(g algebra.Span, t algebra.Time) int {
		if g.From <= t {
			return -1
		}
		return 1
	})
	return i
}

// in reports whether t is inside a gap.
func (x *gapIndex) in(t algebra.Time) bool {
	i := x.starting(t)
	return i > 0 && x.maxTo[i-1] > t
}

// meets reports whether a gap begins inside (from, to).
func (x *gapIndex) meets(from, to algebra.Time) bool {
	i := x.starting(from)
	return i < len(x.spans) && x.spans[i].From < to
}

// gapKey names a relation's part the rule at gaps applies to: one
// resident's (idx), or every resident's (idx -1, outside a fleet).
type gapKey struct {
	rel string
	idx int
}

// ruleKey is the part of rel an input of the resident whose key is key
// belongs to.
func (o *observer) ruleKey(rel string, key uint64) gapKey {
	if !o.fleet {
		return gapKey{rel, -1}
	}
	return gapKey{rel, int(key >> 56)}
}

// obsKeys are the observer's tuple keys: above every resident's
// (resident index << 56).
const obsKeys = uint64(0xff) << 56

func newObserver(fleet bool) *observer {
	return &observer{fleet: fleet, open: map[gapKey]Input{}, gaps: map[string][]algebra.Span{}, rule: map[gapKey][]algebra.Span{},
		tuples: map[uint64]Input{}, void: map[uint64]bool{}, cut: map[gapKey]int{}, byFrom: map[gapKey]*gapIndex{}, nextEnd: algebra.Forever}
}

func (o *observer) key() uint64 {
	o.next++
	return obsKeys | o.next
}

// watch begins an Observed tuple of rel at from: outside a fleet, one
// for every resident (host "", idx -1); in a fleet, host's part (the
// resident idx), from that host's own start.
func (o *observer) watch(rel string, period time.Duration, from algebra.Time, host string, idx int) {
	k := gapKey{rel, idx}
	if _, ok := o.open[k]; ok {
		return
	}
	vals := []algebra.Value{algebra.Str(rel), algebra.DurationVal(int64(period))}
	if o.fleet {
		vals = append(vals, algebra.Str(host))
	}
	in := Input{T: from, Rel: algebra.ObservedName, Entity: true, Begin: true, Key: o.key(), phase: 1, Vals: vals}
	o.open[k] = in
	o.queue = append(o.queue, in)
}

// stop ends every Observed tuple at end (none is left open: what follows
// the end was not watched).
func (o *observer) stop(end algebra.Time) {
	for k := range o.open {
		o.queue = append(o.queue, o.unwatch(k, end))
	}
}

// unwatch returns the end, at end, of the Observed tuple of k (one past
// its begin, at least: its begin may have been delivered).
func (o *observer) unwatch(k gapKey, end algebra.Time) Input {
	in := o.open[k]
	in.Begin, in.T, in.From, in.phase = false, max(end, algebra.Next(in.T)), in.T, 0
	delete(o.open, k)
	return in
}

// lost queues the Lost tuple of a reported loss of resident idx and notes
// its gap.
func (o *observer) lost(l Loss, idx int) {
	if l.To <= l.From {
		return
	}
	vals := []algebra.Value{algebra.Str(l.Rel), algebra.Int(int64(l.Lost))}
	if o.fleet {
		vals = append(vals, algebra.Str(l.Host))
	}
	k := o.key()
	o.queue = append(o.queue,
		Input{T: l.From, Rel: algebra.LostName, Entity: true, Begin: true, Key: k, Vals: vals, phase: 1},
		Input{T: l.To, Rel: algebra.LostName, Entity: true, Key: k, From: l.From, Vals: vals})
	o.gaps[l.Rel] = append(o.gaps[l.Rel], algebra.Span{From: l.From, To: l.To})
	if o.fleet {
		k := exec.HostPart(l.Rel, l.Host)
		o.gaps[k] = append(o.gaps[k], algebra.Span{From: l.From, To: l.To})
	}
	rk := gapKey{l.Rel, -1}
	if o.fleet {
		rk.idx = idx
	}
	o.rule[rk] = append(o.rule[rk], algebra.Span{From: l.From, To: l.To})
	x := o.byFrom[rk]
	if x == nil {
		x = &gapIndex{}
		o.byFrom[rk] = x
	}
	x.add(algebra.Span{From: l.From, To: l.To})
	o.nextEnd = min(o.nextEnd, o.next1(rk))
}

// next1 is the start of part rk's first gap not handled by ends yet
// (Forever: none).
func (o *observer) next1(rk gapKey) algebra.Time {
	if gs, i := o.rule[rk], o.cut[rk]; i < len(gs) {
		return gs[i].From
	}
	return algebra.Forever
}

// inGap reports whether t is inside a gap of rel's part k (ruleKey).
func (o *observer) inGap(k gapKey, t algebra.Time) bool {
	x := o.byFrom[k]
	return x != nil && x.in(t)
}

// meets reports whether a gap of rel's part k begins inside (from, to).
func (o *observer) meets(k gapKey, from, to algebra.Time) bool {
	x := o.byFrom[k]
	return x != nil && x.meets(from, to)
}

// ends returns the inputs ending, at the start of every gap up to t not
// handled yet, the tuples of its relation still valid there: a tuple is
// kept up to the first gap it meets (and whatever it reports later is
// dropped). In time order.
func (o *observer) ends(t algebra.Time) []Input {
	if t < o.nextEnd {
		return nil // (before every input: no map to range over)
	}
	var out []Input
	defer func() {
		o.nextEnd = algebra.Forever
		for rk := range o.rule {
			o.nextEnd = min(o.nextEnd, o.next1(rk))
		}
	}()
	for rk, gs := range o.rule {
		for i := o.cut[rk]; i < len(gs) && gs[i].From <= t; i++ {
			o.cut[rk] = i + 1
			for k, in := range o.tuples {
				if in.Rel != rk.rel || in.T >= gs[i].From || o.ruleKey(in.Rel, k) != rk {
					continue
				}
				end := in
				end.T, end.From, end.Begin, end.phase = gs[i].From, in.T, false, 0
				if in.Kind == stream.PacketBegin {
					end.Kind = stream.PacketEnd
				}
				out = append(out, end)
				delete(o.tuples, k)
				o.void[k] = true
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Input) int { return cmp.Compare(a.T, b.T) })
	return out
}

// admit applies the rule at gaps to a resident's input, delivered at its
// time (ends(in.T) first): a tuple or event beginning in a gap is dropped,
// and so is everything later of a tuple cut at a gap. A tuple learnt
// only at its end, after a gap it spans (a traced-then-disabled interval
// reported whole), cannot be ended at the gap's start in time order: it
// is dropped. A sampled relation's packets pass as reported: each says
// when its tuple began (valid since) and the sampler re-confirms it at
// every tick, so what a gap of it loses is its state at the ticks inside
// (tuples beginning and ending there go unseen, as between any two
// ticks) — its answers are cut out of the gap all the same. It reports
// whether in is delivered.
func (o *observer) admit(in *Input) bool {
	if o.void[in.Key] {
		if in.Entity && !in.Begin || in.Kind == stream.PacketEnd {
			delete(o.void, in.Key)
		}
		return false
	}
	if len(o.rule) == 0 && !in.Entity && in.Kind == stream.PacketEvent {
		return true // no gap yet: an event is in none (inGap, without hashing its relation)
	}
	rk := o.ruleKey(in.Rel, in.Key)
	switch {
	case in.Entity && in.Begin, !in.Entity && in.Kind == stream.PacketBegin:
		if o.inGap(rk, in.T) {
			o.void[in.Key] = true
			return false
		}
		o.tuples[in.Key] = *in
	case !in.Entity && (in.Kind == stream.PacketSample || in.Kind == stream.PacketSampleEnd):
		return true
	case in.Entity, in.Kind == stream.PacketEnd:
		if _, ok := o.tuples[in.Key]; ok {
			delete(o.tuples, in.Key)
			return true
		}
		// Its begin was not delivered (enabled in its middle): whole.
		return !o.inGap(rk, in.From) && !o.meets(rk, in.From, in.T)
	case in.Kind == stream.PacketWhole:
		return !o.inGap(rk, in.From) && !o.meets(rk, in.From, in.T)
	case in.Kind == stream.PacketEvent:
		return !o.inGap(rk, in.T)
	}
	return true
}

// cutHost ends, at t, the tuples of resident idx still valid (its session
// was lost: what it saw after t is not observed) and drops whatever it
// reported later of them, like ends at a gap's start, for that resident
// only. In key order.
func (o *observer) cutHost(idx int, t algebra.Time) []Input {
	var keys []uint64
	for k := range o.tuples {
		if k&obsKeys != obsKeys && int(k>>56) == idx {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]Input, 0, len(keys))
	// Its Observed tuples end there too, in a fleet (its part of every
	// relation is unobserved from t): delivered now, in time order with
	// the tuples cut (taking them through the queue would be late).
	var ended []gapKey
	for k := range o.open {
		if o.fleet && k.idx == idx {
			ended = append(ended, k)
		}
	}
	slices.SortFunc(ended, func(a, b gapKey) int { return cmp.Compare(a.rel, b.rel) })
	for _, k := range ended {
		out = append(out, o.unwatch(k, t))
	}
	for _, k := range keys {
		in := o.tuples[k]
		end := in
		end.T, end.From, end.Begin, end.phase = max(t, algebra.Next(in.T)), in.T, false, 0
		if in.Kind == stream.PacketBegin {
			end.Kind = stream.PacketEnd
		}
		out = append(out, end)
		delete(o.tuples, k)
		o.void[k] = true
	}
	return out
}

// Gaps are the gaps of rel reported so far (exec.Options.Gaps), and in a
// fleet of each host's part of it (exec.HostPart).
func (o *observer) Gaps(rel string) []algebra.Span { return o.gaps[rel] }

// take removes the queued inputs at or before w and appends them to out.
func (o *observer) take(out []Input, w algebra.Time) []Input {
	q := o.queue[:0]
	for _, in := range o.queue {
		if in.T <= w {
			out = append(out, in)
		} else {
			q = append(q, in)
		}
	}
	clear(o.queue[len(q):])
	o.queue = q
	return out
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
	on := ""
	if l.Host != "" {
		on = " on " + l.Host
	}
	return fmt.Sprintf("lost %d %s packets%s between %s and %s", l.Lost, l.Rel, on, algebra.FormatTime(l.From, f), algebra.FormatTime(l.To, f))
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
// ErrIncomplete), or nil: the session lost, or else hosts found late, or
// else the packets lost.
func (st *LiveStats) Err() error {
	if st.SessionLost != nil {
		return st.SessionLost
	}
	if len(st.Late) > 0 {
		return &LateHostsError{Hosts: st.Late}
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
			g = &Gap{From: gapAfter(prev, w).From}
			l.pending[c.Sensor] = g
			l.since[c.Sensor] = time.Now()
		}
		g.To, g.Lost = gapAfter(prev, w).To, g.Lost+(c.Drops-last)
	}
	return l.flush(func(s uint16) bool { return !rose[s] || time.Since(l.since[s]) >= flushEvery })
}

// holds returns the earliest time a loss not reported yet may cover: the
// run delivers nothing from there on until it is reported (its extent and
// count are final), so the loss is known — its Lost tuple delivered, its
// relation's answers cut — before anything it covers is.
func (l *losses) holds() (algebra.Time, bool) {
	from, ok := algebra.Forever, false
	for _, g := range l.pending {
		from, ok = min(from, g.From), true
	}
	return from, ok
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
		if it.Kind == stream.PacketBegin {
			it.From = max(it.From, f)
		}
		return true
	case it.Kind == stream.PacketWhole && it.T <= f, it.T < f:
		return false
	}
	if (!begins || it.Kind == stream.PacketBegin) && it.From < f {
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

// RestrictObserved returns h as the live run st described knows it: from
// st.Start on (Restrict), each relation cut at its gaps by the rule the
// run applies (admit) — a tuple is kept up to the first gap it meets, a
// tuple or event beginning in a gap is dropped, a tuple of a
// traced-then-disabled relation (reported whole at its end) that meets a
// gap is dropped, a sampled relation's tuples are kept as they are — with
// the Observed and Lost tuples the run fed its network. Run over it (query.Program.RunHistory cuts every answer out of
// the gaps of Lost), a program answers what the live run answered.
func RestrictObserved(h *algebra.History, st LiveStats) *algebra.History {
	out := Restrict(h, st.Start)
	observed, lost := out.Table(algebra.ObservedName), out.Table(algebra.LostName)
	observed.Rows, lost.Rows = nil, nil
	fleet := h.Catalog.Fleet
	for _, o := range st.Observed {
		period := algebra.DurationVal(int64(o.Period))
		switch {
		case !fleet:
			if to := algebra.Next(o.To); to > o.From {
				observed.Add([]algebra.Value{algebra.Str(o.Rel), period}, o.From, to)
			}
		case !algebra.IsObservation(o.Rel):
			// A fleet's: each host's span (a lost host's ends where it
			// was cut; a host lacking the relation has none).
			for _, hs := range o.Hosts {
				to := algebra.Next(hs.To)
				if hs.Lost {
					to = hs.To
				}
				if to > hs.From {
					observed.Add([]algebra.Value{algebra.Str(o.Rel), period, algebra.Str(hs.Host)}, hs.From, to)
				}
			}
		}
		t := out.Table(o.Rel)
		for _, g := range o.Gaps {
			if g.To > g.From {
				vals := []algebra.Value{algebra.Str(o.Rel), algebra.Int(int64(g.Lost))}
				if fleet {
					vals = append(vals, algebra.Str(g.Host))
				}
				lost.Add(vals, g.From, g.To)
			}
		}
		if t == nil || len(o.Gaps) == 0 || t.Rel.Strategy.Kind == algebra.Sampled {
			continue
		}
		rows := t.Rows[:0]
		host := t.Rel.AttrIndex(algebra.HostAttr)
		for _, row := range t.Rows {
			keep, to := true, row.To
			for _, g := range o.Gaps {
				if fleet && host >= 0 && row.Vals[host].S != g.Host {
					continue // another host's gap: its tuples only
				}
				switch {
				case g.From <= row.From && row.From < g.To:
					keep = false
				case row.From < g.From && g.From < to:
					if t.Rel.Strategy.Kind == algebra.TracedThenDisabled {
						keep = false
					}
					to = g.From
				}
			}
			if keep {
				row.To = to
				rows = append(rows, row)
			}
		}
		t.Rows = rows
	}
	return out
}
