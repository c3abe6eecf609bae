package kernel

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// entity is a process, a thread or a processor. Its key is its identity
// for the resident's life: two processes that share a pid (one after the
// other) are two entities with one ID.
type entity struct {
	typ   int
	num   uint32
	id    string
	key   uint64
	tuple uint64 // its entity relation's current tuple
	begin int64
	comm  string  // a process's command
	proc  *entity // a thread's process
	// parent is a process's parent's pid at its start (0: none known):
	// the process that forked it, or for one running when the tracking
	// began, its parent then. Reparenting (to init or a subreaper when
	// the parent exits) does not change it.
	parent uint32
	// root is the followed process it descends from (0: none; see
	// follow.go).
	root  uint32
	dead  bool
	ended int64 // when it ended
}

// entities is the entity table (r.mu).
type entities struct {
	r    *Resident
	t    *tracker
	live [3]map[uint32]*entity
	// grave: the last entity of each number that ended, for packets that
	// come after its end (a thread's last switch follows its exit).
	grave [3]map[uint32]*entity
	keys  uint64
	// gen counts the changes to the table (changed): what the drain
	// remembers of a record (memo) holds while gen is what it was; last
	// is the entity of each type lookup last returned, cleared by every
	// change, so it is what lookup would return again for its number.
	gen  uint64
	last [3]*entity
}

// changed notes a change to the table, or to an entity in it.
func (e *entities) changed() {
	e.gen++
	e.last = [3]*entity{}
}

func newEntities(r *Resident, t *tracker) *entities {
	e := &entities{r: r, t: t}
	for i := range e.live {
		e.live[i], e.grave[i] = map[uint32]*entity{}, map[uint32]*entity{}
	}
	return e
}

func (t *tracker) tupleID() uint64 {
	t.tuples++
	return t.tuples
}

// create begins an entity at ts (sending its entity tuple when out is
// set); parent is a process's parent's pid.
func (e *entities) create(typ int, num uint32, ts int64, comm string, proc *entity, parent uint32, out *roundOut) *entity {
	e.keys++
	e.changed()
	x := &entity{typ: typ, num: num, id: strconv.FormatUint(uint64(num), 10), key: e.keys, begin: ts, comm: comm, proc: proc, parent: parent, tuple: e.t.tupleID()}
	e.live[typ][num] = x
	if out != nil {
		e.t.sendAll(out, e.packet(x, wire.PEntityBegin, ts), x.refs())
	}
	return x
}

// end ends an entity at ts.
func (e *entities) end(x *entity, ts int64, out *roundOut) {
	if x.dead {
		return
	}
	e.changed()
	x.dead, x.ended = true, ts
	delete(e.live[x.typ], x.num)
	e.grave[x.typ][x.num] = x
	e.t.sendAll(out, e.packet(x, wire.PEntityEnd, ts), x.refs())
}

// setComm changes a process's command: one tuple ends, the next begins.
func (e *entities) setComm(x *entity, comm string, ts int64, out *roundOut) {
	if x.comm == comm {
		return
	}
	e.changed()
	e.t.sendAll(out, e.packet(x, wire.PEntityEnd, ts), x.refs())
	x.comm, x.tuple, x.begin = comm, e.t.tupleID(), ts
	e.t.sendAll(out, e.packet(x, wire.PEntityBegin, ts), x.refs())
}

func (x *entity) refs() []*entity {
	if x.proc != nil {
		return []*entity{x, x.proc}
	}
	return []*entity{x}
}

func (x *entity) def() wire.EntityDef {
	return wire.EntityDef{Key: x.key, Type: uint16(x.typ), ID: x.id}
}

// packet is an entity relation packet of x.
func (e *entities) packet(x *entity, kind wire.PacketKind, ts int64) wire.Packet {
	vals := []wire.Value{{Kind: wire.VEntity, N: x.key}}
	switch x.typ {
	case typeProcess:
		vals = append(vals, wire.Value{Kind: wire.VString, S: x.comm}, wire.Value{Kind: wire.VInt, N: uint64(x.parent)})
	case typeThread:
		vals = append(vals, wire.Value{Kind: wire.VEntity, N: x.proc.key})
	}
	p := wire.Packet{TS: ts, Sensor: uint16(e.r.ent[x.typ]), Kind: kind, Tuple: x.tuple, Vals: vals}
	if kind == wire.PEntityEnd {
		p.Begin = x.begin
	}
	return p
}

// graveTime is how long an ended entity still names the packets that
// come after its end.
const graveTime = 1_000_000_000 // 1 s

// prune forgets the entities that ended before w − graveTime.
func (e *entities) prune(w int64) {
	for typ := range e.grave {
		for num, x := range e.grave[typ] {
			if x.ended < w-graveTime {
				e.changed()
				delete(e.grave[typ], num)
			}
		}
	}
}

// snapshot returns the live entities' tuples and definitions, for a new
// session (its mailbox puts them in time order).
func (e *entities) snapshot(s *Session) ([]wire.Packet, []wire.EntityDef) {
	var pk []wire.Packet
	var defs []wire.EntityDef
	for typ := range e.live {
		for _, x := range e.live[typ] {
			pk = append(pk, e.packet(x, wire.PEntityBegin, x.begin))
			defs = append(defs, x.def())
			s.defined[x.key] = true
		}
	}
	return pk, defs
}

// lookup returns the entity a packet names: the live one, else the last
// one that ended, else one made now from /proc (its begin missed).
func (e *entities) lookup(typ int, num uint32, ts int64, out *roundOut) *entity {
	if x := e.last[typ]; x != nil && x.num == num {
		return x
	}
	if x := e.live[typ][num]; x != nil {
		e.last[typ] = x
		return x
	}
	if x := e.grave[typ][num]; x != nil {
		e.last[typ] = x
		return x
	}
	switch typ {
	case typeProcess:
		return e.create(typ, num, ts, procComm(num), nil, procPPid(num), out)
	case typeThread:
		tgid := procTgid(num)
		p := e.live[typeProcess][tgid]
		if p == nil {
			p = e.lookup(typeProcess, tgid, ts, out)
		}
		return e.create(typ, num, ts, "", p, 0, out)
	}
	return e.create(typ, num, ts, "", nil, 0, out)
}

// record applies an entity record (fork, exec, exit) at ts.
func (e *entities) record(b []byte, ts int64, out *roundOut) {
	e.changed() // (whatever it changes: a process's root, its parent)
	if len(b) < bpfgen.EntitySize {
		e.t.bad++
		return
	}
	pid := uint32(le.Uint64(b[bpfgen.OffPid:]))
	tgid := uint32(le.Uint64(b[bpfgen.OffTgid:]))
	arg := le.Uint64(b[bpfgen.OffArg:])
	comm := cstring(b[bpfgen.OffComm : bpfgen.OffComm+bpfgen.CommSize])
	switch bpfgen.Kind(b[bpfgen.OffKind]) {
	case bpfgen.KindFork:
		// arg is the forking task's thread group: the new process's
		// parent (or, for a new thread, its own process).
		p := e.live[typeProcess][tgid]
		if p == nil {
			p = e.create(typeProcess, tgid, ts, comm, nil, uint32(arg), out)
			e.inherit(p, uint32(arg))
		}
		if e.live[typeThread][pid] == nil {
			e.create(typeThread, pid, ts, "", p, 0, out)
		}
	case bpfgen.KindExec:
		p := e.live[typeProcess][tgid]
		if p == nil {
			p = e.create(typeProcess, tgid, ts, comm, nil, procPPid(tgid), out)
		}
		e.setComm(p, comm, ts, out)
		if old := uint32(arg); old != pid {
			// A thread other than the leader executed: it took the
			// leader's ID; its own ID is gone.
			if th := e.live[typeThread][old]; th != nil {
				e.end(th, ts, out)
			}
		}
	case bpfgen.KindExit:
		if th := e.live[typeThread][pid]; th != nil {
			e.end(th, ts, out)
		}
		if arg != 0 {
			if p := e.live[typeProcess][tgid]; p != nil {
				e.end(p, ts, out)
			}
		}
	default:
		e.t.bad++
	}
}

// scan reads the processes and threads running now from /proc, and the
// processors from sysfs.
func (e *entities) scan() error {
	var boot, mono unix.Timespec
	unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot)
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	offset := boot.Nano() - mono.Nano() // boot time − monotonic time
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("reading /proc: %w", err)
	}
	for _, d := range dirs {
		pid, err := strconv.ParseUint(d.Name(), 10, 32)
		if err != nil {
			continue
		}
		comm, ppid, start, ok := readStat(fmt.Sprintf("/proc/%d/stat", pid))
		if !ok {
			continue // it exited meanwhile
		}
		p := e.create(typeProcess, uint32(pid), start-offset, comm, nil, ppid, nil)
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, tk := range tasks {
			tid, err := strconv.ParseUint(tk.Name(), 10, 32)
			if err != nil {
				continue
			}
			if _, _, start, ok := readStat(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid)); ok {
				e.create(typeThread, uint32(tid), start-offset, "", p, 0, nil)
			}
		}
	}
	for _, cpu := range onlineCPUs() {
		e.create(typeProcessor, cpu, 0, "", nil, 0, nil)
	}
	return nil
}

// readStat reads a task's command, parent's pid and start time (ns
// since boot) from its stat file.
func readStat(path string) (comm string, ppid uint32, start int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0, 0, false
	}
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return "", 0, 0, false
	}
	fields := strings.Fields(string(b[close+1:]))
	// fields[0] is the state (field 3), fields[1] the ppid (field 4);
	// starttime is field 22.
	if len(fields) < 20 {
		return "", 0, 0, false
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return "", 0, 0, false
	}
	pp, _ := strconv.ParseUint(fields[1], 10, 32)
	return string(b[open+1 : close]), uint32(pp), ticks * (1e9 / clockTicks), true
}

// procPPid is a process's parent's pid (0 if it is gone).
func procPPid(pid uint32) uint32 {
	_, ppid, _, _ := readStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ppid
}

// clockTicks is USER_HZ, the unit of /proc's times (100 on Linux).
const clockTicks = 100

func procComm(pid uint32) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSuffix(string(b), "\n")
}

func procTgid(tid uint32) uint32 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return tid
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
				return uint32(n)
			}
		}
	}
	return tid
}

// onlineCPUs reads /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() []uint32 {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return []uint32{0}
	}
	var out []uint32
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(lo, 10, 32)
		z := a
		var err2 error
		if found {
			z, err2 = strconv.ParseUint(hi, 10, 32)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for c := a; c <= z; c++ {
			out = append(out, uint32(c))
		}
	}
	return out
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
