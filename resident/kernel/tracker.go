package kernel

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// tracker is what runs while some session is open: the shared maps and
// ring buffers, the entity programs, the entity table, and the drain
// goroutine.
type tracker struct {
	r       *Resident
	specs   map[string]*ebpf.MapSpec
	maps    map[string]*ebpf.Map
	events  *ring // the packet ring
	entRing *ring // the entity ring
	ents    *entities
	entAtt  *attachment
	flags   []bpfgen.Flags // per relation, as written to the allflags map

	stop  chan struct{}
	done  chan struct{}
	final bool

	// The drain's state (drain goroutine; what sessions see under r.mu).
	entQ, evQ ringQ    // the rings' records walked and not freed
	pending   []record // records walked and not applied (pending[head:])
	lastW     int64
	begun     map[beginKey]*begunTuple
	countBuf  []wire.Count // (ownCounts)
	tuples    uint64
	rearm     map[flagKey]bool
	delivered []atomic.Uint64 // per relation: records read from the ring
	decided   []uint64        // per relation: records applied (r.mu; decidedCounts)
	readN     []uint64        // of those, the walk's (readEvents)
	rounds    uint64
	late      uint64 // records stamped at or before a watermark already sent
	bad       uint64 // records that did not decode
	out       roundOut
	// pending[head:] are the records walked and not applied,
	// pending[:head] those applied since the last compaction;
	// pending[:sorted] is in time order (the records held from the last
	// round).
	head, sorted int
	// vals is the round's arena of packet values (decode; round);
	// entScratch the entities a record names (decode, while it is sent).
	vals       []wire.Value
	entScratch []*entity
	memo       memo
	peak       [session.MaxSessions]int // (trim)
	peakVals   int
	memoHits   uint64 // events the memo decoded, all told
	// route's answer for routeKey this round, if routed.
	routed    bool
	routeKey  flagKey
	routeMask uint64
	// over is the entselover map's word, mapped (entsel.go), and
	// overSeen its bits already reported (r.mu).
	overMem  []byte
	over     *uint64
	overSeen uint64
}

// record is a ring record awaiting its turn (time order): its bytes are
// in its ring (entity: the entity ring's), at data[off:off+n], until the
// drain frees its room; seq numbers it in its ring (ringQ). No
// pointer, so that the records held cost the collector nothing and
// moving them no write barrier.
type record struct {
	ts          int64
	seq, off, n uint32
	entity      bool
}

// memo is what the drain remembers of the last event record it decoded
// in the round (ok): its bytes after its time (body), its values,
// entities, flag holder and the sessions it went to (mask, after their
// sieves). An event record whose bytes after its time are the same —
// one thread's calls of one system call, say — decodes to the same
// values and goes to the same sessions, while the round lasts (enables
// and sieves change only by commands, under r.mu, which the round holds)
// and the entity table is as it was (gen): its packet shares the
// remembered values (packets' values are read, never written, by every
// receiver), and the drain does no decoding, lookup or sieving for it.
type memo struct {
	ok   bool
	gen  uint64
	body []byte
	vals []wire.Value
	ents []*entity
	flag uint32
	mask uint64
}

// beginKey identifies an interval in progress.
type beginKey struct {
	sensor  uint16
	binding uint8
	k0, k1  uint64
}

// begunTuple is an interval whose begin went to some sessions (mask: the
// sessions sent it that are still open, leave clearing a session's bit as
// it ends, so that a newer session at its index is not sent the end).
type begunTuple struct {
	tuple uint64
	begin int64
	vals  []wire.Value
	ents  []*entity
	mask  uint64
}

// leave forgets session index i in the intervals in progress, as its
// session ends (r.mu): their ends are not its any more, nor the next
// session's at that index (TestKernelSlotReuseInterval). An interval no
// session is left to be sent goes: its end is wanted by none.
func (t *tracker) leave(i int) {
	for k, bt := range t.begun {
		if bt.mask&(1<<i) != 0 {
			if bt.mask &^= 1 << i; bt.mask == 0 {
				delete(t.begun, k)
			}
		}
	}
}

// roundOut collects a round's packets per session.
type roundOut struct {
	pk   [session.MaxSessions][]wire.Packet
	defs [session.MaxSessions][]wire.EntityDef
}

// startTracking creates the shared maps, attaches the entity programs,
// reads the processes and threads already running from /proc and starts
// the drain (r.mu held).
func (r *Resident) startTracking() (*tracker, error) {
	t := &tracker{r: r, specs: r.spec.SharedMaps(r.opts.RingBytes, r.opts.EntityRingBytes), maps: map[string]*ebpf.Map{},
		stop: make(chan struct{}), done: make(chan struct{}), begun: map[beginKey]*begunTuple{},
		rearm: map[flagKey]bool{}, delivered: make([]atomic.Uint64, len(r.cat.Relations)), decided: make([]uint64, len(r.cat.Relations)),
		flags: make([]bpfgen.Flags, max(r.spec.Relations, 1))}
	fail := func(err error) (*tracker, error) {
		t.teardown()
		return nil, err
	}
	for name, ms := range t.specs {
		m, err := ebpf.NewMap(ms)
		if err != nil {
			return fail(fmt.Errorf("creating map %s: %w", name, err))
		}
		t.maps[name] = m
	}
	var err error
	if t.events, err = openRing(t.maps[bpfgen.MapEvents]); err != nil {
		return fail(err)
	}
	if t.entRing, err = openRing(t.maps[bpfgen.MapEntities]); err != nil {
		return fail(err)
	}
	if err := t.mapOver(); err != nil {
		return fail(err)
	}
	t.lastW = monoNow() - 1
	t.evQ, t.entQ = newRingQ(t.events), newRingQ(t.entRing)
	if t.entAtt, err = t.load(r.spec.Entities, nil); err != nil {
		return fail(fmt.Errorf("attaching the process and thread programs: %w", err))
	}
	t.ents = newEntities(r, t)
	if err := t.ents.scan(); err != nil {
		return fail(err)
	}
	go t.loop()
	return t, nil
}

// teardown detaches and closes everything (r.mu not held; the drain has
// stopped or never started).
func (t *tracker) teardown() {
	r := t.r
	r.mu.Lock()
	for _, ss := range r.sensors {
		if ss != nil && ss.att != nil && ss.att.tr == t {
			ss.att.close()
			ss.att = nil
		}
	}
	r.mu.Unlock()
	if t.entAtt != nil {
		t.entAtt.close()
	}
	if t.events != nil {
		t.events.close()
	}
	if t.entRing != nil {
		t.entRing.close()
	}
	t.unmapOver()
	for _, m := range t.maps {
		m.Close()
	}
}

// stopDrain stops the drain goroutine, after a last round delivering
// everything when final (r.mu not held).
func (t *tracker) stopDrain(final bool) {
	select {
	case <-t.stop:
	default:
		t.final = final
		close(t.stop)
	}
	<-t.done
}

// drainEvery is the drain's period.
const drainEvery = time.Millisecond

func (t *tracker) loop() {
	defer close(t.done)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			if t.final {
				t.round(true)
			}
			return
		case <-tick.C:
			t.round(false)
		}
	}
}

// writeAll writes a sensor's Flags (its whole-type enable count, and
// which entities it is enabled for) to the kernel.
func (t *tracker) writeAll(ss *sensorState) error {
	var f bpfgen.Flags
	if ss.att != nil {
		f.All = uint64(ss.all)
		switch len(ss.ids) {
		case 0:
		case 1:
			for id := range ss.ids {
				f.One = uint64(id) + 1
			}
		default:
			f.One = bpfgen.Many
		}
	}
	if t.flags[ss.s.ID] == f {
		return nil
	}
	t.flags[ss.s.ID] = f
	buf := make([]byte, bpfgen.FlagsSize*len(t.flags))
	for i, x := range t.flags {
		binary.LittleEndian.PutUint64(buf[bpfgen.FlagsSize*i:], x.All)
		binary.LittleEndian.PutUint64(buf[bpfgen.FlagsSize*i+8:], x.One)
	}
	if err := t.maps[bpfgen.MapAll].Put(uint32(0), buf); err != nil {
		return fmt.Errorf("%s: writing its flags: %w", ss.s.Rel.Name, err)
	}
	return nil
}

// counts reads the kernel's per-CPU counters: per sensor, packets wanted
// and dropped.
// decidedCounts returns the counts as sessions are given them (r.mu):
// the kernel's drops, and as wanted those drops and the records the drain
// applied — not the records the kernel counted that the drain has not yet
// applied (in the ring, or walked and held), whose fate for each session
// (sent, or filtered out by its fragments: unwant) is not decided yet. So
// a session's wanted, less what its fragments filtered out (ownCounts),
// only grows — the remote sums what grew — and once the rings are drained
// it is the kernel's.
func (t *tracker) decidedCounts() []wire.Count {
	out := t.counts()
	for i := range out {
		c := &out[i]
		if int(c.Sensor) < len(t.decided) {
			c.Wanted = min(c.Wanted, c.Drops+t.decided[c.Sensor])
		}
	}
	return out
}

func (t *tracker) counts() []wire.Count {
	var out []wire.Count
	var per []bpfgen.Counter
	m := t.maps[bpfgen.MapCounts]
	if m == nil { // rings without programs (the consumer's benchmark)
		return nil
	}
	for _, ss := range t.r.sensors {
		if ss == nil {
			continue
		}
		if err := m.Lookup(uint32(ss.s.ID), &per); err != nil {
			continue
		}
		var c wire.Count
		for _, x := range per {
			c.Wanted += x.Wanted
			c.Drops += x.Dropped
		}
		if c.Wanted > 0 {
			c.Sensor = uint16(ss.s.ID)
			out = append(out, c)
		}
	}
	// The entity programs' counters (fork, exec, exit records; follows
	// refused by a full follow map): their drops are the Process
	// relation's losses, reported as any sensor's, so a run that missed
	// them is incomplete, not silent.
	if id := slices.IndexFunc(t.r.cat.Relations, func(r *algebra.Relation) bool { return r.Name == "Process" }); id >= 0 {
		if err := m.Lookup(uint32(t.r.spec.EntityCounter()), &per); err == nil {
			var c wire.Count
			for _, x := range per {
				c.Wanted += x.Wanted
				c.Drops += x.Dropped
			}
			if c.Drops > 0 {
				c.Sensor = uint16(id)
				out = append(out, c)
			}
		}
	}
	return out
}

// forget drops the intervals in progress of a sensor that was detached:
// their ends will not come (r.mu).
func (t *tracker) forget(sensor int) {
	for k := range t.begun {
		if int(k.sensor) == sensor {
			delete(t.begun, k)
		}
	}
}
