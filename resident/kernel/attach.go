package kernel

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// sensorState is a sensor's enables, summed over sessions, and its
// programs while attached (r.mu).
type sensorState struct {
	s   *bpfgen.Sensor
	ids map[uint32]int // entity number → sessions' enables
	all int            // whole-type enables
	// selTrigs: the entity triggers (over sessions) that select processes
	// for the sensor by their command (entsel.go).
	selTrigs int
	att      *attachment
	// sieve: what the drain evaluates per session (nil: no session's
	// fragments filter the sensor; see filter.go).
	sieve *sieve
}

// attachment is a sensor's loaded programs, their links and its maps.
type attachment struct {
	tr     *tracker
	coll   *ebpf.Collection // the entity programs; a sensor's stubs and own maps
	links  []link.Link
	enable *ebpf.Map
	// A sensor's programs, which its stubs tail-call (see filter.go),
	// with the selection whose key is filter ("": none) compiled in.
	bodies *ebpf.Collection
	filter string
	// rejected: the key of the last selection that failed to load (not
	// tried again while the sensor is attached).
	rejected string
	entsel   bool     // enabled by entity selections too
	placed   []string // per binding, what its programs evaluate
}

func (a *attachment) close() {
	for _, l := range a.links {
		l.Close()
	}
	if a.bodies != nil {
		a.bodies.Close()
	}
	a.coll.Close()
}

// setFlag changes a sensor's enable count for entity id by delta and
// attaches or detaches its programs as needed (r.mu).
func (r *Resident) setFlag(ss *sensorState, id uint32, delta int) error {
	old := ss.ids[id]
	set := func(n int) {
		if n > 0 {
			ss.ids[id] = n
		} else {
			delete(ss.ids, id)
		}
	}
	set(old + delta)
	if err := r.reconcile(ss); err != nil {
		set(old) // undo: the command changes nothing
		return err
	}
	if ss.att != nil {
		if err := writeFlag(ss, id); err != nil {
			set(old) // undo, in the map too (best effort)
			writeFlag(ss, id)
			return err
		}
		return r.tr.writeAll(ss)
	}
	return nil
}

// writeFlag sets entity id's counter in the kernel's enable map.
func writeFlag(ss *sensorState, id uint32) error {
	if n := ss.ids[id]; n > 0 {
		if err := ss.att.tr.follow(ss, id); err != nil {
			return err
		}
		if err := ss.att.enable.Put(id, uint64(n)); err != nil {
			return fmt.Errorf("%s: enabling %s %d: %w", ss.s.Rel.Name, ss.s.FlagType, id, err)
		}
		return nil
	}
	if err := ss.att.enable.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("%s: disabling %s %d: %w", ss.s.Rel.Name, ss.s.FlagType, id, err)
	}
	return nil
}

// follow makes an enabled process a root of the follow map (with
// Options.Follow), unless it has a root already (it descends from one):
// the processes it forks from then on are enabled as their root is
// (bpfgen's follow.go). A root stays in the map until it exits; its
// descendants' enables follow its own, so a root no longer enabled
// enables nothing.
func (t *tracker) follow(ss *sensorState, id uint32) error {
	m := t.maps[bpfgen.MapFollow]
	if m == nil || ss.s.FlagType != "Process" {
		return nil
	}
	t.ents.followRoot(id)
	var root uint32
	if err := m.Lookup(id, &root); err == nil {
		return nil // already followed: a root, or a descendant of one
	}
	if err := m.Put(id, id); err != nil {
		return fmt.Errorf("%s: following process %d: %w (at most %d processes are followed at once)", ss.s.Rel.Name, id, err, bpfgen.FollowEntries)
	}
	return nil
}

// setAll changes a sensor's whole-type enable count (r.mu).
func (r *Resident) setAll(ss *sensorState, delta int) error {
	ss.all += delta
	if err := r.reconcile(ss); err != nil {
		ss.all -= delta
		return err
	}
	if r.tr != nil {
		return r.tr.writeAll(ss)
	}
	return nil
}

// reconcile attaches a sensor that has some enable and detaches one that
// has none (r.mu).
func (r *Resident) reconcile(ss *sensorState) error {
	want := ss.all > 0 || len(ss.ids) > 0 || ss.selTrigs > 0
	switch {
	case want && ss.att == nil:
		if r.tr == nil {
			return errors.New("no session is tracking")
		}
		sel, key := r.selection(ss)
		att, err := r.tr.attach(ss.s, sel, key, ss.selTrigs > 0)
		if err != nil {
			return err
		}
		ss.att = att
		for id := range ss.ids {
			if err := writeFlag(ss, id); err != nil {
				att.close()
				ss.att = nil
				return err
			}
		}
		if err := r.tr.writeAll(ss); err != nil {
			att.close()
			ss.att = nil
			return err
		}
	case !want && ss.att != nil:
		ss.att.close()
		ss.att = nil
		if r.tr != nil {
			r.tr.writeAll(ss)
			r.tr.forget(ss.s.ID)
		}
	}
	return nil
}

// load loads programs (with the sensor's own maps and the tracker's
// shared ones) and attaches them. A program the verifier rejects is
// reported at the spec place of the instruction it stopped at.
func (t *tracker) load(progs []*bpfgen.Program, own map[string]*ebpf.MapSpec) (*attachment, error) {
	cs := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for n, m := range t.specs {
		cs.Maps[n] = m
	}
	for n, m := range own {
		cs.Maps[n] = m
	}
	for _, p := range progs {
		cs.Programs[p.Name] = p.Spec
	}
	coll, err := ebpf.NewCollectionWithOptions(cs, ebpf.CollectionOptions{MapReplacements: t.maps})
	if err != nil {
		return nil, loadError(progs, err)
	}
	att := &attachment{tr: t, coll: coll, enable: coll.Maps[bpfgen.MapEnable]}
	if err := att.attachAll(progs); err != nil {
		return nil, err
	}
	return att, nil
}

// attachAll attaches programs of the collection (closing everything on a
// failure, placed at the program's spec place).
func (att *attachment) attachAll(progs []*bpfgen.Program) error {
	for _, p := range progs {
		links, err := attachProgram(att.coll.Programs[p.Name], p.Attach)
		att.links = append(att.links, links...)
		if err != nil {
			att.close()
			src := p.Source[0]
			return fmt.Errorf("%s:%s: attaching %s to %s: %w", src.File, src.Pos, p.Name, p.Attach, err)
		}
	}
	return nil
}

// attach loads a sensor — its own maps, its stubs, and its programs with
// selection sel (key: its key) compiled in — and attaches the stubs.
func (t *tracker) attach(s *bpfgen.Sensor, sel *wire.Pred, key string, entsel bool) (*attachment, error) {
	cs := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	for n, m := range s.Maps {
		cs.Maps[n] = m
	}
	stubs := s.Stubs()
	for i, p := range stubs {
		cs.Maps[bpfgen.TailMap(i)] = s.TailMapSpec()
		cs.Programs[p.Name] = p.Spec
	}
	coll, err := ebpf.NewCollection(cs)
	if err != nil {
		return nil, loadError(stubs, err)
	}
	att := &attachment{tr: t, coll: coll, enable: coll.Maps[bpfgen.MapEnable]}
	if err := att.place(s, sel, key, entsel); err != nil {
		att.close()
		return nil, err
	}
	if err := att.attachAll(stubs); err != nil {
		return nil, err
	}
	return att, nil
}

// install loads the sensor's programs with selection sel compiled in and
// puts each in its stub's program array, replacing the previous ones (a
// firing runs one or the other; see bpfgen.Stubs).
func (a *attachment) install(s *bpfgen.Sensor, sel *wire.Pred, key string, entsel bool) error {
	t := a.tr
	f := s.Filter(sel, syscallNumbers, entsel)
	if sel != nil && t.r.opts.rejectSelections {
		rejectable(f)
	}
	cs := &ebpf.CollectionSpec{Maps: map[string]*ebpf.MapSpec{}, Programs: map[string]*ebpf.ProgramSpec{}}
	repl := map[string]*ebpf.Map{}
	for n, m := range t.specs {
		cs.Maps[n], repl[n] = m, t.maps[n]
	}
	for n, m := range s.Maps {
		cs.Maps[n], repl[n] = m, a.coll.Maps[n]
	}
	if f.Consts != nil {
		cs.Maps[bpfgen.MapConsts] = f.Consts
	}
	for _, p := range f.Programs {
		cs.Programs[p.Name] = p.Spec
	}
	bodies, err := ebpf.NewCollectionWithOptions(cs, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return loadError(f.Programs, err)
	}
	for i, p := range f.Programs {
		if err := a.coll.Maps[bpfgen.TailMap(i)].Put(uint32(0), bodies.Programs[p.Name]); err != nil {
			bodies.Close()
			return fmt.Errorf("%s: installing %s: %w", s.Rel.Name, p.Name, err)
		}
	}
	if a.bodies != nil {
		a.bodies.Close()
	}
	a.bodies, a.filter, a.placed, a.entsel = bodies, key, f.Placed, entsel
	return nil
}

func attachProgram(prog *ebpf.Program, at bpfgen.Attach) ([]link.Link, error) {
	switch at.Kind {
	case bpfgen.AttachTracepoint:
		l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
		if err != nil {
			return nil, err
		}
		return []link.Link{l}, nil
	case bpfgen.AttachUprobe, bpfgen.AttachUretprobe:
		ex, err := link.OpenExecutable(at.Path)
		if err != nil {
			return nil, err
		}
		if at.Kind == bpfgen.AttachUretprobe {
			l, err := ex.Uretprobe(at.Symbol, prog, nil)
			if err != nil {
				return nil, err
			}
			return []link.Link{l}, nil
		}
		var links []link.Link
		for _, off := range at.Offsets {
			l, err := ex.Uprobe(at.Symbol, prog, &link.UprobeOptions{Offset: off})
			if err != nil {
				return links, err
			}
			links = append(links, l)
		}
		return links, nil
	}
	return nil, fmt.Errorf("unknown attach kind %d", at.Kind)
}

var (
	verifierInsn = regexp.MustCompile(`^(\d+): \(`)
	verifierAt   = regexp.MustCompile(`\binsn (\d+)\b`) // "unreachable insn 12", "back-edge from insn 3 to 1"
)

// loadError places a load failure: for a verifier rejection, at the spec
// place of the last instruction the verifier reached.
func loadError(progs []*bpfgen.Program, err error) error {
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return err
	}
	var p *bpfgen.Program
	for _, x := range progs {
		if strings.Contains(err.Error(), "program "+x.Name+":") {
			p = x
		}
	}
	if p == nil || len(p.Source) == 0 {
		return err
	}
	// The last instruction line, and the complaint after it.
	insn, last := -1, ""
	for i := len(ve.Log) - 1; i >= 0; i-- {
		m := verifierInsn.FindStringSubmatch(strings.TrimSpace(ve.Log[i]))
		if m == nil {
			continue
		}
		insn, _ = strconv.Atoi(m[1])
		for _, l := range ve.Log[i+1:] {
			l = strings.TrimSpace(l)
			if l != "" && !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") {
				last = l
				break
			}
		}
		break
	}
	if last == "" { // rejected before its walk (the program's shape): the complaint, and its instruction
		for _, l := range ve.Log {
			l = strings.TrimSpace(l)
			if l != "" && !strings.HasPrefix(l, "processed ") && !strings.HasPrefix(l, "verification time") {
				last = l
				if m := verifierAt.FindStringSubmatch(l); m != nil {
					insn, _ = strconv.Atoi(m[1])
				}
				break
			}
		}
	}
	if last == "" && len(ve.Log) > 0 {
		last = strings.TrimSpace(ve.Log[len(ve.Log)-1])
	}
	src := p.Source[0]
	for _, s := range p.Source {
		if s.Off <= insn {
			src = s
		}
	}
	return fmt.Errorf("%s:%s: the kernel's verifier rejected %s (%s) at instruction %d: %s", src.File, src.Pos, p.Name, src.What, insn, last)
}

// rejectable makes f's programs ones the verifier rejects, with an
// unreachable instruction at the end of each (Options.rejectSelections:
// the tests' stand-in for a selection the kernel refuses).
func rejectable(f *bpfgen.Filter) {
	for _, p := range f.Programs {
		spec := p.Spec.Copy()
		spec.Instructions = append(spec.Instructions, asm.Mov.Imm(asm.R0, 0), asm.Return())
		p.Spec = spec
	}
}
