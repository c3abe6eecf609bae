package exec

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Acquisitional execution over a recorded history. The history stands for
// what the subject system does; a simulated resident monitor delivers a
// packet only when a sensor would fire:
//
//   - a traced event, when its flag holder is enabled at its instant;
//   - a traced interval's begin, when enabled at its first chronon; its
//     end (carrying its begin), when enabled at its last chronon (e−1) or
//     when its begin was delivered — a resident that reported a begin
//     reports the end, so no interval is left dangling;
//   - a traced-then-disabled (D) relation fires once per tuple — an event
//     at its instant, an interval whole at its end — when enabled then; the
//     sensor then decrements the flag's counter, and the monitor re-arms
//     it while the α's argument still holds the entity;
//   - a sampled relation, at each sampling instant (a tick of the α's When
//     argument), reports every tuple valid then whose flag holder is
//     enabled — one packet per tuple per sample — with its valid time;
//   - when the observation ends, a resident reports the intervals still in
//     progress whose flag holder is enabled then and that it has not
//     reported yet: they are valid until forever, as the history says.
//
// Entity relations and relations without a sensor of their own are always
// available (they are not packets). α operators drive enabling exactly as
// they do against live residents: their arguments are streams, computed by
// the same network, and a flag is set while the argument holds the entity.
// An α decides the packets of an instant only once its arguments are known
// through that instant, so an argument computed from other sensors' packets
// (the rewriter's join restrictions) is always up to date.

// AcquireStats describe an acquisitional run.
type AcquireStats struct {
	// Packets counts packets delivered per sensor (relation name).
	Packets map[string]int
	// Total is the sum of Packets.
	Total int
	// Rearms counts D-sensor flags re-armed by the monitor after firing.
	Rearms int
	// PeakHeld is the most tuples the operators held at once.
	PeakHeld int
	// PeakEnabled is, per sensor, the most entities enabled at once.
	PeakEnabled map[string]int
}

// sensorData is a sensed relation's recorded tuples, indexed for delivery.
type sensorData struct {
	rel     *algebra.Relation
	rows    []algebra.Tuple
	byBegin []int // row indices by begin (events: by instant)
	byEnd   []int // interval row indices by end (finite ends only)
	marks   []uint8
	sampled []algebra.Time // last instant each row was sampled
	packets int
}

const (
	markFirst uint8 = 1 // event, begin, whole or sample
	markEnd   uint8 = 2
)

func newSensorData(t *algebra.Table) *sensorData {
	sd := &sensorData{rel: t.Rel, rows: t.Rows, marks: make([]uint8, len(t.Rows))}
	for i, r := range t.Rows {
		sd.byBegin = append(sd.byBegin, i)
		if !t.Rel.IsEvent() && r.To != algebra.Forever {
			sd.byEnd = append(sd.byEnd, i)
		}
	}
	slices.SortStableFunc(sd.byBegin, func(a, b int) int { return cmp.Compare(t.Rows[a].From, t.Rows[b].From) })
	slices.SortStableFunc(sd.byEnd, func(a, b int) int { return cmp.Compare(t.Rows[a].To, t.Rows[b].To) })
	if t.Rel.Strategy.Kind == algebra.Sampled {
		sd.sampled = make([]algebra.Time, len(t.Rows))
		for i := range sd.sampled {
			sd.sampled[i] = algebra.Beginning
		}
	}
	return sd
}

// deliver counts a packet once per sensor, however many α receive it.
func (sd *sensorData) deliver(row int, mark uint8) {
	if sd.marks[row]&mark == 0 {
		sd.marks[row] |= mark
		sd.packets++
	}
}

func (sd *sensorData) sample(row int, at algebra.Time) {
	if sd.sampled[row] != at {
		sd.sampled[row] = at
		sd.packets++
	}
}

// sensorCursor is an α's position in its sensor's tuples.
type sensorCursor struct {
	sd         *sensorData
	begin, end int
	// active are the sampled rows valid now, by flag holder.
	active map[string]map[int]bool
	steps  []algebra.Time // driver instants not yet decided
}

// simSource derives, from the recorded history, the packets a resident
// would report for an α at an instant (before the α filters them by its
// enablement): every tuple beginning, ending or firing then, and at the α's
// sampling instants every tuple valid then.
type simSource struct {
	cur *sensorCursor
}

func (s simSource) packetsAt(a *Alpha, t algebra.Time) []packet {
	cur := s.cur
	sd := cur.sd
	flagKey := func(row int) string { return sd.rows[row].Vals[a.Flag].S }
	elsewhere := func(row int) bool { return a.elsewhere(sd.rows[row].Vals) }
	var out []packet
	for cur.end < len(sd.byEnd) && sd.rows[sd.byEnd[cur.end]].To <= t {
		r := sd.byEnd[cur.end]
		cur.end++
		row := &sd.rows[r]
		if row.To < t || elsewhere(r) {
			continue // before this α started, or not on its hosts
		}
		p := packet{t: t, key: uint64(r), from: row.From, vals: row.Vals, row: r}
		switch a.Kind {
		case algebra.Traced:
			p.kind = pEnd
		case algebra.TracedThenDisabled:
			p.kind = pWhole
		case algebra.Sampled:
			p.kind = pSampleEnd
			if m := cur.active[flagKey(r)]; m != nil {
				delete(m, r)
				if len(m) == 0 {
					delete(cur.active, flagKey(r))
				}
			}
		}
		out = append(out, p)
	}
	for cur.begin < len(sd.byBegin) && sd.rows[sd.byBegin[cur.begin]].From <= t {
		r := sd.byBegin[cur.begin]
		cur.begin++
		row := &sd.rows[r]
		if row.From < t && !(a.Kind == algebra.Sampled && row.To > t) || elsewhere(r) {
			continue // before this α started, or not on its hosts
		}
		p := packet{t: t, key: uint64(r), from: row.From, vals: row.Vals, row: r}
		switch {
		case a.Kind == algebra.Sampled:
			k := flagKey(r)
			if cur.active[k] == nil {
				cur.active[k] = map[int]bool{}
			}
			cur.active[k][r] = true
			continue
		case sd.rel.IsEvent():
			p.kind = pEvent
		case a.Kind == algebra.Traced:
			p.kind = pBegin
		default:
			continue // a D interval fires at its end
		}
		out = append(out, p)
	}
	if a.Kind == algebra.Sampled && a.samplesAt(t) {
		keys := make([]string, 0, len(cur.active))
		for k := range cur.active {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, r := range sortedRows(cur.active[k]) {
				row := &sd.rows[r]
				out = append(out, packet{kind: pSample, t: t, key: uint64(r), from: row.From, vals: row.Vals, row: r})
			}
		}
	}
	return out
}

// count records that an α delivered a packet derived from the history.
func (s simSource) count(p *packet) {
	sd := s.cur.sd
	switch p.kind {
	case pSample:
		sd.sample(p.row, p.t)
	case pEnd:
		sd.deliver(p.row, markEnd)
	case pSampleEnd:
	default:
		sd.deliver(p.row, markFirst)
	}
}

func sortedRows(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// elsewhere reports whether a tuple (its values) is of a host a fleet's α
// is not placed on (plan.Alpha.Hosts): not asked, that host's sensor
// reports nothing of it. The Host attribute is the relation's last.
func (a *Alpha) elsewhere(vs []algebra.Value) bool {
	if a.Plan == nil || a.Plan.Hosts == nil {
		return false
	}
	return len(vs) == 0 || !slices.Contains(a.Plan.Hosts, vs[len(vs)-1].S)
}

// finish reports, at the end of the observation, the intervals still in
// progress that α's sensor would report: whole, valid until forever.
func (a *Alpha) finishSim() {
	sd := a.cursor.sd
	if sd.rel.IsEvent() || a.Kind == algebra.Sampled {
		return // sampled tuples were reported at their sampling instants
	}
	if a.enable != nil {
		a.enable.applyThrough(algebra.Forever)
	}
	for r := range sd.rows {
		row := &sd.rows[r]
		if row.To != algebra.Forever || a.begun[uint64(r)] != nil || !a.enabled(row.Vals[a.Flag].S) || a.elsewhere(row.Vals) {
			continue
		}
		a.out.Push(stream.Elem{Kind: stream.Whole, T: algebra.Forever, Rec: &stream.Rec{Vals: a.packetVals(row.Vals), From: row.From}})
		sd.deliver(r, markFirst)
	}
}

// ready reports whether α's arguments are known through instant t.
func (a *Alpha) ready(t algebra.Time) bool {
	if a.enable != nil && !a.enable.settled(t) {
		return false
	}
	if a.when != nil && !a.when.settled(t) {
		return false
	}
	return true
}

// catchUp decides every pending instant whose arguments are known, then
// advances α's output past the last (once: see Live).
func (a *Alpha) catchUp(stats *AcquireStats) {
	cur := &a.cursor
	i := 0
	for ; i < len(cur.steps); i++ {
		t := cur.steps[i]
		if !a.ready(t) {
			break
		}
		a.step(t, stats)
	}
	if i > 0 {
		a.out.Advance(cur.steps[i-1])
		a.blk.reset() // (what it emitted is forgotten, if reused)
	}
	rest := copy(cur.steps, cur.steps[i:])
	cur.steps = cur.steps[:rest]
}

// RunAcquire plays a recorded history into a network with α operators as a
// resident monitor would deliver it (see the top of this file), and returns
// what was delivered.
func (n *Network) RunAcquire(h *algebra.History) (AcquireStats, error) {
	stats := AcquireStats{Packets: map[string]int{}, PeakEnabled: map[string]int{}}
	sensors := map[string]*sensorData{}
	for _, a := range n.Alphas {
		sd := sensors[a.Rel.Name]
		if sd == nil {
			t := h.Table(a.Rel.Name)
			if t == nil {
				return stats, fmt.Errorf("history has no relation %s", a.Rel.Name)
			}
			sd = newSensorData(t)
			sensors[a.Rel.Name] = sd
		}
		a.cursor = sensorCursor{sd: sd, active: map[string]map[int]bool{}}
		a.src = simSource{cur: &a.cursor}
	}

	// Every instant something can happen at: always-available tuples,
	// clock ticks, sensor tuples.
	var times []algebra.Time
	type srcRows struct {
		tee  *stream.Tee
		rows []algebra.Tuple
		recs []stream.Rec
		ev   bool
	}
	var srcs []*srcRows
	names := make([]string, 0, len(n.Sources))
	for name := range n.Sources {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := h.Table(name)
		if t == nil {
			return stats, fmt.Errorf("history has no relation %s", name)
		}
		s := &srcRows{tee: n.Sources[name], rows: t.Rows, recs: make([]stream.Rec, len(t.Rows)), ev: t.Rel.IsEvent()}
		for i, r := range t.Rows {
			s.recs[i] = stream.Rec{Vals: r.Vals, From: r.From}
			times = append(times, r.From)
			if !s.ev && r.To != algebra.Forever {
				times = append(times, r.To)
			}
		}
		srcs = append(srcs, s)
	}
	for _, sd := range sensors {
		for _, r := range sd.rows {
			times = append(times, r.From)
			if !sd.rel.IsEvent() && r.To != algebra.Forever {
				times = append(times, r.To)
			}
		}
	}
	start, end, haveExtent := h.Extent()
	type clk struct {
		step int64
		tee  *stream.Tee
	}
	var clocks []clk
	if haveExtent {
		for c, tee := range n.Clocks {
			step := c * n.ClockPeriod
			clocks = append(clocks, clk{step, tee})
			times = append(times, algebra.ClockTicks(c, n.ClockPeriod, start, end)...)
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)

	// Per source: begins (events) and ends, in time order.
	type cursor struct {
		s      *srcRows
		begins []int
		ends   []int
		bi, ei int
	}
	var curs []*cursor
	for _, s := range srcs {
		c := &cursor{s: s}
		for i, r := range s.rows {
			c.begins = append(c.begins, i)
			if !s.ev && r.To != algebra.Forever {
				c.ends = append(c.ends, i)
			}
		}
		slices.SortStableFunc(c.begins, func(a, b int) int { return cmp.Compare(s.rows[a].From, s.rows[b].From) })
		slices.SortStableFunc(c.ends, func(a, b int) int { return cmp.Compare(s.rows[a].To, s.rows[b].To) })
		curs = append(curs, c)
	}

	alwaysTees := []*stream.Tee{n.Heartbeat}
	for _, s := range srcs {
		alwaysTees = append(alwaysTees, s.tee)
	}
	for _, c := range clocks {
		alwaysTees = append(alwaysTees, c.tee)
	}
	for _, c := range n.Consts {
		alwaysTees = append(alwaysTees, c.Out)
		for _, v := range c.Vals {
			c.Out.Push(stream.Elem{Kind: stream.Begin, T: algebra.Beginning, Rec: &stream.Rec{Vals: []algebra.Value{v}, From: algebra.Beginning}})
		}
	}

	enabledNow := map[string]int{}
	notePeaks := func() {
		n.notePeak()
		clear(enabledNow)
		for _, a := range n.Alphas {
			if a.enable != nil {
				enabledNow[a.Rel.Name] += len(a.enable.count)
			}
		}
		for k, v := range enabledNow {
			stats.PeakEnabled[k] = max(stats.PeakEnabled[k], v)
		}
	}

	for _, t := range times {
		// Always-available tuples at t: Ends, then Begins and events.
		for _, c := range curs {
			for c.ei < len(c.ends) && c.s.rows[c.ends[c.ei]].To == t {
				i := c.ends[c.ei]
				c.ei++
				c.s.tee.Push(stream.Elem{Kind: stream.End, T: t, Rec: &c.s.recs[i]})
			}
		}
		for _, c := range curs {
			for c.bi < len(c.begins) && c.s.rows[c.begins[c.bi]].From == t {
				i := c.begins[c.bi]
				c.bi++
				kind := stream.Begin
				if c.s.ev {
					kind = stream.Event
				}
				c.s.tee.Push(stream.Elem{Kind: kind, T: t, Rec: &c.s.recs[i]})
			}
		}
		for _, c := range clocks {
			if t%c.step == 0 && t >= start && t <= end {
				c.tee.Push(stream.Elem{Kind: stream.Event, T: t, Rec: &stream.Rec{From: t}})
			}
		}
		for _, tee := range alwaysTees {
			tee.Advance(t)
		}
		// α operators, each after those its arguments read.
		for _, a := range n.Alphas {
			a.cursor.steps = append(a.cursor.steps, t)
			a.catchUp(&stats)
		}
		if err := n.Err(); err != nil {
			return stats, err
		}
		notePeaks()
	}
	for _, tee := range alwaysTees {
		tee.Advance(algebra.Forever)
	}
	for _, a := range n.Alphas {
		a.catchUp(&stats)
		if len(a.cursor.steps) > 0 || !a.ready(algebra.Forever) {
			return stats, fmt.Errorf("α %s: arguments never settled", a.VarName)
		}
		a.finishSim()
		a.out.Advance(algebra.Forever)
	}
	if err := n.Err(); err != nil {
		return stats, err
	}
	for name, sd := range sensors {
		stats.Packets[name] = sd.packets
		stats.Total += sd.packets
	}
	stats.PeakHeld = n.PeakHeld()
	return stats, nil
}
