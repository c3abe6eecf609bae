package resident

import (
	"fmt"
	"math/bits"

	"github.com/tqmon/tqmon/resident/wire"
)

// Fragments (CFragment): the part of a session's plan that runs at the
// resident — a selection on a sensor's own attributes against constants,
// and a projection; on an entity relation, a selection only (the drain's:
// a tuple's begin and end carry the same values, so both pass or neither
// does; the snapshot a session opens with is sent whole, before any
// fragment). They decide only what is sent: the remote monitor
// runs the same σ and π again, so a fragment that passes too much (or
// keeps too much) costs bytes, never exactness, and one that passes too
// little would be a bug — which is why a fragment never changes what a
// trigger, a truth sink or a sampler's state table sees.
//
// Where it runs. A sensor's fragments, over all sessions, are grouped by
// equal predicate (copy on write, under r.mu: fragTable). When the groups
// hold at most maxEarlyCmps comparisons in all, the producer evaluates
// them, in the subject's thread, before the packet is written: a packet
// no session passes costs no ring slot, no drain work, no bytes. Dearer
// tables are evaluated by the drain, off the subject's thread. Projection
// is always the drain's (and the sampler's): it changes bytes on the wire,
// not the producer's work.
//
// Counts. A packet filtered out is not wanted (and so not a loss): the
// producer does not write it and the drain does not count it, so for a
// session delivered + dropped = wanted still holds. A packet lost to a
// full ring is counted as a drop before the drain's (late) filter could
// have rejected it, and a sampler's skipped ticks count every tuple they
// hide: those drops are conservative (may include packets the fragment
// would have filtered), never missing.

// maxFragments bounds one session's fragments. A fragment's predicate
// runs on every packet of its sensor (in the producer or the drain), so
// this, with wire.MaxPredNodes, bounds what one monitor can make each
// packet cost. A query needs one per sensed range variable with a
// selection on its own attributes.
const maxFragments = 64

// maxSessionCmps bounds the comparisons of one session's fragments, all
// sensors together: what one monitor can add to the drain's work per
// packet (a hostile one that enables everything and filters it all out in
// the drain still leaves it the time to serve the others:
// TestHostileFragments). A query's selections on its sensed relations'
// own attributes are a few comparisons each.
const maxSessionCmps = 64

// maxEarlyCmps bounds the comparisons a producer evaluates per packet,
// over every session's fragments on the sensor (≈ a few ns each: the
// BenchmarkSensorFiltered figures in docs/design.md). A sensor whose
// fragments need more is filtered by the drain instead.
const maxEarlyCmps = 32

// fragment is one CFragment.
type fragment struct {
	sess *Session
	id   uint64
	sen  *Sensor
	pred *wire.Pred // nil: every packet
	keep uint16     // attributes sent (bit i: attribute i)
	cmps int        // comparisons in pred
}

// fragGroup is the sessions whose fragments share one predicate.
type fragGroup struct {
	pred *wire.Pred
	mask uint64
}

// fragTable is a sensor's fragments, immutable once published.
type fragTable struct {
	// filtered: the sessions with a fragment on the sensor (the others
	// get every packet they enable); always: those with one that has no
	// predicate.
	filtered, always uint64
	groups           []fragGroup
	// early: the producer evaluates the groups (≤ maxEarlyCmps
	// comparisons in all); otherwise the drain does.
	early bool
	// narrow: the sessions whose fragments keep fewer than every
	// attribute; keep[i], the attributes session i is sent.
	narrow uint64
	keep   [MaxSessions]uint16
}

// pass returns the sessions a packet with values vals may go to: those
// without fragments on the sensor, and those with one that passes it.
func (t *fragTable) pass(kinds *[MaxAttrs]wire.ValueKind, vals []Value) uint64 {
	m := ^t.filtered | t.always
	for i := range t.groups {
		g := &t.groups[i]
		if m&g.mask != g.mask && evalPred(g.pred, kinds, vals) {
			m |= g.mask
		}
	}
	return m
}

// evalPred reports whether vals satisfy p (wire.Pred.Eval; kinds: the
// attributes' kinds; the fragment's install checked that p's values have
// them).
func evalPred(p *wire.Pred, kinds *[MaxAttrs]wire.ValueKind, vals []Value) bool {
	return p.Eval(func(a int) (uint64, string, bool) {
		if a >= len(vals) {
			return 0, "", false
		}
		v := &vals[a]
		if kinds[a] == wire.VEntity {
			if v.E == nil {
				return 0, "", true // the empty ID
			}
			return 0, v.E.id, true
		}
		return v.N, v.S, true
	})
}

func (s *Session) addFragment(cmd *wire.Command) error {
	if s.frags[cmd.ID] != nil {
		return s.fail(cmd, "id", "fragment %d already exists in this session", cmd.ID)
	}
	if len(s.frags) >= maxFragments {
		return s.fail(cmd, "id", "the session already has %d fragments, the most it may", maxFragments)
	}
	sen, err := s.sensorArg(cmd, "sensor", cmd.Sensor)
	if err != nil {
		return err
	}
	switch {
	case sen.class == ClassEntity && len(cmd.Keep) > 0:
		return s.fail(cmd, "keep", "%s is an entity relation: its tuples are sent whole", sen.describe())
	case sen.class != ClassEntity && !sen.traced() && sen.strat != Sampled:
		return s.fail(cmd, "sensor", "%s is neither traced, sampled nor an entity relation", sen.describe())
	}
	cmps := 0
	if cmd.Pred != nil {
		names := make([]string, sen.nattr)
		for i := range names {
			names[i] = sen.spec.Attrs[i].Name
		}
		if cmps, err = cmd.Pred.Check(sen.spec.Name, names, sen.kinds[:sen.nattr]); err != nil {
			return s.fail(cmd, "pred", "%v", err)
		}
		if s.fragCmps+cmps > maxSessionCmps {
			return s.fail(cmd, "pred", "%d comparisons, with the session's %d over the %d its fragments may hold", cmps, s.fragCmps, maxSessionCmps)
		}
	}
	keep := uint16(1)<<sen.nattr - 1
	if len(cmd.Keep) > 0 {
		keep = 0
		for i, a := range cmd.Keep {
			if int(a) >= int(sen.nattr) {
				return s.fail(cmd, fmt.Sprintf("keep[%d]", i), "%s has no attribute %d", sen.spec.Name, a)
			}
			keep |= 1 << a
		}
	}
	f := &fragment{sess: s, id: cmd.ID, sen: sen, pred: cmd.Pred.Clone(), keep: keep, cmps: cmps}
	s.frags[f.id] = f
	s.fragCmps += cmps
	sen.fragList = append(sen.fragList, f)
	sen.publishFragments()
	return nil
}

// removeFragment removes f (r.mu).
func (r *Resident) removeFragment(f *fragment) {
	delete(f.sess.frags, f.id)
	f.sess.fragCmps -= f.cmps
	sen := f.sen
	for i, x := range sen.fragList {
		if x == f {
			sen.fragList = append(sen.fragList[:i:i], sen.fragList[i+1:]...)
			break
		}
	}
	sen.publishFragments()
}

// publishFragments rebuilds the sensor's fragment table from fragList and
// publishes it (r.mu). Producers and the drain load the table once per
// packet, so each packet sees one table, old or new.
func (sen *Sensor) publishFragments() {
	if len(sen.fragList) == 0 {
		sen.frags.Store(nil)
		return
	}
	t := &fragTable{}
	all := uint16(1)<<sen.nattr - 1
	var keep [MaxSessions]uint16
	index := map[string]int{}
	cmps := 0
	for _, f := range sen.fragList {
		b := f.sess.bit
		t.filtered |= b
		keep[f.sess.idx] |= f.keep
		if f.pred == nil {
			t.always |= b
			continue
		}
		k := f.pred.Key(nil)
		i, ok := index[string(k)]
		if !ok {
			i = len(t.groups)
			index[string(k)] = i
			t.groups = append(t.groups, fragGroup{pred: f.pred})
			cmps += f.pred.Cmps()
		}
		t.groups[i].mask |= b
	}
	for m := t.filtered; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		t.keep[i] = keep[i]
		if keep[i] != all {
			t.narrow |= 1 << i
		}
	}
	// An entity relation's are the drain's: its packets are written under
	// r.mu, which every entity operation of the subject takes.
	t.early = cmps <= maxEarlyCmps && sen.class != ClassEntity
	sen.frags.Store(t)
}

// project returns vals as session i is sent them: the attributes its
// fragments do not keep become their kind's zero value (a copy from
// alloc; vals itself when it keeps them all).
func (t *fragTable) project(i int, vals []wire.Value, alloc func(int) []wire.Value) []wire.Value {
	if t == nil || t.narrow&(1<<i) == 0 {
		return vals
	}
	out := alloc(len(vals))
	for a := range vals {
		if t.keep[i]&(1<<a) != 0 {
			out[a] = vals[a]
		} else {
			out[a] = wire.Value{Kind: vals[a].Kind}
		}
	}
	return out
}
