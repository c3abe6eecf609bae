package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/sensor"
)

// Plan fragments (rewrite.PlaceProgram, wire.CPlan): a program whose
// plans read one resident's data only — joins of its relations and
// aggregates over them included — runs at that resident, which sends its
// results (derived tuples) instead of its packets. Both ends run this
// package: the monitor sends the program's text (placedRun) and the
// resident compiles it again over its own sensor description and runs it
// with RunLive over a session of its own (RunFragment), so the answer is
// the one a monitor would compute, by the same code, over the same
// packets; the monitor takes it with the fragment's observation.

// MaxFragmentLimit bounds the operator state a plan fragment may hold at
// a resident (bytes, exec.Budget's accounting): a monitor asking for more
// is refused; DefaultFragmentLimit is what one that names none gets.
const (
	MaxFragmentLimit     = 256 << 20
	DefaultFragmentLimit = 64 << 20
)

// MaxFragmentOpen bounds the result tuples a fragment has begun and not
// yet ended (it names each across the wire until its end): past it the
// fragment stops, reporting where (PResultLost).
const MaxFragmentOpen = 1 << 20

// finishWait bounds how long a monitor waits, at its run's end, for a
// plan fragment's last results.
const finishWait = 10 * time.Second

// PlanCommand is the CPlan that runs p at a resident, within limit bytes
// of operator state (0: the resident's default).
func PlanCommand(p *query.Program, limit int64) wire.Command {
	texts := make([]string, len(p.Sources))
	for i, s := range p.Sources {
		texts[i] = s.Text
	}
	var args []string
	for _, k := range slices.Sorted(maps.Keys(p.Params)) {
		args = append(args, k+"="+p.Params[k])
	}
	return wire.Command{Kind: wire.CPlan, Text: strings.Join(texts, "\n"), Args: args, Limit: limit}
}

// placeable reports whether RunLive runs p as a plan fragment at its one
// resident, and why not (Placement, and what the run asks of the
// monitor's own network: a tap, following descendants).
func placeable(p *query.Program, conns []wire.Conn, plans []plan.Node, opts LiveOptions) (bool, string) {
	switch {
	case opts.Tap != nil:
		return false, "recording (the tap sees packets)"
	case opts.Follow != nil:
		return false, "following descendants"
	case slices.ContainsFunc(conns, isDurable):
		return false, "durable sessions (a resumed monitor reads every frame again)"
	}
	hellos := make([]*wire.Hello, len(conns))
	for i, c := range conns {
		hellos[i] = c.Hello()
	}
	pl := Placement(p, plans, hellos, opts.Naive)
	return pl.Resident || pl.Costly && opts.PlaceCostly, pl.Why
}

// Placement is where a live run of p's final plans over residents that
// said hellos runs them (--explain says it): at the one resident, when it
// runs plans and rewrite.PlaceProgram places them, or at the monitor, and
// why.
func Placement(p *query.Program, plans []plan.Node, hellos []*wire.Hello, naive bool) rewrite.ProgramPlacement {
	why := ""
	switch {
	case p.Catalog.Fleet:
		// A fleet's plans: the rule "per-host plans" says whether each
		// host runs them whole (fragment_fleet.go), if the hosts can.
		pl := rewrite.PlaceProgram(p.Catalog, plans...)
		why := perHostPlaceable(hellos)
		if why == "" {
			why = unplaceable(p, naive)
		}
		if pl.PerHost && why != "" {
			why = "each host could run it whole (" + pl.String() + "), but " + why
			pl.Resident, pl.PerHost, pl.Costly, pl.Why = false, false, false, why
		}
		return pl
	case len(hellos) != 1:
		why = "more than one resident"
	case !hellos[0].Has(wire.CapPlans):
		why = "the resident does not run plans"
	default:
		if why = unplaceable(p, naive); why == "" {
			return rewrite.PlaceProgram(p.Catalog, plans...)
		}
	}
	return rewrite.ProgramPlacement{Why: why}
}

// unplaceable says why p's plans cannot be sent to a resident whatever
// the residents ("" : they can).
func unplaceable(p *query.Program, naive bool) string {
	switch {
	case naive:
		return "naive plans"
	case p.Sources == nil:
		return "a program without its text"
	case p.UsesNow:
		return "it names now"
	}
	return ""
}

// placedRun is RunLive for a program placed at its one resident: it
// sends the CPlan, renews the lease and takes the resident's result
// packets as the statements' answers, with the fragment's observation as
// the run's.
//
// host, when not "", runs the program at that host of a fleet
// (perHostRun: FleetHostArg).
func placedRun(ctx context.Context, p *query.Program, conn wire.Conn, plans []plan.Node, opts LiveOptions, stats LiveStats, host string) ([]query.Result, LiveStats, error) {
	h := conn.Hello()
	global := func(mono int64) algebra.Time {
		if mono == math.MaxInt64 {
			return algebra.Forever
		}
		return h.WallBase + (mono - h.MonoBase)
	}
	// The fragment's bound is the resident's (its default), or the
	// program's memory budget when that is smaller.
	var limit int64
	if b := p.Budget(); b != nil && b.Limit > 0 && b.Limit < MaxFragmentLimit {
		limit = b.Limit
	}
	cmd := PlanCommand(p, limit)
	if host != "" {
		cmd.Args = append(cmd.Args, FleetHostArg+"="+host)
	}
	stats.Placed = true
	if err := conn.Send(&cmd); err != nil {
		return nil, stats, fmt.Errorf("resident %s: plan fragment: %w", h.Name, err)
	}

	cols := make([]*exec.Collector, len(p.Stmts))
	for i, r := range p.Stmts {
		c := exec.NewCollector(r.Result)
		c.Observed, c.Discard = true, opts.Discard
		if opts.OnElem != nil {
			c.OnElem = func(e stream.Elem) { opts.OnElem(i, e) }
		}
		cols[i] = c
	}
	stopRenew := renewLeases([]wire.Conn{conn}, opts.Lease)
	defer stopRenew()
	// The results are received until the resident ends the session: at
	// the run's end the monitor asks the fragment to finish (a CPlan
	// without text) and takes what its network settles at its end (as
	// RunLive's own Finish does), within finishWait.
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	batches, _ := receive(rctx, []wire.Conn{conn}, nil, 1)
	var deadline <-chan time.Time
	if opts.Duration > 0 {
		deadline = time.After(opts.Duration)
	}
	stopCtx := ctx.Done()
	var finishing <-chan time.Time
	// A resident that refuses the fragment (over a network, commands are
	// not answered) never says it started: past startWait the run ends,
	// saying so, rather than answer nothing in silence.
	startWait := time.After(finishWait)
	bye := func() {
		stopCtx, deadline = nil, nil
		finishing = time.After(finishWait)
		if err := conn.Send(&wire.Command{Kind: wire.CPlan}); err != nil { // finish
			finishing = time.After(0)
		}
	}
	dec := NewResultDecoder()
	gaps := map[string][]Gap{}
	var wireBuf []byte
	start, end, started := algebra.Beginning, algebra.Beginning, false
	done := false
	for !done {
		var r received
		select {
		case <-stopCtx:
			bye()
			continue
		case <-deadline:
			bye()
			continue
		case <-finishing:
			done = true
			continue
		case <-startWait:
			if !started {
				stats.SessionLost = &SessionLostError{Resident: h.Name, Since: start,
					Err: fmt.Errorf("plan fragment not started within %v (refused? see the resident's log)", finishWait), Format: opts.TimeFormat}
				done = true
			}
			continue
		case r = <-batches:
		}
		if r.err != nil {
			if !errors.Is(r.err, io.EOF) && finishing == nil && stats.SessionLost == nil {
				stats.SessionLost = &SessionLostError{Resident: h.Name, Since: end, Err: r.err, Format: opts.TimeFormat}
			}
			break
		}
		if err := countWire(r.b, &stats, opts.WireBytes, &wireBuf); err != nil {
			return nil, stats, err
		}
		for i := range r.b.Packets {
			pk := &r.b.Packets[i]
			t := global(pk.TS)
			switch pk.Kind {
			case wire.PResultStart:
				start, end, started = t, t, true
				// The lease once the fragment's commands are carried out,
				// as a monitor's own run sends it after its enables (a
				// demo subject starts at the first lease: without it, one
				// waiting briefly for a monitor ended unwatched; sent
				// before, its first moments went unobserved).
				conn.Send(&wire.Command{Kind: wire.CLease, Period: int64(opts.Lease)})
				if opts.Ready != nil {
					opts.Ready() // the fragment's commands are carried out
				}
				if opts.Started != nil {
					opts.Started(t)
				}
			case wire.PResultBegin, wire.PResultEvent, wire.PResultEnd:
				stmt, e, err := dec.Elem(pk, t)
				if err == nil && stmt >= len(cols) {
					err = fmt.Errorf("a result of statement %d of %d", stmt+1, len(cols))
				}
				if err != nil {
					return nil, stats, fmt.Errorf("resident %s: %w", h.Name, err)
				}
				cols[stmt].Push(e)
			case wire.PResultLoss:
				if len(pk.Vals) == 2 {
					l := Loss{Rel: pk.Vals[0].S, Gap: Gap{From: global(pk.Begin), To: t, Lost: pk.Vals[1].N}}
					gaps[l.Rel] = append(gaps[l.Rel], l.Gap)
					if opts.OnLoss != nil {
						opts.OnLoss(l)
					}
				}
			case wire.PResultLost:
				why := "stopped"
				if len(pk.Vals) > 0 {
					why = pk.Vals[0].S
				}
				// What it sent is right; what its network had not settled
				// when it stopped is missing, before t too: the answer is
				// incomplete from the fragment's start.
				if stats.SessionLost == nil {
					stats.SessionLost = &SessionLostError{Resident: h.Name, Since: start,
						Err: fmt.Errorf("plan fragment stopped at %s, %s", algebra.FormatTime(t, opts.TimeFormat), why), Format: opts.TimeFormat}
				}
				done = true
			}
		}
		if started && global(r.b.Watermark) > end && r.b.Watermark != math.MaxInt64 {
			end = global(r.b.Watermark)
			if opts.Progress != nil {
				opts.Progress(end)
			}
		}
		if rel, ok := conn.(wire.Releaser); ok {
			rel.Release(r.b)
		}
	}
	stopRenew()
	conn.Close()
	for _, c := range cols {
		c.Advance(algebra.Forever)
	}
	if !started && stats.SessionLost == nil {
		stats.SessionLost = &SessionLostError{Resident: h.Name, Since: start,
			Err: errors.New("plan fragment never started (refused? see the resident's log)"), Format: opts.TimeFormat}
	}
	stats.Start, stats.End = start, max(start, end)
	for _, name := range programRels(plans) {
		stats.Observed = append(stats.Observed, Observation{Rel: name, From: stats.Start, To: stats.End, Gaps: gaps[name]})
	}
	out := make([]query.Result, len(p.Stmts))
	for i, r := range p.Stmts {
		out[i] = query.Result{Stmt: r, Table: cols[i].Table()}
	}
	if stats.SessionLost != nil {
		return out, stats, stats.SessionLost
	}
	return out, stats, nil
}

// programRels are the primitive relations plans read, sorted.
func programRels(plans []plan.Node) []string {
	var out []string
	for _, root := range plans {
		plan.Walk(root, func(n plan.Node) {
			switch x := n.(type) {
			case *plan.Alpha:
				out = append(out, x.Rel.Name)
			case *plan.Scan:
				if !x.Rel.Derived && !x.Rel.IsClock() {
					out = append(out, x.Rel.Name)
				}
			case *plan.EntitySource:
				out = append(out, x.Rel.Name)
			}
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The kinds of result values on the wire: every algebra value goes with
// its N and S (an enumeration member's name, an entity's identifier), so
// it comes back equal.
var toWireKind = [...]wire.ValueKind{algebra.KindEntity: wire.VEntity, algebra.KindEnum: wire.VEnum,
	algebra.KindInt: wire.VInt, algebra.KindFloat: wire.VFloat, algebra.KindString: wire.VString,
	algebra.KindBool: wire.VBool, algebra.KindTime: wire.VTime, algebra.KindDuration: wire.VDuration}

var fromWireKind = [...]algebra.Kind{wire.VEntity: algebra.KindEntity, wire.VEnum: algebra.KindEnum,
	wire.VInt: algebra.KindInt, wire.VFloat: algebra.KindFloat, wire.VString: algebra.KindString,
	wire.VBool: algebra.KindBool, wire.VTime: algebra.KindTime, wire.VDuration: algebra.KindDuration}

// toWire appends vals as result values; false if one has no wire kind.
func toWire(dst []wire.Value, vals []algebra.Value) ([]wire.Value, bool) {
	for _, v := range vals {
		if int(v.K) >= len(toWireKind) || toWireKind[v.K] == 0 {
			return dst, false
		}
		dst = append(dst, wire.Value{Kind: toWireKind[v.K], N: uint64(v.N), S: v.S})
	}
	return dst, true
}

// fromWire is toWire's inverse.
func fromWire(vals []wire.Value) []algebra.Value {
	out := make([]algebra.Value, len(vals))
	for i, v := range vals {
		k := algebra.KindInvalid
		if int(v.Kind) < len(fromWireKind) {
			k = fromWireKind[v.Kind]
		}
		out[i] = algebra.Value{K: k, N: int64(v.N), S: v.S}
	}
	return out
}

// FragmentSink is where RunFragment hands a plan fragment's results: Put
// gets the result packets settled up to the watermark wm (the resident's
// clock), in order; false stops the fragment (its output bound). Stop
// reports why it stopped, and where: nothing after at was observed.
type FragmentSink interface {
	Put(pks []wire.Packet, wm int64) bool
	Stop(at int64, why string)
}

// RunFragment runs the plan fragment cmd (a CPlan) at a resident — the
// program compiled over the resident's own description (hello's), run
// live over conn, a session of that resident — until ctx ends or the
// session does, handing its results to sink. It returns the reason the
// command is refused, before anything runs.
func RunFragment(ctx context.Context, conn wire.Conn, cmd *wire.Command, sink FragmentSink) error {
	conn = inner{conn}
	h := conn.Hello()
	limit := cmd.Limit
	switch {
	case limit < 0 || limit > MaxFragmentLimit:
		return fmt.Errorf("limit %d bytes out of range (at most %d)", limit, MaxFragmentLimit)
	case limit == 0:
		limit = DefaultFragmentLimit
	}
	host, args, err := fleetHost(cmd.Args)
	if err != nil {
		return err
	}
	var cat *algebra.Catalog
	if host != "" {
		// A host of a fleet (perHostRun): a fleet of one.
		conn = asHost{conn, host}
		h = conn.Hello()
		cat, _, err = FleetCatalog([]*wire.Hello{h}, true)
	} else {
		cat, err = sensor.CompileText(h.Name+".sdl", h.SDL)
	}
	if err != nil {
		return err
	}
	params, err := query.ParseParams(args)
	if err != nil {
		return err
	}
	prog, err := query.Compile(cat, []query.Source{{Name: "fragment", Text: cmd.Text}}, check.Options{Params: params})
	if err != nil {
		return err
	}
	if prog.UsesNow {
		return errors.New("a plan fragment cannot name now")
	}
	prog = prog.WithBudget(&exec.Budget{Limit: limit})
	mono := func(t algebra.Time) int64 {
		if t >= algebra.Forever {
			return math.MaxInt64
		}
		return h.MonoBase + (t - h.WallBase)
	}
	f := NewResultEncoder(mono)
	stopped := false
	stop := func(at algebra.Time, why string) {
		if !stopped {
			stopped = true
			sink.Stop(mono(at), why)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		var last algebra.Time
		// A fault in the fragment must not end the subject's process: it
		// ends the fragment, said as its stop.
		defer func() {
			if p := recover(); p != nil {
				conn.Close()
				stop(last, fmt.Sprintf("failed: %v", p))
			}
		}()
		_, ist, err := RunLive(ctx, prog, []wire.Conn{conn}, LiveOptions{
			Discard: true,
			Started: func(from algebra.Time) {
				last = from
				f.pend = append(f.pend, wire.Packet{Kind: wire.PResultStart, TS: mono(from)})
			},
			OnElem: func(stmt int, e stream.Elem) {
				f.Add(stmt, e)
			},
			OnLoss: func(l Loss) {
				f.pend = append(f.pend, wire.Packet{Kind: wire.PResultLoss, TS: mono(l.To), Begin: mono(l.From),
					Vals: []wire.Value{{Kind: wire.VString, S: l.Rel}, {Kind: wire.VInt, N: l.Lost}}})
			},
			Progress: func(t algebra.Time) {
				if f.Err() != "" {
					stop(last, f.Err())
					cancel()
					return
				}
				if !sink.Put(f.Take(), mono(t)) {
					stop(last, "over its output bound (the monitor did not keep up)")
					cancel()
					return
				}
				last = t
			},
		})
		switch {
		case f.Err() != "":
			stop(last, f.Err())
		case errors.Is(err, exec.ErrMemory):
			stop(last, fmt.Sprintf("over its state bound (%d bytes)", limit))
		case err != nil && ctx.Err() == nil:
			stop(last, err.Error())
		default:
			// Ended (the resident closed, the monitor said bye): what the
			// network settled at its end is sent, to where it observed.
			last = max(last, ist.End)
			if !sink.Put(f.Take(), mono(last)) {
				stop(last, "over its output bound (the monitor did not keep up)")
			}
			stop(last, "")
		}
	}()
	return nil
}

// ResultEncoder turns a fragment's result elements into result packets
// (RunFragment; the differential tests), naming each result tuple from
// its begin to its end.
type ResultEncoder struct {
	pend []wire.Packet
	open map[*stream.Rec]wire.Packet // begun, not ended: their begin
	next uint64
	err  string // why the fragment must stop ("": it need not)
	mono func(algebra.Time) int64
}

// NewResultEncoder makes an encoder stamping packets with mono(t).
func NewResultEncoder(mono func(algebra.Time) int64) *ResultEncoder {
	return &ResultEncoder{open: map[*stream.Rec]wire.Packet{}, mono: mono}
}

// Add encodes a result element of statement stmt. Past MaxFragmentOpen
// open tuples, or for a value with no wire kind, it encodes nothing more
// and Err says why.
func (f *ResultEncoder) Add(stmt int, e stream.Elem) {
	if f.err != "" {
		return
	}
	pk := wire.Packet{TS: f.mono(e.T), Sensor: uint16(stmt)}
	switch e.Kind {
	case stream.End:
		b, ok := f.open[e.Rec]
		if !ok {
			return // begun at forever, or not at all: nothing to end
		}
		delete(f.open, e.Rec)
		pk.Kind, pk.Tuple = wire.PResultEnd, b.Tuple
		f.pend = append(f.pend, pk)
		return
	case stream.Begin:
		if len(f.open) >= MaxFragmentOpen {
			f.err = fmt.Sprintf("over its bound of %d open result tuples", MaxFragmentOpen)
			return
		}
		f.next++
		pk.Kind, pk.Tuple = wire.PResultBegin, f.next
	default:
		pk.Kind = wire.PResultEvent
	}
	vals, ok := toWire(nil, e.Rec.Vals)
	if !ok {
		f.err = "a result value with no wire kind"
		return
	}
	pk.Vals = vals
	if pk.Kind == wire.PResultBegin {
		f.open[e.Rec] = pk
	}
	f.pend = append(f.pend, pk)
}

// Take returns the packets encoded since the last Take.
func (f *ResultEncoder) Take() []wire.Packet {
	p := f.pend
	f.pend = nil
	return p
}

// Err says why the encoder stopped ("": it did not).
func (f *ResultEncoder) Err() string { return f.err }

// ResultDecoder turns result packets back into elements (placedRun; the
// differential tests).
type ResultDecoder struct {
	open map[uint64]*stream.Rec
}

// NewResultDecoder makes a decoder.
func NewResultDecoder() *ResultDecoder { return &ResultDecoder{open: map[uint64]*stream.Rec{}} }

// Elem decodes a result packet (PResultBegin, PResultEnd, PResultEvent)
// stamped t on the global clock: its statement and element.
func (d *ResultDecoder) Elem(pk *wire.Packet, t algebra.Time) (int, stream.Elem, error) {
	e := stream.Elem{T: t}
	switch pk.Kind {
	case wire.PResultEnd:
		e.Kind, e.Rec = stream.End, d.open[pk.Tuple]
		delete(d.open, pk.Tuple)
		if e.Rec == nil {
			return 0, e, fmt.Errorf("the end of result tuple %d, never begun", pk.Tuple)
		}
	case wire.PResultBegin:
		e.Kind, e.Rec = stream.Begin, &stream.Rec{Vals: fromWire(pk.Vals), From: t}
		d.open[pk.Tuple] = e.Rec
	case wire.PResultEvent:
		e.Kind, e.Rec = stream.Event, &stream.Rec{Vals: fromWire(pk.Vals), From: t}
	default:
		return 0, e, fmt.Errorf("a %s packet is no result", pk.Kind)
	}
	return int(pk.Sensor), e, nil
}

// inner is the fragment's own session: its run is the fragment, not
// placed again (its hello says no plans).
type inner struct{ wire.Conn }

func (c inner) Hello() *wire.Hello {
	h := *c.Conn.Hello()
	h.Caps = slices.DeleteFunc(slices.Clone(h.Caps), func(c string) bool { return c == wire.CapPlans })
	return &h
}

// Placeable reports whether a program's rewritten plans are placed at a
// resident that runs plans (rewrite.PlaceProgram and the program's own
// conditions) by a run with opts (PlaceCostly; the run's other options
// may still keep it at the monitor).
func Placeable(p *query.Program, opts LiveOptions) bool {
	rw, err := p.Rewritten(false)
	if err != nil {
		return false
	}
	plans := make([]plan.Node, len(rw))
	for i, r := range rw {
		plans[i] = r.Final
	}
	ok, _ := placeable(p, []wire.Conn{planner{}}, plans, LiveOptions{PlaceCostly: opts.PlaceCostly})
	return ok
}

// planner is a connection's hello only: a resident that runs plans.
type planner struct{ wire.Conn }

func (planner) Hello() *wire.Hello { return &wire.Hello{Caps: []string{wire.CapPlans}} }
