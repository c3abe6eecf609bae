package resident

// Ends owed after a while trigger's disable. A while trigger (an entity
// relation's, or a counting one's: count.go) takes an entity's enable of
// its target back when its condition stops holding. The target's tuples
// on the entity in progress then overlap the span that just ended, and
// a plan that keeps the trigger's relation in its block joined with
// "overlap" (rule alpha-entity-select) needs every tuple that overlaps
// such a span — for a traced then disabled interval sensor, whose only
// packet is its end, the end is decided after the disable. So the
// disable is recorded on the entity, per target sensor and session: the
// instant d it happened. An End of the target on the entity, for a
// session that does not want it now, is owed to that session when the
// tuple began before d: in progress at d, so it overlaps the enabled span
// that ended at d (and it ends after d, as its End follows the record).
// A tuple begun after d overlaps no enabled span before d; one enabled
// again since is sent as any (want), and a later disable records a later
// d. Only the latest d is kept: it decides alone. A tuple still in
// progress when the resident closes is owed the same way: reportOpen
// reports it whole to the sessions owed it as to those enabled
// (TestCountWhileOwedAtClose).
//
// Order, without a lock on the End's path: takeBack (r.mu) stores the
// record, then clears the flag; End reads the flags (want), then the
// record. An End that sees the flag cleared sees the record.
//
// Bounds: a record is one oweEntry per (target sensor, session index) on
// the entity, replaced by the next disable for the same pair (at most
// MaxSessions per target sensor), held by the entity and freed with it.
// What it costs the subject: an End on a traced interval sensor loads
// one pointer (nil unless some disable was recorded on its entity).

// oweTab is an entity's records (copy on write under r.mu).
type oweTab []oweEntry

// oweEntry: session index i's enable of sensor's flag on the entity was
// taken back at d (resident clock), the session open at epoch ep.
type oweEntry struct {
	sensor SensorID
	i      uint8
	ep     uint32
	d      int64
}

// recordOwed records that session bit's enable of sen on e is taken back
// now (r.mu; before the flag is cleared).
func (r *Resident) recordOwed(sen *Sensor, e *Entity, bit uint64) {
	i := uint8(0)
	for bit>>i != 1 {
		i++
	}
	next := oweEntry{sensor: sen.id, i: i, ep: r.epoch.Load(), d: r.now()}
	var tab oweTab
	if p := e.owed.Load(); p != nil {
		tab = make(oweTab, 0, len(*p)+1)
		for _, o := range *p {
			if o.sensor != sen.id || o.i != i {
				tab = append(tab, o)
			}
		}
	}
	tab = append(tab, next)
	e.owed.Store(&tab)
}

// owed returns the sessions (not in m, which want it now) owed the end of
// s's tuple vals, begun at begin, and the newest epoch of their records.
func (s *Sensor) owed(vals []Value, begin int64, m uint64) (uint64, uint32) {
	if s.slot < 0 || s.flag >= len(vals) {
		return 0, 0
	}
	e := vals[s.flag].E
	if e == nil || e.typ != s.ht {
		return 0, 0
	}
	p := e.owed.Load()
	if p == nil {
		return 0, 0
	}
	var mask uint64
	var ep uint32
	for _, o := range *p {
		if o.sensor != s.id || m&(1<<o.i) != 0 || begin >= o.d {
			continue
		}
		if mask == 0 || int32(o.ep-ep) > 0 {
			ep = o.ep
		}
		mask |= 1 << o.i
	}
	return mask, ep
}
