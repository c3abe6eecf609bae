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
	"github.com/tqmon/tqmon/display/export"
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
// stand. The answer's elements reach opts.OnElem once every host has
// ended, in time order (not as they settle).
func perHostRun(ctx context.Context, p *query.Program, conns []wire.Conn, plans []plan.Node, opts LiveOptions, stats LiveStats) ([]query.Result, LiveStats, error) {
	type outcome struct {
		res   []query.Result
		stats LiveStats
		err   error
	}
	outs := make([]outcome, len(conns))
	var mu sync.Mutex
	// The run is ready (opts.Ready, opts.Started: from the earliest
	// host's start) once every host has started its fragment or ended
	// without (refused, lost before it started: a host that never starts
	// must not hold the others' answer back).
	settled, first := 0, algebra.Forever
	settle := func(t algebra.Time, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		settled++
		if ok {
			first = min(first, t)
		}
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
		o.OnElem, o.Discard, o.Progress, o.Ready = nil, false, nil, nil
		var once sync.Once
		o.Started = func(t algebra.Time) { once.Do(func() { settle(t, true) }) }
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
			once.Do(func() { settle(0, false) })
			outs[i] = outcome{res, st, err}
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
				if row.From >= cut {
					continue
				}
				row.To = min(row.To, cut)
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
		if opts.OnElem != nil {
			for _, e := range export.Elems(tables[i]) {
				opts.OnElem(i, e)
			}
		}
		if opts.Discard {
			tables[i] = &algebra.Table{Rel: r.Result}
		}
		out[i] = query.Result{Stmt: r, Table: tables[i]}
	}
	return out, stats, lost
}
