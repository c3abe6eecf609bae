package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// Entity triggers (wire.CapEntityTriggers, with wire.CapWhile): the
// rewriter's entity-selection argument (alpha-entity-select) — enable
// sensor S for each process p while p.Command = c — carried out in the
// kernel (bpfgen.EntitySelections): the fork and exec programs set a
// process's bits in entsel from commsel's entry for its command, as they
// record that command; S's programs, generated with entity selections,
// fire for a process whose bit for S is set. So S is enabled for a
// process from the instant it starts satisfying the selection (its fork,
// or its exec into c) to the instant it stops (its exec into another
// name, its end), as the Process relation's tuples say — no packet
// waits for the monitor, none is made for the other processes.
//
// A trigger the kernel cannot evaluate so — not While, not on the
// Process relation's Process attribute, a sensor that is not
// bpfgen.Sensor.EntitySelectable, no condition on Command — enables its
// sensor for every process instead (a superset, which the monitor's α
// filters); conditions other than Command's are left to α too. A
// Command condition no process can have (two different names, one
// longer than a command name) enables nothing.
//
// Processes running when a trigger comes get their bit from the entity
// table and, for one that executed meanwhile, from /proc/PID/comm: a
// superset again (a process whose name was changed by prctl may get it).
// Sessions that hold a trigger on S are delivered every packet of S that
// reaches the drain (Session.holds): the monitor's join selects.
//
// Bounds: bpfgen.CommSelEntries names selected at once (one more name is
// refused) and bpfgen.EntSelEntries processes (Options.EntSelEntries); at
// most maxFragments triggers per session. A process selected past the
// second bound is not missed: the program that cannot record it, or the
// resident when a selection starts, sets the sensor's bit in entselover,
// and the sensor fires for every process from then until its last
// selection ends (bpfgen.MapEntSelOver) — exact, since sessions with a
// trigger are sent every packet of the sensor and their monitors join
// with Process (as for a trigger carried out as an enable for every
// process), at the cost of more packets; the resident logs it
// (Options.Logf) and Stats reports it (SensorStats.Overflowed).

// ktrig is one CTrigger of a session.
type ktrig struct {
	sensor int
	comm   string // the command selected ("" with all or never)
	all    bool   // carried out as an enable for every process
	never  bool   // no process satisfies it
}

// trigger carries out CTrigger and CUntrigger (r.mu).
func (s *Session) trigger(cmd *wire.Command) error {
	r := s.r
	fail := s.core.Fail
	if cmd.Kind == wire.CUntrigger {
		tr := s.trigs[cmd.ID]
		if tr == nil {
			return fail(cmd, "id", "no trigger %d in this session", cmd.ID)
		}
		delete(s.trigs, cmd.ID)
		return r.untrigger(s, tr)
	}
	if s.trigs[cmd.ID] != nil {
		return fail(cmd, "id", "trigger %d already exists in this session", cmd.ID)
	}
	if len(s.trigs) >= maxFragments {
		return fail(cmd, "id", "the session already has %d triggers, the most it may", maxFragments)
	}
	ss, err := s.sensorArg(cmd)
	if err != nil {
		return err
	}
	proc := r.ent[typeProcess]
	if int(cmd.On) != proc && int(cmd.On) != r.ent[typeThread] {
		return fail(cmd, "on", "the kernel resident does not evaluate triggers on sensed relations (it does not advertise %q), only on Process and Thread", wire.CapTriggers)
	}
	tr := &ktrig{sensor: ss.s.ID}
	rel := r.cat.Relations[proc]
	self, command := attrIndex(rel, "Process"), attrIndex(rel, "Command")
	switch {
	case int(cmd.On) != proc || int(cmd.Attr) != self || !cmd.While || !ss.s.EntitySelectable():
		tr.all = true
	default:
		for _, c := range cmd.Conds {
			if int(c.Attr) != command || c.Value.Kind != wire.VString {
				continue // left to α
			}
			switch {
			case tr.comm != "" && tr.comm != c.Value.S, len(c.Value.S) >= bpfgen.CommSize, strings.IndexByte(c.Value.S, 0) >= 0, c.Value.S == "":
				tr.never = true
			}
			tr.comm = c.Value.S
		}
		if tr.comm == "" {
			tr.all = true
		}
	}
	switch {
	case tr.all:
		if err := r.setAll(ss, 1); err != nil {
			return fail(cmd, "sensor", "%v", err)
		}
	case tr.never:
	default:
		if _, ok := r.commSel[tr.comm]; !ok && len(r.commSel) >= bpfgen.CommSelEntries {
			return fail(cmd, "conds", "%d command names are selected already, the most the kernel's map holds (bpfgen.CommSelEntries)", len(r.commSel))
		}
		if err := r.selectComm(ss, tr.comm, 1); err != nil {
			return fail(cmd, "sensor", "%v", err)
		}
	}
	s.trigs[cmd.ID] = tr
	s.perSensor[tr.sensor]++ // it enables the sensor (selection)
	return r.refilter(ss)
}

// untrigger undoes trigger tr of session s (r.mu).
func (r *Resident) untrigger(s *Session, tr *ktrig) error {
	ss := r.sensors[tr.sensor]
	if s.perSensor[tr.sensor]--; s.perSensor[tr.sensor] == 0 {
		delete(s.perSensor, tr.sensor)
	}
	var err error
	switch {
	case tr.all:
		err = r.setAll(ss, -1)
	case tr.never:
	default:
		err = r.selectComm(ss, tr.comm, -1)
	}
	return errors.Join(err, r.refilter(ss))
}

// selectComm changes the count of triggers selecting command comm for
// sensor ss by delta, and the kernel's maps with it (r.mu).
func (r *Resident) selectComm(ss *sensorState, comm string, delta int) error {
	if r.commSel == nil {
		r.commSel = map[string]map[int]int{}
	}
	m := r.commSel[comm]
	if m == nil {
		m = map[int]int{}
		r.commSel[comm] = m
	}
	before := m[ss.s.ID]
	m[ss.s.ID] += delta
	if m[ss.s.ID] <= 0 {
		delete(m, ss.s.ID)
	}
	if len(m) == 0 {
		delete(r.commSel, comm)
	}
	ss.selTrigs += delta
	if err := r.reconcile(ss); err != nil {
		ss.selTrigs -= delta
		if before > 0 {
			m[ss.s.ID] = before
		} else {
			delete(m, ss.s.ID)
		}
		if len(m) == 0 {
			delete(r.commSel, comm)
		} else {
			r.commSel[comm] = m
		}
		return err
	}
	if r.tr == nil || (before > 0) == (m[ss.s.ID] > 0) {
		return nil
	}
	if err := r.tr.writeCommSel(r, comm, ss.s.ID, m[ss.s.ID] > 0); err != nil {
		return err
	}
	if ss.selTrigs == 0 {
		// No selection enables the sensor now, and commsel no longer
		// names it: no process can need its fallback. (A fork that read
		// commsel before and fails now sets the bit again: a superset.)
		r.tr.clearOver(ss.s.ID)
	}
	return nil
}

// writeCommSel writes commsel's entry for comm, then sets (on) or clears
// sensor's bit in the entsel entries of the processes running now (r.mu).
func (t *tracker) writeCommSel(r *Resident, comm string, sensor int, on bool) error {
	var key [bpfgen.CommSize]byte
	copy(key[:], comm)
	var bits uint64
	for id := range r.commSel[comm] {
		bits |= 1 << id
	}
	cs, es := t.maps[bpfgen.MapCommSel], t.maps[bpfgen.MapEntSel]
	if bits == 0 {
		if err := cs.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("selecting command %q: %w", comm, err)
		}
	} else if err := cs.Put(key, bits); err != nil {
		return fmt.Errorf("selecting command %q: %w", comm, err)
	}
	bit := uint64(1) << sensor
	set := func(pid uint32, on bool) error {
		var v uint64
		if err := es.Lookup(pid, &v); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		w := v &^ bit
		if on {
			w |= bit
		}
		switch {
		case w == v:
			return nil
		case w == 0:
			return es.Delete(pid)
		}
		return es.Put(pid, w)
	}
	for pid, p := range t.ents.live[typeProcess] {
		match := p.comm == comm
		if !match && on {
			text, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			match = err == nil && strings.TrimSuffix(string(text), "\n") == comm
		}
		if match {
			if err := set(pid, on); err != nil {
				if !on || t.over == nil {
					return fmt.Errorf("selecting process %d by its command %q: %w", pid, comm, err)
				}
				// No room: the sensor falls back to every process, as a
				// program does for a process it cannot record.
				atomic.OrUint64(t.over, bit)
				t.reportOver()
			}
		}
	}
	return nil
}

// attrIndex is the index of rel's attribute name (-1: none).
func attrIndex(rel *algebra.Relation, name string) int {
	for i, a := range rel.Attrs {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// mapOver maps the entselover word (bpfgen.MapEntSelOver) into the
// resident's memory: programs OR bits into it atomically, and so does
// the resident (writeCommSel), which also clears them (clearOver) —
// through the map's syscalls a read-modify-write could lose a program's
// bit.
func (t *tracker) mapOver() error {
	m := t.maps[bpfgen.MapEntSelOver]
	mem, err := unix.Mmap(m.FD(), 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping %s: %w", bpfgen.MapEntSelOver, err)
	}
	t.overMem, t.over = mem, (*uint64)(unsafe.Pointer(&mem[0]))
	return nil
}

func (t *tracker) unmapOver() {
	if t.overMem != nil {
		unix.Munmap(t.overMem)
		t.overMem, t.over = nil, nil
	}
}

// clearOver clears sensor's fallback bit (r.mu).
func (t *tracker) clearOver(sensor int) {
	if t.over == nil {
		return
	}
	atomic.AndUint64(t.over, ^(uint64(1) << sensor))
	t.overSeen &^= 1 << sensor
}

// reportOver logs each sensor that fell back to every process since the
// last call (r.mu; every drain round: one load).
func (t *tracker) reportOver() {
	if t.over == nil { // rings without programs (the consumer's benchmark)
		return
	}
	w := atomic.LoadUint64(t.over)
	if w&^t.overSeen == 0 {
		return
	}
	for id := range t.r.sensors {
		if ss := t.r.sensors[id]; ss != nil && id < 64 && w&^t.overSeen&(1<<id) != 0 {
			t.r.opts.Logf("%s: more than %d processes are selected by their command at once (bpfgen.EntSelEntries): it is enabled for every process until its last selection ends (the monitor's join selects: the same results, more packets)",
				ss.s.Rel.Name, t.maps[bpfgen.MapEntSel].MaxEntries())
		}
	}
	t.overSeen |= w
}

// overflowed reports whether sensor fell back to every process (r.mu).
func (t *tracker) overflowed(sensor int) bool {
	return t.over != nil && sensor < 64 && atomic.LoadUint64(t.over)&(1<<sensor) != 0
}
