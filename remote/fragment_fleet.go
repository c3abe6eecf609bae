package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/wire"
)

// Per-host plans (rewrite.PlacePerHost): a fleet's program whose every
// result tuple is one host's, and names it, runs whole at each host as a
// plan fragment, and the monitor's answer is the union of the hosts'.
// The monitor sends each host the program's text with the host's name
// (the argument FleetHostArg); the host compiles it over a fleet of one —
// its own description with Host on every relation (FleetCatalog) — and
// runs it over a session whose identifiers are qualified with that name,
// so its results are exactly the tuples the monitor's own fleet run would
// derive from that host's packets. The hosts' answers are disjoint (each
// names its host): the monitor concatenates them.

// FleetHostArg is the CPlan argument that asks a resident to run the
// program as host NAME of a fleet ("tqmon.host=NAME"): not a $NAME a
// program can name (a parameter's name is an identifier, without a dot).
const FleetHostArg = "tqmon.host"

// fleetHost takes FleetHostArg out of a CPlan's arguments: the host, and
// the program's own arguments.
func fleetHost(args []string) (string, []string, error) {
	host, rest := "", make([]string, 0, len(args))
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		if k != FleetHostArg {
			rest = append(rest, a)
			continue
		}
		if v == "" || strings.ContainsAny(v, "/ \t\n") {
			return "", nil, fmt.Errorf("a fleet host named %q", v)
		}
		host = v
	}
	return host, rest, nil
}

// asHost is a fragment's own session seen as host name of a fleet of
// one: its hello is named by the host, so RunLive qualifies its entity
// identifiers as the monitor does (HOST/ID).
type asHost struct {
	wire.Conn
	name string
}

func (c asHost) Hello() *wire.Hello {
	h := *c.Conn.Hello()
	h.Name = c.name
	return &h
}

// isDurable reports whether c is a durable session (fleet.Dial's, for a
// monitor that can resume): a plan fragment is not placed over one — a
// resumed monitor reads the session's frames again from the first and
// would start the fragment again.
func isDurable(c wire.Conn) bool {
	d, ok := c.(interface{ Durable() bool })
	return ok && d.Durable()
}

// perHostPlaceable says whether the hosts that said hellos run a fleet's
// program placed per host: each runs plans, and all announce the same
// description (a host compiles the program over its own: over a
// description another host lacks, a relation the program reads could be
// missing there).
func perHostPlaceable(hellos []*wire.Hello) string {
	for _, h := range hellos {
		switch {
		case !h.Has(wire.CapPlans):
			return "host " + h.Name + " does not run plans"
		case h.SDL != hellos[0].SDL:
			return "hosts " + hellos[0].Name + " and " + h.Name + " announce different descriptions"
		}
	}
	return ""
}

// perHostRun is RunLive for a fleet's program placed per host: a plan
// fragment at each host (placedRun, at once), their answers' union as
// the statements' answers. Each host's observation is its own: the
// run's observation of a relation holds each host's span
// (Observation.Hosts) and gaps (Gap.Host); a host lost, or whose fragment
// stops, is reported as a lost session (exit 3) while the others' answers
// stand; hosts found late (LateHosts) are reported as RunLive reports
// them (LateHostsError, exit 3). The answer's elements reach opts.OnElem as they settle, each
// statement's in time order across the hosts (hostMerge).
func perHostRun(ctx context.Context, p *query.Program, conns []wire.Conn, plans []plan.Node, opts LiveOptions, stats LiveStats) ([]query.Result, LiveStats, error) {
	type outcome struct {
		res   []query.Result
		stats LiveStats
		cut   algebra.Time // its rows end by it (hostMerge.finish)
		err   error
	}
	outs := make([]outcome, len(conns))
	var mu sync.Mutex
	// The run is ready (opts.Ready, opts.Started: from the earliest
	// host's start) once every host has started its fragment or ended
	// without (refused, lost before it started: a host that never starts
	// must not hold the others' answer back).
	settled, first := 0, algebra.Forever
	m := newHostMerge(len(conns), len(p.Stmts), opts)
	settle := func(i int, t algebra.Time, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		settled++
		if ok {
			first = min(first, t)
			m.start(i, t)
		}
		m.settled = settled == len(conns)
		m.release()
		if settled == len(conns) {
			if opts.Ready != nil {
				opts.Ready()
			}
			if opts.Started != nil && first < algebra.Forever {
				opts.Started(first)
			}
		}
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		host := c.Hello().Name
		o := opts
		// Each host's elements reach hostMerge (o.OnElem); under
		// opts.Discard its rows are not kept (the tables are empty).
		o.Ready = nil
		o.OnElem = func(stmt int, e stream.Elem) {
			mu.Lock()
			defer mu.Unlock()
			m.add(i, stmt, e)
		}
		o.Progress = func(t algebra.Time) {
			mu.Lock()
			defer mu.Unlock()
			m.advance(i, t)
		}
		var once sync.Once
		o.Started = func(t algebra.Time) { once.Do(func() { settle(i, t, true) }) }
		if opts.OnLoss != nil {
			o.OnLoss = func(l Loss) {
				mu.Lock()
				defer mu.Unlock()
				l.Host = host
				opts.OnLoss(l)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := LiveStats{Wanted: map[string]uint64{}, Dropped: map[string]uint64{}}
			res, st, err := placedRun(ctx, p, c, plans, o, st, host)
			once.Do(func() { settle(i, 0, false) })
			mu.Lock()
			cut := m.finish(i, st.SessionLost)
			mu.Unlock()
			outs[i] = outcome{res, st, cut, err}
		}()
	}
	wg.Wait()
	stats.Placed = true
	stats.Start, stats.End = algebra.Forever, algebra.Beginning
	tables := make([]*algebra.Table, len(p.Stmts))
	for i, r := range p.Stmts {
		tables[i] = &algebra.Table{Rel: r.Result}
	}
	obs := map[string]*Observation{}
	var lost error
	for i, out := range outs {
		host := conns[i].Hello().Name
		if out.err != nil && !errors.Is(out.err, ErrIncomplete) {
			return nil, stats, out.err
		}
		if out.err != nil && lost == nil {
			lost = out.err
			stats.SessionLost = out.stats.SessionLost
		}
		stats.WireTuples += out.stats.WireTuples
		stats.WireBytes += out.stats.WireBytes
		stats.Start, stats.End = min(stats.Start, out.stats.Start), max(stats.End, out.stats.End)
		// A host lost at T: its tuples still valid at T end just after
		// it, what it sent after is dropped (as the monitor's own fleet
		// run cuts a lost host: observer.cutHost).
		cut, lostHost := algebra.Forever, out.stats.SessionLost != nil
		if lostHost {
			cut = min(algebra.Next(out.stats.SessionLost.Since), algebra.Forever)
		}
		for j, r := range out.res {
			if r.Table == nil {
				continue
			}
			for _, row := range r.Table.Rows {
				if row.From >= out.cut {
					continue
				}
				row.To = min(row.To, out.cut)
				tables[j].Rows = append(tables[j].Rows, row)
			}
		}
		for _, ho := range out.stats.Observed {
			o := obs[ho.Rel]
			if o == nil {
				o = &Observation{Rel: ho.Rel, From: ho.From, To: ho.To}
				obs[ho.Rel] = o
			}
			o.From, o.To = min(o.From, ho.From), max(o.To, ho.To)
			for _, g := range ho.Gaps {
				g.Host = host
				o.Gaps = append(o.Gaps, g)
			}
			o.Hosts = append(o.Hosts, HostSpan{Host: host, From: ho.From, To: min(ho.To, cut), Lost: lostHost})
			if lostHost {
				o.Hosts[len(o.Hosts)-1].To = cut
			}
		}
	}
	stats.End = max(stats.Start, stats.End)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range obs {
			if !yield(k) {
				return
			}
		}
	}) {
		stats.Observed = append(stats.Observed, *obs[name])
	}
	out := make([]query.Result, len(p.Stmts))
	for i, r := range p.Stmts {
		tables[i].SortRows()
		if opts.Discard {
			tables[i] = &algebra.Table{Rel: r.Result}
		}
		out[i] = query.Result{Stmt: r, Table: tables[i]}
	}
	// Hosts the glob matched but found only after the run began are
	// reported as RunLive's own fleet run reports them (a lost session
	// first): the union above holds none of their tuples.
	stats.Late = lateHosts(conns)
	if lost == nil && len(stats.Late) > 0 {
		lost = &LateHostsError{Hosts: stats.Late}
	}
	return out, stats, lost
}

// hostMerge merges the hosts' result streams of a run placed per host
// (perHostRun) into opts.OnElem as they settle, each statement's in time
// order. Each host's placed run hands it the host's elements as they
// arrive, each statement's in time order (a fragment's network emits
// them so), and its watermark (Progress). A fragment's watermark is its
// input's: a statement's results may come well after it (a join settled
// late), so it does not say where a statement's answer stands. What
// does: a host's last element of a statement (its frontier there) — it
// sends none earlier after it. So an element of statement s at t goes
// out once
//
//   - every host has started or ended without (as the run's Ready: a
//     host not yet started could still begin earlier; one that never
//     starts holds nothing back),
//   - every other host still running has its frontier of s at or past t
//     (a host quiet in s holds s back until it sends or ends: the wire
//     carries no watermark of a fragment's output), and
//   - its own host's watermark is at or past t: whatever ends the host
//     after, its loss is dated at or after that watermark, so nothing let
//     out is something its cut removes.
//
// A host's end (finish) applies perHostRun's rule: lost at T, its tuples
// still open end at cut = T+1 (an End there). What a host sends is at or
// before its watermark, and its loss is dated at or after that: nothing
// it sent begins past its cut. A loss dated before what the host sent (a
// fragment that stops: its loss is dated at its start) cannot take back
// what went out: its cut is then just after the host's last element, and
// perHostRun cuts its rows there too, so the tables hold what the stream
// said. Every element of s let out is at or before each running host's
// frontier of s, so an End at a cut past the host's frontiers keeps the
// order. The caller holds its lock around every method.
type hostMerge struct {
	onElem   func(stmt int, e stream.Elem)
	progress func(t algebra.Time)
	hosts    []mergeHost
	settled  bool         // every host started or ended
	wm       algebra.Time // the least watermark of the running hosts, as last said (Progress)
}

type mergeHost struct {
	started, done bool
	wm            algebra.Time
	front         []algebra.Time      // per statement: its last element's time
	held          [][]stream.Elem     // per statement: not out yet, in time order
	open          map[*stream.Rec]int // begun, not ended: its statement
}

func newHostMerge(hosts, stmts int, opts LiveOptions) *hostMerge {
	m := &hostMerge{onElem: opts.OnElem, progress: opts.Progress, hosts: make([]mergeHost, hosts), wm: algebra.Beginning}
	for i := range m.hosts {
		m.hosts[i].front = make([]algebra.Time, stmts)
		m.hosts[i].held = make([][]stream.Elem, stmts)
		m.hosts[i].open = map[*stream.Rec]int{}
	}
	return m
}

// start: host i started its fragment at t (nothing of its is before t).
func (m *hostMerge) start(i int, t algebra.Time) {
	h := &m.hosts[i]
	h.started, h.wm = true, t
	for s := range h.front {
		h.front[s] = t
	}
}

// add holds host i's element e of statement stmt.
func (m *hostMerge) add(i, stmt int, e stream.Elem) {
	h := &m.hosts[i]
	switch e.Kind {
	case stream.Begin:
		h.open[e.Rec] = stmt
	case stream.End:
		delete(h.open, e.Rec)
	}
	h.front[stmt] = max(h.front[stmt], e.T)
	h.held[stmt] = append(h.held[stmt], e)
}

// advance: host i has sent everything before t.
func (m *hostMerge) advance(i int, t algebra.Time) {
	m.hosts[i].wm = max(m.hosts[i].wm, t)
	m.release()
}

// finish: host i's run ended, lost if lost is not nil. It returns the
// time the host's rows are cut at (Forever: not cut).
func (m *hostMerge) finish(i int, lost *SessionLostError) algebra.Time {
	h := &m.hosts[i]
	h.done = true
	cut := algebra.Forever
	if lost != nil {
		last := lost.Since
		for _, f := range h.front {
			last = max(last, f)
		}
		cut = min(algebra.Next(last), algebra.Forever)
		for rec, s := range h.open {
			if rec.From < cut {
				h.held[s] = append(h.held[s], stream.Elem{Kind: stream.End, T: cut, Rec: rec})
			}
		}
		clear(h.open)
	}
	m.release()
	return cut
}

// release lets out every held element the rules of hostMerge allow, each
// statement's in time order across the hosts (at equal times, the
// earlier host's first), and says the running hosts' least watermark
// when it advances.
func (m *hostMerge) release() {
	if !m.settled {
		return
	}
	for s := range len(m.hosts[0].held) {
		for {
			best := -1
			for i, h := range m.hosts {
				if q := h.held[s]; len(q) > 0 && (best < 0 || q[0].T < m.hosts[best].held[s][0].T) {
					best = i
				}
			}
			if best < 0 || !m.due(best, s, m.hosts[best].held[s][0].T) {
				break // the least held of s waits: so does all of s
			}
			q := m.hosts[best].held[s]
			if m.onElem != nil {
				m.onElem(s, q[0])
			}
			m.hosts[best].held[s] = q[1:]
		}
	}
	wm := algebra.Forever
	for _, h := range m.hosts {
		if h.started && !h.done {
			wm = min(wm, h.wm)
		}
	}
	if wm > m.wm && wm < algebra.Forever {
		m.wm = wm
		if m.progress != nil {
			m.progress(wm)
		}
	}
}

// due says whether host i's element of statement s at t may go out.
func (m *hostMerge) due(i, s int, t algebra.Time) bool {
	if h := m.hosts[i]; !h.done && t > h.wm {
		return false
	}
	for j, h := range m.hosts {
		if j != i && h.started && !h.done && h.front[s] < t {
			return false
		}
	}
	return true
}
