package remote

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// LiveOptions shape a live run.
type LiveOptions struct {
	// Duration stops the run after this long (0: until the residents end
	// or the context is done).
	Duration time.Duration
	// Follow, when set, says how the residents follow descendants (the
	// kernel's --follow): the run's αs then accept the packets of the
	// enabled entities' descendants (exec.Follow; each run keeps its own
	// copy).
	Follow *exec.Follow
	// Naive runs the initial plans instead of the rewritten ones.
	Naive bool
	// PlaceCostly places a program at its resident even when the rule
	// "placement cost" keeps it at the monitor (rewrite.ProgramPlacement's
	// Costly: placing would not spare the wire): tests of the fragments'
	// exactness.
	PlaceCostly bool
	// WireBytes counts the bytes the residents' batches take on the wire
	// (LiveStats.WireBytes): it encodes each batch once more, so it is
	// asked for (--stats), not paid on every run.
	WireBytes bool
	// Lease is the lease the remote keeps renewing (default 3 s).
	Lease time.Duration
	// OnElem, if set, is called with each result element as it is
	// produced (streaming output): the statement's index and the element.
	OnElem func(stmt int, e stream.Elem)
	// Discard keeps no result rows: OnElem sees them, the tables RunLive
	// returns are empty.
	Discard bool
	// Borrow says OnElem borrows each element (exec.Collector.Borrow):
	// once it returned it keeps neither an event's e.Rec nor any
	// element's e.Rec.Vals (it copies what it keeps, as a counter keeps
	// nothing; an interval's record, never reused, it may keep to match
	// its End). The run may then reuse them for later results. Without
	// it, each element is OnElem's to keep.
	Borrow bool
	// Ready, if set, is called once the residents have been told what to
	// enable (a subject started after it misses nothing).
	Ready func()
	// Progress, if set, is called with the time up to which every
	// resident has reported (the merged watermark) each time it advances:
	// the subject's clock as the monitor knows it (a live display's clock).
	Progress func(t algebra.Time)
	// Tap, if set, sees every input delivered to the network, in time
	// order — the primitive relations as the sensors reported them (for
	// recording), restricted to what was observed (see Observation), and
	// the observation's own relations, Observed and Lost, as entity-like
	// inputs (a tuple begins, then ends).
	// Inputs whose time the residents' watermarks have not yet passed are
	// delivered (and tapped) later.
	Tap func(Input)
	// OnLoss, if set, is called with each loss as the residents report
	// it (see Loss.Format): packets lost from a relation between two
	// watermarks.
	OnLoss func(Loss)
	// Started, if set, is called once with the observation's start (see
	// Observation), before any input is delivered.
	Started func(from algebra.Time)
	// TimeFormat is how errors print times (a lost session's).
	TimeFormat algebra.TimeFormat
}

// LiveStats describe a live run.
type LiveStats struct {
	// Packets counts the sensor packets received, per relation.
	Packets map[string]int
	// Wanted and Dropped are the residents' cumulative counts, per
	// relation: packets sensors produced while enabled, and those lost.
	Wanted  map[string]uint64
	Dropped map[string]uint64
	// WireTuples and WireBytes count what crossed the wire from the
	// residents: every packet (sensor and entity tuples) and the batches'
	// encoded size (wire encoding, whatever the transport; in process, what
	// it would have been) — WireBytes only with LiveOptions.WireBytes.
	WireTuples, WireBytes uint64
	// PeakHeld is the most tuples the operators held at once.
	PeakHeld int
	// PeakQueued is the most inputs of one resident waiting at once for
	// the residents' merged watermark: about a chunk (4,096), at most
	// 32,768 and a chunk while a loss not yet reported holds the
	// watermark back (maxHeldBack).
	PeakQueued int
	// Widened lists the α operators whose argument the residents cannot
	// compute themselves (it derives from the remote's results): their
	// sensor is enabled for every entity, and α keeps what it needs.
	Widened []string
	// Start and End span what was observed: from the time the residents
	// had carried out the run's commands (Observation.From) to the last
	// time their merged streams reached.
	Start, End algebra.Time
	// Observed is the observation of each primitive relation the program
	// reads, by name order: when it was watched, where packets were lost,
	// a sampled relation's period.
	Observed []Observation
	// SessionLost is the first session lost before the run ended (RunLive
	// also returns it as its error).
	SessionLost *SessionLostError
	// Late, in a fleet, are the hosts the monitor's host glob matches
	// that it found only after the run had started (LateHosts): none of
	// their tuples were observed, and the run says so (LateHostsError).
	Late []string
	// Placed says the program ran as a plan fragment at its resident
	// (fragment_plan.go): the wire carried its results, not packets.
	Placed bool
	// Skew is, per resident that states one (wire.Skewed: a fleet host),
	// the bound on how far its clock is from the monitor's. Tuples of two
	// hosts closer in time than their bounds may have happened in the
	// other order: the merge orders them by their stamps, as they were
	// stamped, and holds each host's watermark back by its bound (see
	// mergeWatermark) rather than correct any stamp.
	Skew map[string]time.Duration
}

// CheckHellos verifies that every resident speaks this protocol version
// and, unless they are a fleet (FleetCatalog), announces the same sensor
// description as the first.
func CheckHellos(conns []wire.Conn, fleet bool) error {
	if len(conns) == 0 {
		return errors.New("no resident to connect to")
	}
	first := conns[0].Hello()
	for i, c := range conns {
		h := c.Hello()
		if h.Version != wire.Version {
			return fmt.Errorf("resident %s speaks protocol %d, not %d", h.Name, h.Version, wire.Version)
		}
		if i > 0 && h.SDL != first.SDL && !fleet {
			return fmt.Errorf("residents %s and %s describe different sensors", first.Name, h.Name)
		}
	}
	return nil
}

type connState struct {
	conn  wire.Conn
	hello *wire.Hello
	idx   int
	// converter turns the resident's packets into inputs: this one, the
	// run's (take, probes); the receiving goroutine has its own (receive).
	converter
	queue []Input // queue[qhead:] wait for the merged watermark
	qhead int
	wm    algebra.Time
	done  bool
	ids   map[string]uint16 // sensor name → id
	types map[string]uint16 // entity type → id
	// counts are this resident's last cumulative counts per sensor:
	// LiveStats sums the residents' (each batch adds what grew).
	counts map[uint16]wire.Count

	// Observation: sent commands have been sent; the run watches this
	// resident from the first batch saying the first need of them were
	// carried out, at applied (the resident's clock, global): from, known
	// once every resident has said (the run's start is the earliest).
	sent, need uint64
	applied    algebra.Time
	hasApplied bool
	from       algebra.Time
	known      bool
	early      map[uint64]bool // tuples begun before from, held at from
	void       map[uint64]bool // of those, tuples that also ended before from
	loss       losses
	lastWM     algebra.Time
	batchWM    algebra.Time // the watermark of the batch being taken
	// part is that batch while some of its chunks are still to come,
	// partHi where the next begins.
	part   *wire.Batch
	partHi int
	lost   error
	// lostAt, when lostSet, is where this resident's session was lost:
	// nothing it saw after it was observed (its watermark then).
	lostAt  algebra.Time
	lostSet bool
	// skew is the resident's clock-skew bound (wire.Skewed), 0 if none.
	skew algebra.Time
	// fleet: the run's catalog is a fleet's (algebra.Catalog.Fleet).
	fleet bool
	obs   *observer // the run's, shared
	// rels are the sensors' relations in the catalog (rel), npk the
	// packets delivered per sensor (deliver; count sums them).
	rels []*algebra.Relation
	npk  []int
	// deferred are losses made before the observation's start was known:
	// reported from there, inside it.
	deferred []sensorGap
}

// Input is one input of the live network, as the remote delivers it: an
// entity relation's tuple beginning or ending, or a sensor packet. Tap
// observers see inputs in delivery (time) order; the values are shared
// and must not be modified.
type Input struct {
	// T is the input's time on the global clock.
	T algebra.Time
	// Rel is the primitive relation.
	Rel string
	// Entity marks an entity relation's tuple; Begin says whether it
	// begins (true) or ends at T.
	Entity bool
	Begin  bool
	// Kind is a sensor packet's kind (zero for entity inputs).
	Kind stream.PacketKind
	// (Small fields together: an input is copied twice per packet.)
	phase    int8
	resident bool   // from a resident (not the observer)
	sensor   uint16 // its sensor there (sensor packets)
	// Key identifies an interval tuple (and an entity tuple) across its
	// begin and end; keys of different residents differ.
	Key uint64
	// From is an ended or whole interval's begin, or a sample's "valid
	// since" time.
	From algebra.Time
	// Vals are the tuple's values, in the relation's attribute order.
	Vals []algebra.Value

	state *connState // the resident's (resident inputs)
	// lost, when set, marks no tuple but where resident lost−1's session
	// was lost: its tuples still valid end at T (observer.cutHost).
	lost int
}

// RunLive runs the program p against live residents until the duration
// passes, the context ends or every resident has ended, and returns the
// results: the answers over what was observed (see Observation; the
// stats' Observed), incomplete where packets were lost (LiveStats.Err).
// A session lost before the run ended (lease expiry, a broken stream)
// ends the run with a *SessionLostError, an ErrIncomplete, beside the
// results so far. Residents enable what the plans need themselves where they can
// (whole types, constants, and the rewriter's join restrictions as
// triggers); α operators keep exactly what their arguments say.
func RunLive(ctx context.Context, p *query.Program, conns []wire.Conn, opts LiveOptions) ([]query.Result, LiveStats, error) {
	stats := LiveStats{Wanted: map[string]uint64{}, Dropped: map[string]uint64{}}
	if err := CheckHellos(conns, p.Catalog.Fleet); err != nil {
		return nil, stats, err
	}
	if opts.Lease <= 0 {
		opts.Lease = 3 * time.Second
	}
	rw, err := p.Rewritten(opts.Naive)
	if err != nil {
		return nil, stats, err
	}
	plans := make([]plan.Node, len(rw))
	for i, r := range rw {
		plans[i] = r.Final
	}
	if ok, _ := placeable(p, conns, plans, opts); ok {
		if p.Catalog.Fleet {
			return perHostRun(ctx, p, conns, plans, opts, stats) // fragment_fleet.go
		}
		return placedRun(ctx, p, conns[0], plans, opts, stats, "") // fragment_plan.go
	}
	obs := newObserver(p.Catalog.Fleet)
	packets := map[string]int{} // received and delivered, gaps or not
	eo := p.ExecOptions()
	eo.Gaps, eo.Observed = obs.Gaps, true
	eo.ShareAlphas = true // (fragments: one per plan α)
	net, err := exec.Build(p.Catalog, p.Stmts, plans, eo)
	if err != nil {
		return nil, stats, err
	}
	if opts.OnElem != nil {
		for i, s := range net.Stmts {
			i := i
			s.Result.OnElem = func(e stream.Elem) { opts.OnElem(i, e) }
			s.Result.Discard = opts.Discard
			s.Result.Borrow = opts.Borrow
		}
	}
	states := make([]*connState, len(conns))
	start := algebra.Forever
	for i, c := range conns {
		h := c.Hello()
		st := &connState{conn: c, hello: h, idx: i, fleet: p.Catalog.Fleet, converter: newConverter(h, i, p.Catalog), wm: algebra.Beginning,
			ids: map[string]uint16{}, types: map[string]uint16{}, early: map[uint64]bool{}, void: map[uint64]bool{},
			loss: newLosses(), lastWM: algebra.Beginning, obs: obs}
		for id, name := range h.Sensors {
			st.ids[name] = uint16(id)
		}
		for id, name := range h.Types {
			st.types[name] = uint16(id)
		}
		if sk, ok := c.(wire.Skewed); ok {
			st.skew = algebra.Time(sk.Skew())
			if stats.Skew == nil {
				stats.Skew = map[string]time.Duration{}
			}
			stats.Skew[h.Name] = sk.Skew()
		}
		states[i] = st
		start = min(start, h.WallBase)
	}
	cmd := &commander{states: states, periods: map[string]time.Duration{}, fleet: p.Catalog.Fleet, defs: map[*check.Retrieve]plan.Node{}}
	for i, r := range p.Stmts {
		cmd.defs[r] = plans[i]
	}
	for _, a := range net.Alphas {
		if err := cmd.push(a, p.Catalog); err != nil {
			return nil, stats, err
		}
		if !cmd.timely {
			stats.Widened = append(stats.Widened, a.VarName)
		}
	}
	if opts.Tap == nil {
		// (A tap records what the sensors report: it must see every tuple,
		// whole.)
		kept := net.Kept()
		for _, a := range net.Alphas {
			if k, ok := kept[a.Rel.Name]; ok && !slices.Contains(k, a.Flag) {
				kept[a.Rel.Name] = append(k, a.Flag) // α reads its flag holder
				slices.Sort(kept[a.Rel.Name])
			}
		}
		for _, st := range states {
			st.kept = kept
		}
		cmd.fragments(net.Alphas, rewrite.Place(plans...))
		cmd.entityFragments(rewrite.PlaceEntities(plans...))
	}
	cmd.renew(opts.Lease)
	if cmd.err != nil {
		return nil, stats, cmd.err
	}
	for _, st := range states {
		st.need = st.sent
	}
	if opts.Ready != nil {
		opts.Ready()
	}

	// The network starts once every resident has said when it carried out
	// the run's commands: the observation starts there.
	var live *exec.Live
	var scratch []Input // deliver's
	begin := func() {
		for _, st := range states {
			switch {
			case st.hasApplied:
				st.from = st.applied
			case st.done:
				st.from = st.wm // ended before saying: nothing before its end is known
			default:
				return
			}
		}
		from := algebra.Forever
		for _, st := range states {
			st.from = max(st.from, start)
			from = min(from, st.from)
			st.known = true
			q := st.queue[:0]
			for i := range st.queue {
				if st.clip(&st.queue[i]) {
					q = append(q, st.queue[i])
				}
			}
			clear(st.queue[len(q):])
			st.queue = q
		}
		start = from
		for _, name := range readRels(net) {
			if !p.Catalog.Fleet {
				obs.watch(name, cmd.periods[name], start, "", -1)
				continue
			}
			// A fleet's Observed tuples are each host's, from its own
			// start (as Observation.Hosts: onHosts); a host lacking the
			// relation has none.
			for _, st := range states {
				if st.hostHas(name) {
					obs.watch(name, cmd.periods[name], st.from, st.hello.Name, st.idx)
				}
			}
		}
		for _, st := range states {
			for _, l := range st.deferred {
				st.report(l.sensor, l.gap, &stats, opts.OnLoss)
			}
			st.deferred = nil
		}
		live = startLive(net, start, opts.Follow)
		if opts.Started != nil {
			opts.Started(start)
		}
	}
	// One batch waits per resident, no more: a monitor that falls behind
	// leaves the rest in the sessions, whose bounds (and the kernel
	// drain's, which hands a session no more than it has room for) then
	// hold them back at the resident, rather than here without bound.
	batches, recycle := receive(ctx, conns, states, len(conns))
	var deadline <-chan time.Time
	if opts.Duration > 0 {
		deadline = time.After(opts.Duration)
	}
	stopRenew := renewLeases(conns, opts.Lease)
	defer stopRenew()
	end := start
	stopped := false
	var wireBuf []byte
	// step delivers what the residents' watermarks settle and advances
	// the network to it; it reports whether the run is over.
	step := func() (bool, error) {
		if live == nil {
			if begin(); live == nil { // not yet: hold what came
				_, all := mergeWatermark(states)
				return all, nil
			}
		}
		w, all := mergeWatermark(states)
		if all || w == algebra.Forever {
			// Every resident has ended, or said it will send nothing
			// more: what they sent is delivered below, after the
			// observation's end.
			return all, nil
		}
		if err := deliver(live, states, obs, w, opts.Tap, &scratch); err != nil {
			return false, err
		}
		if w > end && w != algebra.Forever {
			end = w
		}
		if err := live.Advance(end); err != nil {
			return false, err
		}
		if opts.Progress != nil {
			opts.Progress(end)
		}
		return false, nil
	}
	for !stopped {
		select {
		case <-ctx.Done():
			stopped = true
		case <-deadline:
			stopped = true
		case r := <-batches:
			st := states[r.i]
			if r.err != nil {
				st.done = true
				if !errors.Is(r.err, io.EOF) {
					// Lost, not ended: what followed was not observed — on
					// this resident (host) only: the others go on.
					st.loseAt(max(st.wm, start))
					if stats.SessionLost == nil {
						stats.SessionLost = &SessionLostError{Resident: st.hello.Name, Since: st.lostAt, Err: r.err, Format: opts.TimeFormat}
					}
				}
				if stopped, err = step(); err != nil {
					return nil, stats, err
				}
				continue
			}
			// A batch comes in chunks (receive: its packets converted a
			// chunk at a time), each delivered as far as it settles.
			if r.lo == 0 {
				if err = countWire(r.b, &stats, opts.WireBytes, &wireBuf); err != nil {
					return nil, stats, err
				}
				st.batchWM = st.meta(r.b, &stats, opts.OnLoss)
			}
			if r.convErr != nil {
				return nil, stats, r.convErr
			}
			pk := r.b.Packets
			recycle(st.queueInputs(r.ins))
			stats.PeakQueued = max(stats.PeakQueued, len(st.queue)-st.qhead)
			st.held(&stats, opts.OnLoss)
			if r.hi < len(pk) {
				st.raise(min(st.global(pk[r.hi].TS)-1, st.batchWM))
			} else {
				st.raise(st.batchWM)
			}
			if !stopped {
				if stopped, err = step(); err != nil {
					return nil, stats, err
				}
			}
			st.part, st.partHi = r.b, r.hi
			if r.hi == len(pk) {
				st.part = nil
				if rel, ok := st.conn.(wire.Releaser); ok {
					rel.Release(r.b) // taken: its values are copied out
				}
			}
		}
	}
	for _, st := range states {
		// A batch stopped in is taken whole, as when it was taken at
		// once, by the run's own converter (it has its definitions; the
		// receiving goroutine may still be reading it: not released).
		if b := st.part; b != nil {
			ins, err := st.inputs(nil, b.Packets[st.partHi:], st)
			if err != nil {
				return nil, stats, err
			}
			st.queueInputs(ins)
			st.raise(st.batchWM)
			st.part = nil
		}
	}
	stopRenew()
	for _, st := range states {
		if !st.done {
			st.conn.Close()
		}
		for _, l := range append(st.deferred, st.loss.rest()...) {
			st.report(l.sensor, l.gap, &stats, opts.OnLoss)
		}
		st.deferred = nil
	}
	// Every loss is reported now: what a loss held back (losses.holds)
	// was observed up to where the residents' own watermarks reached, and
	// is delivered below.
	if live != nil {
		reached := algebra.Forever
		for _, st := range states {
			if st.wm != algebra.Forever {
				reached = min(reached, st.wm)
			}
		}
		if reached != algebra.Forever && reached > end {
			end = reached
		}
	}
	if live == nil {
		// Nothing said when it was watched: nothing was.
		for _, st := range states {
			st.queue = nil
		}
		live = startLive(net, start, opts.Follow)
		if opts.Started != nil {
			opts.Started(start)
		}
	}
	// What every resident has sent so far is all there is; the
	// observation ends where the merged watermarks reached (inclusive:
	// Observed tuples end one past it).
	obs.stop(algebra.Next(max(start, end)))
	if err := deliver(live, states, obs, algebra.Forever, opts.Tap, &scratch); err != nil {
		return nil, stats, err
	}
	ast, err := live.Finish(end)
	if err != nil {
		return nil, stats, err
	}
	count(states, packets)
	stats.Packets = packets
	stats.PeakHeld = ast.PeakHeld
	stats.Start, stats.End = start, max(start, end)
	stats.Observed = observed(net, cmd.periods, stats)
	if p.Catalog.Fleet {
		onHosts(stats.Observed, states, stats.End)
	}
	out := make([]query.Result, len(net.Stmts))
	for i, s := range net.Stmts {
		out[i] = query.Result{Stmt: s.Retrieve, Table: s.Result.Table()}
	}
	stats.Late = lateHosts(conns)
	if stats.SessionLost != nil {
		return out, stats, stats.SessionLost
	}
	if len(stats.Late) > 0 {
		return out, stats, &LateHostsError{Hosts: stats.Late}
	}
	return out, stats, nil
}

// countWire adds a batch to the wire counts, its bytes only if asked (buf:
// the encoding buffer, reused).
func countWire(b *wire.Batch, stats *LiveStats, bytes bool, buf *[]byte) error {
	stats.WireTuples += uint64(len(b.Packets))
	if !bytes {
		return nil
	}
	enc, err := b.AppendBinary((*buf)[:0])
	if err == nil {
		*buf = enc
		stats.WireBytes += uint64(len(enc))
		return nil
	}
	// Over a frame's size (an in-process batch): a transport splits it.
	frames, err := b.EncodeSplit(wire.MaxFrame)
	for _, f := range frames {
		stats.WireBytes += uint64(len(f))
	}
	return err
}

// observed lists the observation of each primitive relation the network
// reads, with the gaps stats collected.
func observed(net *exec.Network, periods map[string]time.Duration, stats LiveStats) []Observation {
	gaps := map[string][]Gap{}
	for _, o := range stats.Observed {
		gaps[o.Rel] = append(gaps[o.Rel], o.Gaps...)
	}
	names := map[string]bool{}
	for _, name := range readRels(net) {
		names[name] = true
	}
	var out []Observation
	for name := range names {
		g := gaps[name]
		slices.SortFunc(g, func(a, b Gap) int { return cmp.Compare(a.From, b.From) })
		out = append(out, Observation{Rel: name, From: stats.Start, To: stats.End, Period: periods[name], Gaps: g})
	}
	for name, g := range gaps {
		if !names[name] {
			out = append(out, Observation{Rel: name, From: stats.Start, To: stats.End, Gaps: g})
		}
	}
	slices.SortFunc(out, func(a, b Observation) int { return cmp.Compare(a.Rel, b.Rel) })
	return out
}

// readRels are the primitive relations the network reads (sorted), the
// observation's own excepted.
func readRels(net *exec.Network) []string {
	var out []string
	for name := range net.Sources {
		if !algebra.IsObservation(name) {
			out = append(out, name)
		}
	}
	for _, a := range net.Alphas {
		out = append(out, a.Rel.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// mergeWatermark is the least watermark of the residents still sending,
// each held before the losses it has not reported yet (losses.holds) and
// widened by its clock-skew bound (a watermark wm of a host whose clock
// may be s ahead is taken as wm − s: nothing is delivered that a host
// within its bound might still precede); all is true when none is
// sending.
func mergeWatermark(states []*connState) (algebra.Time, bool) {
	w, all := algebra.Forever, true
	for _, st := range states {
		if !st.done {
			all = false
			wm := st.wm
			if wm != algebra.Forever && st.skew > 0 {
				if wm > algebra.Beginning+st.skew {
					wm -= st.skew
				} else {
					wm = algebra.Beginning
				}
			}
			w = min(w, wm)
			if from, ok := st.loss.holds(); ok {
				w = min(w, algebra.Prev(from))
			}
		}
	}
	return w, all
}

// deliver feeds the live network every queued input at or before w, in
// time order across residents and the observer, the rule at gaps applied,
// and counts the residents' packets (those the rule drops included).
func deliver(live *exec.Live, states []*connState, obs *observer, w algebra.Time, tap func(Input), scratch *[]Input) error {
	items := obs.take((*scratch)[:0], w)
	if len(items) == 0 && len(states) == 1 && len(states[0].void) == 0 {
		// One resident, nothing of the observer's, no tuple void: its
		// queue's inputs are fed where they lie, not copied first (a
		// kernel consumer's every packet).
		st := states[0]
		i := st.qhead
		for i < len(st.queue) && st.queue[i].T <= w {
			i++
		}
		in := st.queue[st.qhead:i]
		for k := range in {
			in[k].resident = true
		}
		err := feedAll(live, obs, w, tap, in)
		clear(in) // their values are the network's now
		st.qhead = i
		st.compact()
		return err
	}
	defer func() {
		clear(items)
		*scratch = items[:0]
	}()
	for _, st := range states {
		i := st.qhead
		for i < len(st.queue) && st.queue[i].T <= w {
			i++
		}
		for _, it := range st.queue[st.qhead:i] {
			if st.void[it.Key] && (it.Entity && it.Begin || it.Kind == stream.PacketBegin) {
				delete(st.void, it.Key) // began and ended before the observation
				continue
			}
			it.resident = true
			items = append(items, it)
		}
		clear(st.queue[st.qhead:i]) // their values are the network's now
		st.qhead = i
		st.compact()
	}
	return feedAll(live, obs, w, tap, items)
}

// compact moves the queue's undelivered inputs down once half of it is
// delivered: compacted, not resliced (the queue keeps its room), once
// moving costs no more than delivering did — before, every batch moved
// the whole queue, quadratic while a loss held the watermark back.
func (st *connState) compact() {
	if st.qhead >= len(st.queue)-st.qhead {
		rest := copy(st.queue, st.queue[st.qhead:])
		clear(st.queue[rest:])
		st.queue = st.queue[:rest]
		st.qhead = 0
	}
}

// feedAll feeds items (sorted here, in place, when they are not in
// order) to the network, the rule at gaps applied, and counts the
// residents' packets.
func feedAll(live *exec.Live, obs *observer, w algebra.Time, tap func(Input), items []Input) error {
	order := func(a, b Input) int {
		if c := cmp.Compare(a.T, b.T); c != 0 {
			return c
		}
		return cmp.Compare(a.phase, b.phase)
	}
	if !inOrder(items) {
		slices.SortStableFunc(items, order)
	}
	feed := func(it *Input) error {
		if tap != nil {
			tap(*it)
		}
		if it.Entity {
			return live.Entity(it.Rel, it.Begin, it.Key, it.Vals, it.T)
		}
		return live.Packet(it.Rel, it.Kind, it.Key, it.From, it.Vals, it.T)
	}
	for k := range items {
		it := &items[k]
		if it.lost > 0 {
			for _, e := range obs.cutHost(it.lost-1, it.T) {
				if err := feed(&e); err != nil {
					return err
				}
			}
			continue
		}
		// The rule at gaps: tuples valid at a gap's start end there.
		for _, e := range obs.ends(it.T) {
			if err := feed(&e); err != nil {
				return err
			}
		}
		if it.resident && !it.Entity {
			it.state.npk[it.sensor]++ // packets[it.Rel], summed at the end (count)
		}
		if it.resident && !obs.admit(it) {
			continue
		}
		if err := feed(it); err != nil {
			return err
		}
	}
	if w != algebra.Forever {
		for _, e := range obs.ends(w) {
			if err := feed(&e); err != nil {
				return err
			}
		}
	}
	return nil
}

// inOrder reports whether items are in feedAll's order (by time, then
// phase): slices.IsSortedFunc with the comparison written out (it
// called it for every pair of a kernel consumer's every chunk).
func inOrder(items []Input) bool {
	for k := 1; k < len(items); k++ {
		a, b := &items[k-1], &items[k]
		if a.T > b.T || a.T == b.T && a.phase > b.phase {
			return false
		}
	}
	return true
}

// meta takes what a batch says besides its packets — the entity names
// it defines, when the resident carried out the run's commands, its
// counts (losses reported, or held: losses.holds) — and returns its
// watermark (global), which the run's watermark of the resident reaches
// once its packets are queued (raise). Losses come first, before any
// packet is delivered: a loss holds the watermark before it is known.
func (st *connState) meta(b *wire.Batch, stats *LiveStats, onLoss func(Loss)) algebra.Time {
	st.define(b.Defs)
	wm := max(st.global(b.Watermark), st.wm)
	before := !st.hasApplied
	if before && b.Applied >= st.need {
		st.applied, st.hasApplied = st.global(b.AppliedAt), true
	}
	for _, c := range b.Counts {
		if int(c.Sensor) < len(st.hello.Sensors) {
			name := st.hello.Sensors[c.Sensor]
			if st.counts == nil {
				st.counts = map[uint16]wire.Count{}
			}
			// Cumulative per resident: add what grew since its last
			// batch, so several residents' counts sum.
			prev := st.counts[c.Sensor]
			stats.Wanted[name] += c.Wanted - min(prev.Wanted, c.Wanted)
			stats.Dropped[name] += c.Drops - min(prev.Drops, c.Drops)
			st.counts[c.Sensor] = wire.Count{Sensor: c.Sensor, Wanted: max(prev.Wanted, c.Wanted), Drops: max(prev.Drops, c.Drops)}
		}
	}
	// Drops a batch made before the run's commands took effect reports
	// are not the run's.
	for _, l := range st.loss.counts(b.Counts, before && !st.hasApplied, st.lastWM, wm) {
		if !st.known {
			// Reported once the observation's start is (begin).
			st.deferred = append(st.deferred, l)
			continue
		}
		st.report(l.sensor, l.gap, stats, onLoss)
	}
	st.lastWM = wm
	return wm
}

// raise raises the resident's watermark to w (never lowers it).
func (st *connState) raise(w algebra.Time) { st.wm = max(st.wm, w) }

// chunk is how many packets of a batch the run queues before delivering
// what they settle: a batch of many (a resident's session holds up to
// session.MaxHeld) is taken in pieces, so what the run holds of it —
// queued inputs and their copies in delivery — is at most about this
// many packets, not the batch.
const chunk = 4096

// chunkEnd returns where the chunk of pk from lo ends: after at most
// chunk packets, but never inside a run of one time (a chunk's end is
// the watermark's, just before the next packet's time), unless the run
// alone is longer.
func chunkEnd(pk []wire.Packet, lo int) int {
	hi := min(lo+chunk, len(pk))
	if hi == len(pk) {
		return hi
	}
	k := hi
	for k > lo && pk[k-1].TS == pk[k].TS {
		k--
	}
	if k > lo {
		return k
	}
	for hi < len(pk) && pk[hi].TS == pk[hi-1].TS {
		hi++
	}
	return hi
}

// maxHeldBack bounds the inputs of one resident a loss not yet reported
// holds back (losses.holds): a loss is reported at the latest once a
// chunk leaves more waiting, rather than up to flushEvery later (held).
// Losses rising for a second are then several losses, not one; the queue
// a consumer behind its resident fills while losing holds at most this
// and a chunk, ≈ 9 MB, not a second's worth of packets (300 MB at 2M
// packets/s).
const maxHeldBack = 1 << 15

// held reports the resident's pending losses now if the inputs they hold
// back are more than maxHeldBack.
func (st *connState) held(stats *LiveStats, onLoss func(Loss)) {
	if len(st.queue)-st.qhead <= maxHeldBack {
		return
	}
	for _, l := range st.loss.rest() {
		if !st.known {
			st.deferred = append(st.deferred, l)
			continue
		}
		st.report(l.sensor, l.gap, stats, onLoss)
	}
}

// rel returns the catalog's relation of sensor id (nil: none), looked up
// once.
func (st *connState) rel(cat *algebra.Catalog, id uint16) *algebra.Relation {
	if st.rels == nil {
		st.rels = make([]*algebra.Relation, len(st.hello.Sensors))
		st.npk = make([]int, len(st.hello.Sensors))
	}
	if st.rels[id] == nil {
		st.rels[id] = cat.Lookup(st.hello.Sensors[id])
	}
	return st.rels[id]
}

// count adds the packets delivered from each resident to packets, per
// relation.
func count(states []*connState, packets map[string]int) {
	for _, st := range states {
		for id, n := range st.npk {
			if n > 0 {
				packets[st.rels[id].Name] += n
				st.npk[id] = 0
			}
		}
	}
}

// queueInputs queues inputs converted from a batch's packets (restricted
// to the observation once its start is known), and returns a slice the
// caller may reuse: ins, copied into the queue — or, when nothing waits
// in the queue (a watermark delivered all: a kernel consumer's every
// chunk), the queue's old array, ins having become the queue where it
// lies (kept in place: no copy of each input).
func (st *connState) queueInputs(ins []Input) []Input {
	if st.known && st.qhead == len(st.queue) {
		kept := ins[:0]
		for i := range ins {
			st.rel(st.cat, ins[i].sensor) // (npk)
			if st.clip(&ins[i]) {
				kept = append(kept, ins[i])
			}
		}
		clear(ins[len(kept):])
		old := st.queue[:0]
		st.queue, st.qhead = kept, 0
		return old
	}
	for i := range ins {
		it := &ins[i]
		st.rel(st.cat, it.sensor) // (npk)
		if !st.known || st.clip(it) {
			st.queue = append(st.queue, *it)
		}
	}
	return ins
}

// report records a loss in the relation's observation and reports it.
func (st *connState) report(sensor uint16, g Gap, stats *LiveStats, onLoss func(Loss)) {
	if int(sensor) >= len(st.hello.Sensors) {
		return
	}
	name := st.hello.Sensors[sensor]
	if st.known {
		g.From = max(g.From, st.from)
		g.To = max(g.To, algebra.Next(g.From)) // counted after from: it is the run's
	}
	if st.fleet {
		g.Host = st.hello.Name // the host's gap (Gap.Host)
	}
	i := slices.IndexFunc(stats.Observed, func(o Observation) bool { return o.Rel == name })
	if i < 0 {
		stats.Observed = append(stats.Observed, Observation{Rel: name})
		i = len(stats.Observed) - 1
	}
	stats.Observed[i].Gaps = append(stats.Observed[i].Gaps, g)
	st.obs.lost(Loss{Rel: name, Gap: g}, st.idx)
	if onLoss != nil {
		onLoss(Loss{Rel: name, Gap: g})
	}
}

// renewLeases renews the residents' leases every lease/3 on a goroutine
// of its own, so that a monitor busy with a long batch (a consumer that
// fell behind, a slow output) keeps its sessions; stop ends it and waits
// for it (idempotent), before the connections close. A renewal that
// fails is not reported here: a session lost shows in its Recv.
func renewLeases(conns []wire.Conn, lease time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	busy := make([]atomic.Bool, len(conns))
	var wg sync.WaitGroup
	go func() {
		defer close(done)
		defer wg.Wait()
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				// Each resident's renewal on its own: one that does not
				// answer (a host gone, its request waiting out its
				// timeout) must not hold the others' back past their
				// lease. A renewal still under way is not sent again.
				for i, c := range conns {
					if !busy[i].CompareAndSwap(false, true) {
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer busy[i].Store(false)
						c.Send(&wire.Command{Kind: wire.CLease, Period: int64(lease)})
					}()
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit); <-done })
	}
}

// commander turns α arguments into resident commands.
type commander struct {
	states []*connState
	next   uint64
	err    error
	timely bool // the last α pushed is enabled by the residents themselves
	// periods are the sampled relations' sampling periods.
	periods map[string]time.Duration
	// fleet: the catalog is a fleet's (algebra.Catalog.Fleet): sensor and
	// type numbers are each host's, entity identifiers are qualified.
	fleet bool
	// only, when set, are the hosts the α being pushed is placed on
	// (plan.Alpha.Hosts): the others get none of its commands.
	only map[string]bool
	// defs are the program's retrieves' plans, for the α arguments over
	// relations they derive (twophase.go).
	defs map[*check.Retrieve]plan.Node
}

// order is a command as the monitor knows it, by names: send resolves
// the names to each resident's numbers.
type order struct {
	cmd wire.Command
	// rel is the relation of cmd.Sensor ("" for a command of none, a
	// lease); on, a trigger's other relation (cmd.On); typ, the entity
	// type of cmd.Type.
	rel, on, typ string
}

// send sends o to every resident it concerns: in a fleet, only to the
// hosts that declare its relations, only to those an α is placed on
// (only), and a command naming a host's entity (HOST/ID, in cmd.Entity or
// a condition) only to that host, by the identifier the host knows.
func (c *commander) send(o order) {
	for _, st := range c.states {
		if o.rel != "" && !st.hostHas(o.rel) || o.on != "" && !st.hostHas(o.on) {
			continue
		}
		if c.only != nil && !c.only[st.hello.Name] {
			continue
		}
		cc := o.cmd
		cc.Conds = slices.Clone(cc.Conds)
		if o.rel != "" {
			cc.Sensor = st.ids[o.rel]
		}
		if o.on != "" {
			cc.On = st.ids[o.on]
		}
		if o.typ != "" {
			cc.Type = st.types[o.typ]
		}
		if !c.local(st, &cc.Entity) {
			continue
		}
		mine := true
		for i := range cc.Conds {
			if cc.Conds[i].Value.Kind == wire.VEntity && !c.local(st, &cc.Conds[i].Value.S) {
				mine = false
			}
		}
		if !mine {
			continue // a condition no tuple of this host meets
		}
		if err := st.conn.Send(&cc); err != nil {
			if c.err == nil {
				c.err = fmt.Errorf("resident %s: %w", st.hello.Name, err)
			}
			continue
		}
		st.sent++
	}
}

// local turns a fleet's entity identifier *id (HOST/ID) into the one st's
// host knows, ID; false when it names another host's entity (or none).
// Outside a fleet, and for no identifier, it keeps *id.
func (c *commander) local(st *connState, id *string) bool {
	if !c.fleet || *id == "" {
		return true
	}
	host, local, ok := algebra.SplitEntity(*id)
	if !ok || host != st.hello.Name {
		return false
	}
	*id = local
	return true
}

func (c *commander) renew(lease time.Duration) {
	c.send(order{cmd: wire.Command{Kind: wire.CLease, Period: int64(lease)}})
}

// push sends the commands that make the residents enable, by themselves
// and in time, at least what α a needs. Where they cannot (an argument the
// remote computes from streams the residents do not see), enabling it from
// the remote would come late and lose packets; instead the sensor is
// enabled for every entity — a superset, which α filters — and timely is
// false.
func (c *commander) push(a *exec.Alpha, cat *algebra.Catalog) error {
	c.timely = true
	x := a.Plan
	c.only = nil
	if x.Hosts != nil {
		c.only = map[string]bool{}
		for _, h := range x.Hosts {
			c.only[h] = true
		}
		defer func() { c.only = nil }()
	}
	rel := a.Rel.Name
	if a.Rel.Strategy.Kind == algebra.Sampled {
		clk, ok := x.When.(*plan.ClockSrc)
		if !ok {
			return fmt.Errorf("α %s: live sampling needs a Clock[n] sampling argument, not %s", x.VarName, plan.String(x.When))
		}
		period := clk.N * cat.ClockPeriod
		if p, ok := c.periods[a.Rel.Name]; !ok || time.Duration(period) < p {
			c.periods[a.Rel.Name] = time.Duration(period)
		}
		if consts, ok := x.Enable.(*plan.Const); ok {
			for _, v := range consts.Vals {
				c.next++
				c.send(order{cmd: wire.Command{Kind: wire.CSample, ID: c.next, Entity: v.S, Period: period},
					rel: rel, typ: a.Rel.Attrs[a.Flag].Type.Entity})
			}
		} else {
			c.next++
			c.send(order{cmd: wire.Command{Kind: wire.CSample, ID: c.next, All: true, Period: period}, rel: rel})
		}
		return c.err
	}
	if !c.enable(a.Rel, x.Enable) {
		c.timely = false
		c.send(order{cmd: wire.Command{Kind: wire.CEnableAll}, rel: rel})
	}
	return c.err
}

// enable sends commands enabling at least what arg holds for rel's
// sensor, in time; it reports false when it cannot.
func (c *commander) enable(rel *algebra.Relation, arg plan.Node) bool {
	typ := rel.Attrs[rel.FlagHolder].Type.Entity
	switch x := arg.(type) {
	case *plan.EntitySource, *plan.AllOf:
		c.send(order{cmd: wire.Command{Kind: wire.CEnableAll}, rel: rel.Name})
		return true
	case *plan.Const:
		for _, v := range x.Vals {
			c.send(order{cmd: wire.Command{Kind: wire.CEnable, Entity: v.S}, rel: rel.Name, typ: typ})
		}
		return true
	case *plan.Empty:
		return true
	case *plan.SelectEntity:
		return c.enable(rel, x.In) // a superset; α filters
	case *plan.SetOp:
		if !x.Union {
			// Either side is a superset of the intersection: prefer one
			// the residents can do alone.
			if c.enable(rel, x.R) {
				return true
			}
			return c.enable(rel, x.L)
		}
		return c.enable(rel, x.L) && c.enable(rel, x.R)
	case *plan.Project:
		if len(c.states) > 1 {
			// A trigger sees only its own resident's packets, but entities
			// with one identifier are one entity across residents.
			return false
		}
		if h := c.states[0].hello; !h.Has(wire.CapTriggers) && !(h.Has(wire.CapEntityTriggers) && onEntityScan(x)) {
			return false // e.g. a kernel resident, on a sensed relation
		}
		return c.trigger(rel, x)
	}
	return false
}

// trigger handles the rewriter's join restriction,
// π[F = u.A](πT[from begin of u | after u to …](σ[…](α_u(…)))): whenever
// u's sensor delivers a packet, the resident enables sensor for the
// packet's attribute A, from then on — no later than the argument — and
// its entity selection, the same over an entity relation's scan.
// Equalities with constants among the conditions on u travel with the
// trigger; other conditions are left to α.
func (c *commander) trigger(rel *algebra.Relation, p *plan.Project) bool {
	if len(p.Targets) != 1 {
		return false
	}
	col, ok := p.Targets[0].Expr.(*expr.Col)
	if !ok {
		return false
	}
	pt, ok := p.In.(*plan.ProjectT)
	if !ok || pt.Valid.From == nil {
		return false
	}
	var conds []expr.Expr
	n := pt.In
	if s, ok := n.(*plan.Select); ok {
		conds = expr.Conjuncts(s.Pred)
		n = s.In
	}
	var on string
	var onRel *algebra.Relation
	var while bool
	switch u := n.(type) {
	case *plan.Alpha:
		if u.Var != col.Var {
			return false
		}
		on, onRel = u.Rel.Name, u.Rel
	case *plan.Scan:
		if u.Rel.Derived {
			// Two-phase: a count over a derived relation (twophase.go).
			return u.Var == col.Var && isBeginOf(pt.Valid.From, u.Var) && c.counting(rel, col, conds, u)
		}
		// The entity-selection argument, π[F = p.A](πT[from begin of p to
		// end of p | "forever"](σ[…](p))) over an entity relation: the
		// resident sees the entity's tuples begin as they do, and enables
		// from that instant — exactly while the tuple matches (While) when
		// the argument ends with the tuple, from the first match on when it
		// runs to forever. Conditions that do not travel (not equalities
		// with constants) widen it: a superset, which α filters.
		if u.Var != col.Var || u.Rel.Class != algebra.ClassEntity || u.Rel.Derived || !isBeginOf(pt.Valid.From, u.Var) {
			return false
		}
		if to, ok := pt.Valid.To.(*expr.TConst); !ok || to.T != algebra.Forever {
			if !isEndOf(pt.Valid.To, u.Var) || !c.states[0].hello.Has(wire.CapWhile) {
				return false
			}
			while = true
		}
		on, onRel = u.Rel.Name, u.Rel
	default:
		return false
	}
	cmd := wire.Command{Kind: wire.CTrigger, Attr: uint16(col.Attr), While: while}
	for _, cond := range conds {
		b, ok := cond.(*expr.Binary)
		if !ok || b.Op != expr.OpEq {
			continue
		}
		l, lok := b.X.(*expr.Col)
		k, kok := b.Y.(*expr.Const)
		if !lok || !kok || c.fleet && l.Attr == len(onRel.Attrs)-1 {
			continue // (a fleet's Host is not the resident's: widened)
		}
		cmd.Conds = append(cmd.Conds, wire.Cond{Attr: uint16(l.Attr), Value: wireValue(k.V)})
	}
	c.next++
	cmd.ID = c.next
	c.send(order{cmd: cmd, rel: rel.Name, on: on})
	return true
}

// onEntityScan reports whether a join restriction's trigger is an entity
// relation's scan (the entity-selection argument), which a resident with
// wire.CapEntityTriggers evaluates.
func onEntityScan(p *plan.Project) bool {
	_, ok := EntitySelection(p)
	return ok
}

// EntitySelection returns the selection of an entity-selection argument
// π[F = u.A](πT[…](σ[sel](u))) over an entity relation's scan u (nil:
// none), and whether p is one.
func EntitySelection(p plan.Node) (sel *plan.Select, ok bool) {
	pr, ok := p.(*plan.Project)
	if !ok {
		return nil, false
	}
	pt, ok := pr.In.(*plan.ProjectT)
	if !ok {
		return nil, false
	}
	n := pt.In
	if s, ok := n.(*plan.Select); ok {
		sel, n = s, s.In
	}
	u, ok := n.(*plan.Scan)
	return sel, ok && u.Rel.Class == algebra.ClassEntity
}

// isBeginOf reports whether e is `begin of` variable v.
func isBeginOf(e expr.TExpr, v int) bool {
	b, ok := e.(*expr.TBeginEnd)
	if !ok || b.End {
		return false
	}
	x, ok := b.X.(*expr.TVar)
	return ok && x.Var == v
}

// isEndOf reports whether e is `end of` variable v.
func isEndOf(e expr.TExpr, v int) bool {
	b, ok := e.(*expr.TBeginEnd)
	if !ok || !b.End {
		return false
	}
	x, ok := b.X.(*expr.TVar)
	return ok && x.Var == v
}

func wireValue(v algebra.Value) wire.Value {
	switch v.K {
	case algebra.KindEntity:
		return wire.Value{Kind: wire.VEntity, S: v.S}
	case algebra.KindEnum:
		return wire.Value{Kind: wire.VEnum, N: uint64(v.N)}
	case algebra.KindString:
		return wire.Value{Kind: wire.VString, S: v.S}
	case algebra.KindFloat:
		return wire.Value{Kind: wire.VFloat, N: uint64(v.N)}
	case algebra.KindBool:
		return wire.Value{Kind: wire.VBool, N: uint64(v.N)}
	case algebra.KindTime:
		return wire.Value{Kind: wire.VTime, N: uint64(v.N)}
	case algebra.KindDuration:
		return wire.Value{Kind: wire.VDuration, N: uint64(v.N)}
	}
	return wire.Value{Kind: wire.VInt, N: uint64(v.N)}
}

// startLive starts the network's live run, following descendants as f
// says (nil: not).
func startLive(net *exec.Network, start algebra.Time, f *exec.Follow) *exec.Live {
	live := net.Live(start)
	if f != nil {
		run := *f
		live.SetFollow(&run)
	}
	return live
}
