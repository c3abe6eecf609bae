package bpfgen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
)

// EntityTypes returns the entity types kernel sensors identify, in the
// order of their type numbers, and how: a Process by its thread group ID, a
// Thread by its thread ID, a Processor by its CPU number. The slice is the
// caller's.
func EntityTypes() []string { return []string{"Process", "Thread", "Processor"} }

// TaskStates returns the members a task_state() value can take, from
// sched_switch's prev_state: runnable (preempted), interruptible sleep,
// uninterruptible sleep, idle (uninterruptible, not counted as load), and
// anything else (stopped, traced…). The slice is the caller's.
func TaskStates() []string { return []string{"Preempted", "Sleeping", "Blocked", "Idle", "Other"} }

// Compile compiles the sensor bindings of the files (one description
// split over several files; cat is their catalog) for kernel k. Every
// problem found is reported (a source.ErrorList, file:line:col), not only
// the first.
func Compile(cat *algebra.Catalog, files []*sdl.File, k Kernel) (*Spec, error) {
	return CompileWith(cat, files, k, Options{})
}

// CompileWith is Compile with options.
func CompileWith(cat *algebra.Catalog, files []*sdl.File, k Kernel, o Options) (*Spec, error) {
	spec := &Spec{Catalog: cat, Relations: len(cat.Relations), Follow: o.Follow, FollowEntries: o.FollowEntries, EntSelEntries: o.EntSelEntries}
	var errs source.ErrorList
	var catSrc *source.File // the text of the file the catalog is named for
	for _, f := range files {
		if f.Name == cat.File {
			catSrc = f.Src
		}
	}
	for _, t := range EntityTypes() {
		if !cat.HasEntityType(t) {
			errs.AddIn(catSrc, cat.File, source.Pos{Line: 1, Col: 1}, "a kernel description declares entity type %s", t)
		}
	}
	byRel := map[string]*Sensor{}
	for _, f := range files {
		for _, st := range f.Stmts {
			d, ok := st.(*sdl.SensorDecl)
			if !ok {
				continue
			}
			c := &compiler{file: f.Name, k: k}
			c.errf = func(pos source.Pos, format string, args ...any) { errs.AddIn(f.Src, f.Name, pos, format, args...) }
			c.resolver = resolver{errf: c.errf}
			rel := cat.Lookup(d.Name.Name)
			if rel == nil {
				c.errf(d.Name.At, "no relation %s to bind a sensor to", d.Name.Name)
				continue
			}
			s := byRel[rel.Name]
			if s == nil {
				if s = c.sensor(rel, cat, d.Name.At); s == nil {
					continue
				}
				byRel[rel.Name] = s
			}
			if b := c.binding(s, d); b != nil {
				s.Bindings = append(s.Bindings, b)
			}
		}
	}
	for i, rel := range cat.Relations {
		if s := byRel[rel.Name]; s != nil {
			s.ID = i
			spec.Sensors = append(spec.Sensors, s)
		}
	}
	if err := errs.Err(); err != nil {
		errs.Sort()
		return nil, errs.Err()
	}
	for _, s := range spec.Sensors {
		for _, b := range s.Bindings {
			spec.MaxRecord = max(spec.MaxRecord, b.Layout.Size)
		}
	}
	// Programs last: they need the sensors' IDs.
	for _, s := range spec.Sensors {
		s.follow = o.Follow && s.FlagType == "Process"
		for _, b := range s.Bindings {
			b.Programs = generateBinding(s, b, nil, false)
		}
	}
	ent, err := entityPrograms(spec, k)
	if err != nil {
		return nil, err
	}
	spec.Entities = ent
	return spec, nil
}

type compiler struct {
	resolver
	file string
	k    Kernel
}

// sensor checks that rel can have kernel bindings.
func (c *compiler) sensor(rel *algebra.Relation, cat *algebra.Catalog, at source.Pos) *Sensor {
	switch {
	case rel.Class == algebra.ClassEntity:
		c.errf(at, "%s is an entity relation: the kernel's entity relations (Process, Thread, Processor) are built in", rel.Name)
		return nil
	case rel.Strategy.Kind == algebra.NotSensed:
		c.errf(at, "%s has no strategy: declare it traced on its flag holder", rel.Name)
		return nil
	case rel.Strategy.Kind == algebra.Sampled:
		c.errf(at, "%s is sampled: kernel sensors are traced (traced, or traced then disabled)", rel.Name)
		return nil
	}
	flag := rel.Attrs[rel.FlagHolder]
	if !slices.Contains(EntityTypes(), flag.Type.Entity) {
		c.errf(at, "%s's flag holder %s is a %s: kernel sensors keep flags on Process, Thread or Processor", rel.Name, flag.Name, flag.Type.Entity)
		return nil
	}
	return &Sensor{
		Rel: rel, Flag: rel.FlagHolder, FlagType: flag.Type.Entity,
		Decrement: rel.Strategy.Kind == algebra.TracedThenDisabled,
		Maps:      map[string]*ebpf.MapSpec{MapEnable: enableMapSpec(rel.Name)},
	}
}

// clause is a probe clause resolved: its probe, values by attribute,
// key and conditions.
type clause struct {
	decl   *sdl.ProbeClause
	probe  *probeCtx
	attach Attach
	vals   map[int]*value
	key    *value // nil: the default
	conds  []resolvedCond
	pos    source.Pos
	what   string
	// keySP: the default key of a call (process, stack pointer at entry);
	// spAdjust is added to the stack pointer read here.
	keySP    bool
	spAdjust int32
}

type resolvedCond struct {
	x    *value
	op   sdl.CondOp
	vals []uint64
	pos  source.Pos
	text string
}

// binding checks one `sensor` statement and lays out its records.
func (c *compiler) binding(s *Sensor, d *sdl.SensorDecl) *Binding {
	rel := s.Rel
	b := &Binding{Index: len(s.Bindings), File: c.file, Pos: d.At}
	if b.Index > 255 {
		c.errf(d.At, "%s has more than 256 bindings", rel.Name)
		return nil
	}
	from := c.clause(d.From, false)
	if from == nil {
		return nil
	}
	from.what = fmt.Sprintf("sensor %s at %s", rel.Name, from.probe.name)
	var to *clause
	switch {
	case d.To != nil:
		if rel.Class != algebra.ClassInterval {
			c.errf(d.At, "%s is an event relation: bind it with `at`, not `from … to …`", rel.Name)
			return nil
		}
		if to = c.clause(d.To, true); to == nil {
			return nil
		}
		from.what = fmt.Sprintf("sensor %s from %s", rel.Name, from.probe.name)
		to.what = fmt.Sprintf("sensor %s to %s", rel.Name, to.probe.name)
	case rel.Class == algebra.ClassInterval:
		if from.attach.Kind != AttachUprobe {
			c.errf(d.From.Probe.At, "%s is an interval relation: bind it with `from PROBE … to PROBE`, or `at uprobe` for a call from entry to return", rel.Name)
			return nil
		}
		// A call: from the function's entry to its return.
		ret := *d.From
		ret.Probe = &sdl.Probe{At: d.From.Probe.At, Kind: sdl.ProbeUretprobe, Path: d.From.Probe.Path, Symbol: d.From.Probe.Symbol}
		ret.Binds, ret.Key, ret.Conds = nil, nil, nil
		if to = c.clause(&ret, true); to == nil {
			return nil
		}
		to.what = fmt.Sprintf("sensor %s: the return of %s %s", rel.Name, d.From.Probe.Path, d.From.Probe.Symbol)
	}
	// Every attribute bound once; the flag holder at the begin.
	bound := map[int]source.Pos{}
	ok := true
	for _, cl := range []*clause{from, to} {
		if cl == nil {
			continue
		}
		for _, bd := range cl.decl.Binds {
			i := rel.AttrIndex(bd.Name.Name)
			if i < 0 {
				c.errf(bd.Name.At, "%s has no attribute %s", rel.Name, bd.Name.Name)
				ok = false
				continue
			}
			if p, dup := bound[i]; dup {
				c.errf(bd.Name.At, "%s.%s bound twice (first at %s)", rel.Name, bd.Name.Name, p)
				ok = false
				continue
			}
			bound[i] = bd.Name.At
			v := c.resolve(bd.Value, cl.probe)
			if v == nil || !c.fits(v, rel.Attrs[i], bd.Value.Pos()) {
				ok = false
				continue
			}
			cl.vals[i] = v
		}
	}
	for i, a := range rel.Attrs {
		if _, have := bound[i]; !have && ok {
			c.errf(d.Name.At, "sensor %s does not bind %s.%s", rel.Name, rel.Name, a.Name)
			ok = false
		}
	}
	if ok && from.vals[s.Flag] == nil {
		c.errf(d.To.Probe.At, "%s's flag holder %s must be bound where the interval begins (the enable test is made there)", rel.Name, rel.Attrs[s.Flag].Name)
		ok = false
	}
	if !ok {
		return nil
	}
	b.Mode = ModeEvent
	header := EventHeader
	if to != nil {
		b.Mode = ModeSplit
		if len(to.vals) > 0 {
			b.Mode = ModeWhole
		}
		header = IntervalHeader
		defaultKeys(from, to)
	}
	b.Layout = layout(rel, header, from, to)
	b.clauses = [2]*clause{from, to}
	if to != nil {
		s.Maps[StateMap(b.Index)] = stateMapSpec(rel.Name, stateSize(b))
	}
	return b
}

// stateSize is the state an interval keeps between its ends: its begin
// time, and for whole intervals the values filled at the begin (kept at
// their record offsets).
func stateSize(b *Binding) int {
	if b.Mode == ModeWhole {
		return b.Layout.Size
	}
	return 8
}

// defaultKeys sets the keys the clauses do not give: a call (a uprobe's
// entry to the same function's return) pairs by process and stack
// pointer, anything else by the current task (its address: a thread that
// executes a program from another thread than its leader takes the
// leader's pid, but stays the same task).
func defaultKeys(from, to *clause) {
	call := from.attach.Kind == AttachUprobe && to.probe.ret &&
		from.attach.Path == to.attach.Path && from.attach.Symbol == to.attach.Symbol
	for _, cl := range []*clause{from, to} {
		if cl.key != nil {
			continue
		}
		if call {
			cl.keySP = true
			if cl == to && cl.attach.Kind == AttachUretprobe {
				cl.spAdjust = -8 // the return address has been popped
			}
			continue
		}
		cl.key = &value{pos: cl.pos, text: "task (the default key)", op: opTask}
	}
}

// clause resolves a probe clause (end: the end of an interval).
func (c *compiler) clause(d *sdl.ProbeClause, end bool) *clause {
	p := d.Probe
	cl := &clause{decl: d, vals: map[int]*value{}, pos: p.At}
	pc := &probeCtx{}
	switch p.Kind {
	case sdl.ProbeTracepoint:
		args, err := c.k.TracepointArgs(p.Event.Name)
		if err != nil {
			c.errf(p.Event.At, "tracepoint %s:%s: %v", p.Group.Name, p.Event.Name, err)
			return nil
		}
		pc.kind, pc.args = AttachTracepoint, args
		pc.name = fmt.Sprintf("tracepoint %s:%s", p.Group.Name, p.Event.Name)
		cl.attach = Attach{Kind: AttachTracepoint, Event: p.Event.Name, Group: p.Group.Name}
	case sdl.ProbeUprobe, sdl.ProbeUretprobe:
		fn, err := c.k.Func(p.Path, p.Symbol)
		if err != nil {
			c.errf(p.SymbolPos, "%s %q: %v", p.Kind, p.Symbol, err)
			return nil
		}
		pc.goABI = fn.Go
		pc.name = fmt.Sprintf("%s %s %s", p.Kind, p.Path, p.Symbol)
		cl.attach = Attach{Kind: AttachUprobe, Path: p.Path, Symbol: p.Symbol, Offsets: []uint64{0}}
		pc.kind = AttachUprobe
		if p.Kind == sdl.ProbeUretprobe {
			pc.ret = true
			if fn.Go {
				if len(fn.Returns) == 0 {
					c.errf(p.SymbolPos, "%s %q: the function has no RET instruction to probe", p.Kind, p.Symbol)
					return nil
				}
				cl.attach.Offsets = append([]uint64(nil), fn.Returns...)
			} else {
				pc.kind = AttachUretprobe
				cl.attach.Kind, cl.attach.Offsets = AttachUretprobe, nil
			}
		}
	default:
		return nil
	}
	cl.probe = pc
	ok := true
	if d.Key != nil {
		if cl.key = c.resolve(d.Key, pc); cl.key == nil {
			ok = false
		} else if cl.key.isStr() || cl.key.decode != DecodeNone {
			c.errf(d.Key.Pos(), "a key is a number, not %s", cl.key.text)
			ok = false
		}
	}
	for _, cd := range d.Conds {
		x := c.resolve(cd.X, pc)
		if x == nil {
			ok = false
			continue
		}
		if x.isStr() || x.decode != DecodeNone {
			c.errf(cd.X.Pos(), "a condition compares a number, not %s", x.text)
			ok = false
			continue
		}
		rc := resolvedCond{x: x, op: cd.Op, pos: cd.X.Pos()}
		var texts []string
		for _, v := range cd.Values {
			rc.vals = append(rc.vals, v.Value)
			texts = append(texts, v.Text)
		}
		rc.text = sdl.FormatBExpr(cd.X) + " " + cd.Op.String() + " " + strings.Join(texts, ", ")
		if cd.Op == sdl.CondIn {
			rc.text = sdl.FormatBExpr(cd.X) + " in (" + strings.Join(texts, ", ") + ")"
		}
		cl.conds = append(cl.conds, rc)
	}
	if !ok {
		return nil
	}
	return cl
}

// fits checks a value against the attribute it fills.
func (c *compiler) fits(v *value, a algebra.Attr, at source.Pos) bool {
	t := a.Type
	switch t.Kind {
	case algebra.KindEntity:
		if !slices.Contains(EntityTypes(), t.Entity) {
			c.errf(at, "%s is a %s: kernel sensors fill Process, Thread and Processor entities", a.Name, t.Entity)
			return false
		}
		if v.isStr() || v.decode != DecodeNone {
			c.errf(at, "%s is a %s, identified by a number: not %s", a.Name, t.Entity, v.text)
			return false
		}
	case algebra.KindInt, algebra.KindBool, algebra.KindTime, algebra.KindDuration:
		if v.isStr() || v.decode != DecodeNone {
			c.errf(at, "%s is %s: not %s", a.Name, article(t.String()), v.text)
			return false
		}
	case algebra.KindString:
		if !v.isStr() && v.decode != DecodeSyscall {
			c.errf(at, "%s is a string: %s is a number (convert it: syscall(…), or read a string: comm, user_string(…), a char array)", a.Name, v.text)
			return false
		}
	case algebra.KindEnum:
		switch {
		case v.isStr():
			c.errf(at, "%s is an enum: %s is a string", a.Name, v.text)
			return false
		case v.decode == DecodeTaskState:
			for _, m := range TaskStates() {
				if t.Enum.Ordinal(m) < 0 {
					c.errf(at, "%s takes task_state(…), whose values are %v: add %s to its enum", a.Name, TaskStates(), m)
					return false
				}
			}
		case v.decode != DecodeNone:
			c.errf(at, "%s is an enum: %s is not one", a.Name, v.text)
			return false
		}
	default:
		c.errf(at, "%s is %s: kernel sensors fill numbers, strings, entities and enums", a.Name, article(t.String()))
		return false
	}
	return true
}

func article(s string) string {
	if s != "" && (s[0] == 'a' || s[0] == 'e' || s[0] == 'i' || s[0] == 'o' || s[0] == 'u') {
		return "an " + s
	}
	return "a " + s
}

// layout places the values after the header: numbers (8 bytes) first,
// then strings (their buffers rounded up to 8), each group in attribute
// order.
func layout(rel *algebra.Relation, header int, from, to *clause) Layout {
	l := Layout{Slots: make([]Slot, len(rel.Attrs))}
	off := header
	val := func(i int) *value {
		if v := from.vals[i]; v != nil {
			return v
		}
		return to.vals[i]
	}
	for pass := range 2 {
		for i, a := range rel.Attrs {
			v := val(i)
			if v.isStr() != (pass == 1) {
				continue
			}
			sl := Slot{Attr: i, Off: off, Size: 8, Str: v.isStr(), Decode: v.decode, Signed: v.signed}
			if a.Type.Kind == algebra.KindEntity {
				sl.Entity = a.Type.Entity
			}
			if sl.Str {
				sl.Size = (v.strLen + 7) &^ 7
			}
			l.Slots[i] = sl
			off += sl.Size
		}
	}
	l.Size = off
	return l
}
