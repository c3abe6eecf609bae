package kernel

import (
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// Fragments (wire.CFragment) at the kernel resident: selections in the
// kernel. A session's fragment on a sensor is a selection on the
// sensor's own attributes; the resident compiles, into the sensor's
// programs, the disjunction of what the sessions that enable the sensor
// select (bpfgen.Sensor.Filter), evaluated before a packet is counted or
// reserved: a packet no session selects costs its probe the enable test
// and the selection, nothing more.
//
// Exactness. The program passes a packet when some session that enables
// the sensor could need it: when any of them has no fragment on the
// sensor (or one without a predicate), the programs select nothing;
// otherwise they evaluate the or of the sessions' distinct predicates
// (equal predicates are compiled once: the queries that agree share it),
// each weakened to what a program evaluates exactly (bpfgen: what it
// cannot is true). The programs may so pass packets that only another
// session's selection passes, and packets a selection passes only in the
// weakened form; the drain sends each session only what its own
// fragments pass, evaluated exactly on the packet's values (the sieve:
// wire.Pred.Eval, the Go resident's evaluator), so over --connect a
// monitor is not sent what it would discard. The remote monitor runs
// every query's σ again (remote's fragments): results never depend on
// the selection, which decides packets and bytes only. The attributes a
// fragment keeps (Keep) are not used: kernel records have a fixed layout.
//
// Counts. A packet the kernel counted wanted (it passed the programs'
// or) that the drain does not send a session — its fragments filter it
// out, it enables the sensor for other entities only, or not at all; an
// interval's end whose begin did not go to it — is not wanted by that
// session (unwant, Session.unwanted): its counts subtract it, so that for
// each session delivered + dropped = wanted, wanted being exactly what
// its own enables and selection passed, as in the Go resident
// (TestKernelConcurrentSelections, TestKernelSessionsOwnEntities). Drops
// in the kernel (a full ring) happen before the drain can tell whose
// packet it was: they are counted for every session — conservative (a
// drop may be of a packet a session would not have been sent), never
// missing.
//
// Cost. A session without a predicate on a sensor is not tested: the
// drain's only extra work per packet is a nil check (the sensor has no
// sieve) or a mask test; a filtered packet costs each distinct predicate
// once (the sessions sharing it share its evaluation), and a session's
// fragments are bounded (maxFragments, wire.MaxPredNodes).
//
// Changes. The selection is recomputed when a fragment comes or goes and
// when a session starts or stops enabling the sensor (its first enable,
// its last disable, its end); when it changed and the sensor is attached,
// its programs are replaced through their stubs' program arrays
// (bpfgen.Stubs: every firing runs the old programs or the new ones) —
// before the command that changed it is reported applied. A selection
// the verifier rejects is not compiled, whether the sensor is attached
// with it or it changes later (place): the programs without a selection
// are installed (more packets, the same results), and Logf says why.
//
// Bounds: at most maxFragments fragments per session, each at most
// wire.MaxPredNodes nodes (Pred.Check), and bpfgen.MaxFilterCmps
// comparisons compiled into a program (a larger disjunction is not
// compiled).

// maxFragments bounds one session's fragments (as the Go resident's): a
// query needs one per sensed range variable with a selection.
const maxFragments = 64

// kfrag is one CFragment of a session.
type kfrag struct {
	sensor int
	pred   *wire.Pred // nil: every packet
	key    string
}

// syscallNumbers are the system call numbers by name (syscallNames,
// reversed): what a selection on a syscall(n) value compares.
var syscallNumbers = func() map[string]uint64 {
	m := make(map[string]uint64, len(syscallNames))
	for n, name := range syscallNames {
		m[name] = n
	}
	return m
}()

// enables reports whether the session enables sensor for some entity or
// all (r.mu).
func (s *Session) enables(sensor int) bool { return s.all.Holds(sensor) || s.perSensor[sensor] > 0 }

// selection returns what sensor ss's programs evaluate for the sessions
// that enable it, and its key ("", nil: every packet) (r.mu).
func (r *Resident) selection(ss *sensorState) (*wire.Pred, string) {
	if r.opts.NoSelections {
		return nil, ""
	}
	preds := map[string]*wire.Pred{}
	for i := range session.Indices(r.sessions.Mask()) {
		s := r.sessions.At(i)
		if !s.enables(ss.s.ID) {
			continue
		}
		has := false
		for _, f := range s.frags {
			if f.sensor != ss.s.ID {
				continue
			}
			if f.pred == nil {
				return nil, ""
			}
			has = true
			preds[f.key] = f.pred
		}
		if !has {
			return nil, ""
		}
	}
	if len(preds) == 0 {
		return nil, ""
	}
	keys := make([]string, 0, len(preds))
	for k := range preds {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 1 {
		return preds[keys[0]], keys[0]
	}
	or := &wire.Pred{Op: wire.POr}
	for _, k := range keys {
		or.Kids = append(or.Kids, *preds[k])
	}
	return or, strings.Join(keys, "|")
}

// refilter replaces sensor ss's programs when its selection changed
// (r.mu).
func (r *Resident) refilter(ss *sensorState) error {
	if ss.att == nil {
		return nil
	}
	sel, key := r.selection(ss)
	entsel := ss.selTrigs > 0
	if key == ss.att.rejected { // not tried again
		sel, key = nil, ""
	}
	if key == ss.att.filter && entsel == ss.att.entsel {
		return nil
	}
	return ss.att.place(ss.s, sel, key, entsel)
}

// place installs sensor s's programs with selection sel (key: its key)
// compiled in. A selection the kernel refuses (its verifier: a program
// too large or too complex, a comparison it cannot follow) is not
// compiled: Logf says why, and the programs without a selection are
// installed instead — more packets, the same results, since the drain's
// sieve still sends each session only what its own fragments pass and
// the monitor selects again (TestRejectedSelectionFallsBack). It is not
// tried again while the sensor stays attached (rejected).
func (a *attachment) place(s *bpfgen.Sensor, sel *wire.Pred, key string, entsel bool) error {
	err := a.install(s, sel, key, entsel)
	if err != nil && key != "" {
		var text []string // as the relation reads (the key is binary)
		for _, p := range s.Filter(sel, syscallNumbers, false).Placed {
			if p != "" && !slices.Contains(text, p) {
				text = append(text, p)
			}
		}
		a.tr.r.opts.Logf("%s: the selection %s is not compiled: %v", s.Rel.Name, strings.Join(text, "; "), err)
		err = a.install(s, nil, "", entsel)
		a.rejected = key
	}
	return err
}

// Placed reports, per sensor attached now, what its programs select in
// the kernel, per binding ("": nothing).
func (r *Resident) Placed() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for _, ss := range r.sensors {
		if ss != nil && ss.att != nil {
			out[ss.s.Rel.Name] = slices.Clone(ss.att.placed)
		}
	}
	return out
}

// fragment carries out CFragment and CUnfragment (r.mu).
func (s *Session) fragment(cmd *wire.Command) error {
	r := s.r
	fail := s.core.Fail
	if r.opts.NoSelections {
		return fail(cmd, "kind", "this kernel resident does not select in the kernel (it does not advertise %q)", wire.CapFragments)
	}
	if cmd.Kind == wire.CUnfragment {
		f := s.frags[cmd.ID]
		if f == nil {
			return fail(cmd, "id", "no fragment %d in this session", cmd.ID)
		}
		delete(s.frags, cmd.ID)
		r.resieve(r.sensors[f.sensor])
		return r.refilter(r.sensors[f.sensor])
	}
	if s.frags[cmd.ID] != nil {
		return fail(cmd, "id", "fragment %d already exists in this session", cmd.ID)
	}
	if len(s.frags) >= maxFragments {
		return fail(cmd, "id", "the session already has %d fragments, the most it may", maxFragments)
	}
	ss, err := s.sensorArg(cmd)
	if err != nil {
		return err
	}
	f := &kfrag{sensor: ss.s.ID}
	if cmd.Pred != nil {
		rel := ss.s.Rel
		names := make([]string, len(rel.Attrs))
		kinds := make([]wire.ValueKind, len(rel.Attrs))
		for i, a := range rel.Attrs {
			names[i], kinds[i] = a.Name, attrKind(ss.s, i)
		}
		if _, err := cmd.Pred.Check(rel.Name, names, kinds); err != nil {
			return fail(cmd, "pred", "%v", err)
		}
		f.pred = cmd.Pred.Clone()
		f.key = string(f.pred.Key(nil))
	}
	s.frags[cmd.ID] = f
	r.resieve(ss)
	if err := r.refilter(ss); err != nil {
		delete(s.frags, cmd.ID)
		r.resieve(ss)
		return fail(cmd, "pred", "%v", err)
	}
	return nil
}

// sieve is what the drain evaluates of a sensor's fragments, per
// session: the programs pass what some session's selection (weakened)
// passes; the drain sends each session only what its own passes.
type sieve struct {
	// filtered: the sessions whose fragments on the sensor all have a
	// predicate (a session without fragments on it, or with one without
	// a predicate, gets every packet it enables, untested).
	filtered uint64
	// groups: the distinct predicates of those fragments, each with the
	// sessions that have it (a session passes a packet when one of its
	// fragments does: the or, as in the programs).
	groups []sieveGroup
}

type sieveGroup struct {
	pred *wire.Pred
	mask uint64
}

// pass returns the sessions of sv.filtered whose fragments pass the packet
// with values vals, naming entities ents (r.mu).
func (sv *sieve) pass(vals []wire.Value, ents []*entity) uint64 {
	val := func(a int) (uint64, string, bool) {
		if a >= len(vals) {
			return 0, "", false
		}
		v := &vals[a]
		if v.Kind != wire.VEntity {
			return v.N, v.S, true
		}
		for _, e := range ents { // compared by ID (decode: N is its key)
			if e.key == v.N {
				return v.N, e.id, true
			}
		}
		return v.N, "", true
	}
	var m uint64
	for i := range sv.groups {
		g := &sv.groups[i]
		if m&g.mask != g.mask && g.pred.Eval(val) {
			m |= g.mask
		}
	}
	return m
}

// resieve rebuilds sensor ss's sieve from the sessions' fragments (r.mu):
// when a fragment comes or goes and when a session ends.
func (r *Resident) resieve(ss *sensorState) {
	sv := &sieve{}
	index := map[string]int{}
	for i := range session.Indices(r.sessions.Mask()) {
		s := r.sessions.At(i)
		var groups []int
		all := false
		for _, f := range s.frags {
			if f.sensor != ss.s.ID {
				continue
			}
			if f.pred == nil {
				all = true
				break
			}
			g, ok := index[f.key]
			if !ok {
				g = len(sv.groups)
				index[f.key] = g
				sv.groups = append(sv.groups, sieveGroup{pred: f.pred})
			}
			groups = append(groups, g)
		}
		if all || len(groups) == 0 {
			continue
		}
		sv.filtered |= 1 << i
		for _, g := range groups {
			sv.groups[g].mask |= 1 << i
		}
	}
	if sv.filtered == 0 {
		sv = nil
	}
	ss.sieve = sv
}

// attrKind is the wire kind of a sensor's attribute as the drain sends it.
func attrKind(s *bpfgen.Sensor, i int) wire.ValueKind {
	a := s.Rel.Attrs[i]
	switch a.Type.Kind {
	case algebra.KindString:
		return wire.VString
	case algebra.KindEntity:
		return wire.VEntity
	}
	return valueKind(a.Type.Kind)
}

// Selects says what sensor rel's programs would evaluate in the kernel
// for selection p alone (per binding; "": nothing, the monitor selects),
// without loading anything: what --explain shows. False when rel has no
// kernel sensor.
func (r *Resident) Selects(rel string, p *wire.Pred) ([]string, bool) {
	for _, ss := range r.sensors {
		if ss != nil && ss.s.Rel.Name == rel {
			if r.opts.NoSelections {
				return make([]string, len(ss.s.Bindings)), true
			}
			return ss.s.Filter(p, syscallNumbers, false).Placed, true
		}
	}
	return nil, false
}
