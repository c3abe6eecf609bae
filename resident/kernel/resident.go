package kernel

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/resident/plans"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

//go:embed linux.sdl
var linuxSDL string

// LinuxSDL returns the built-in description of the kernel's sensors.
func LinuxSDL() string { return linuxSDL }

// LinuxSDLName is its file name in diagnostics.
const LinuxSDLName = "linux.sdl"

// Source is a sensor description given as text: extensions of
// linux.sdl (uprobe sensors of user programs).
type Source struct {
	Name, Text string
}

// ReadSources reads sensor-description files (tqmon's --spec), each named
// by its path.
func ReadSources(paths []string) ([]Source, error) {
	var specs []Source
	for _, path := range paths {
		text, err := source.ReadFile(path, nil) // bounded, regular files only
		if err != nil {
			return nil, err
		}
		specs = append(specs, Source{Name: path, Text: text})
	}
	return specs, nil
}

// Options configure a kernel resident.
type Options struct {
	// Name is announced in the handshake (default "kernel@HOSTNAME").
	Name string
	// Specs extend linux.sdl: further relations and their bindings
	// (typically uprobes), in the same language.
	Specs []Source
	// RingBytes is the size of the packet ring buffer (a power of two,
	// at least a page; default 8 MiB). EntityRingBytes sizes the ring of
	// process and thread records (default 2 MiB).
	RingBytes       int
	EntityRingBytes int
	// Logf reports what goes wrong outside any command (default: nothing).
	Logf func(format string, args ...any)
	// Follow: enabling a sensor for a process enables it for every
	// process that one forks from then on, transitively, in the kernel
	// before the child runs (bpfgen.Options.Follow; tqmon's --follow).
	Follow bool
	// FollowEntries bounds how many processes are followed at once (0:
	// bpfgen.FollowEntries); a fork past it is reported lost (Process).
	FollowEntries int
	// EntSelEntries bounds how many processes are selected by their
	// command at once (0: bpfgen.EntSelEntries); past it, a sensor so
	// selected is enabled for every process (exact: the monitor's join
	// selects; see entsel.go).
	EntSelEntries int
	// NoSelections: the resident does not advertise wire.CapFragments
	// and compiles no selection into its programs (every enabled packet
	// is sent; the monitor selects) — for comparing the two.
	NoSelections bool
	// NoPlans: the resident does not advertise wire.CapPlans and refuses
	// CPlan (a program's joins and aggregates run at the monitor, over
	// the packets) — for comparing the two (plan.go).
	NoPlans bool
	// PlanQueue bounds the result packets a plan session holds for a
	// monitor that does not read them (0 and most: plans.MaxQueued,
	// 65,536); past it the fragment stops, saying so.
	PlanQueue int
	// rejectSelections: every program with a selection compiled in is
	// made one the verifier rejects (tests: RejectSelections).
	rejectSelections bool
}

// ErrUnavailable: the kernel sensors cannot run here (not root, no BPF,
// no BTF, not x86-64). Tests skip on it.
var ErrUnavailable = errors.New("kernel sensors are unavailable")

// Resident is the kernel resident monitor: it compiles linux.sdl (and
// the extensions) into eBPF programs, attaches a sensor's programs only
// while some session enables it for some entity, keeps the enable maps
// from the sessions' commands, tracks processes, threads and processors,
// drains the ring buffers every millisecond and serves the sessions of
// remote monitors — in process (Local) or through a transport (Sessions).
type Resident struct {
	opts    Options
	text    string // the description announced: linux.sdl and the extensions
	cat     *algebra.Catalog
	spec    *bpfgen.Spec
	hello   *wire.Hello
	ent     [3]int // the entity relations' sensor IDs: Process, Thread, Processor
	sensors []*sensorState
	// syscalls are syscallNames by number ("" for none): the drain names
	// each Syscall packet's call without a map lookup.
	syscalls []string

	mu       sync.Mutex
	closed   bool
	sessions session.Table[Session]
	budget   *session.Budget // what the sessions hold together
	tr       *tracker        // while some session is open
	// commSel: per command name, per sensor, the entity triggers that
	// select it (entsel.go).
	commSel map[string]map[int]int
	// plans are the plan fragments it runs (nil: Options.NoPlans;
	// plan.go).
	plans *plans.Registry
}

// entity type IDs (linux.sdl declares them first, in this order).
const (
	typeProcess = iota
	typeThread
	typeProcessor
)

// New compiles the description and checks that kernel sensors can run;
// it attaches nothing (that waits for a session's enables). Errors in
// the description are positioned (file:line:col); an unusable system
// gives an error wrapping ErrUnavailable.
func New(opts Options) (*Resident, error) {
	if opts.RingBytes == 0 {
		opts.RingBytes = 8 << 20
	}
	if opts.EntityRingBytes == 0 {
		opts.EntityRingBytes = 2 << 20
	}
	for _, n := range []int{opts.RingBytes, opts.EntityRingBytes} {
		if n < os.Getpagesize() || n&(n-1) != 0 {
			return nil, fmt.Errorf("ring buffer size %d: want a power of two of at least %d bytes", n, os.Getpagesize())
		}
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = "kernel@" + host
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if err := Available(); err != nil {
		return nil, err
	}
	d, err := describeWith(opts.Specs, &system{}, bpfgen.Options{Follow: opts.Follow, FollowEntries: opts.FollowEntries, EntSelEntries: opts.EntSelEntries})
	if err != nil {
		return nil, err
	}
	return newResident(opts, d)
}

// newResident makes a resident of a compiled description (opts with
// their defaults); it attaches nothing.
func newResident(opts Options, d *Description) (*Resident, error) {
	text, cat, spec := d.SDL, d.Catalog, d.Spec
	r := &Resident{opts: opts, text: text, cat: cat, spec: spec, budget: session.NewBudget(session.MaxHeldTotal)}
	for nr, name := range syscallNames {
		if nr < 1024 {
			r.syscalls = append(r.syscalls, make([]string, max(int(nr)+1-len(r.syscalls), 0))...)
			r.syscalls[nr] = name
		}
	}
	for i, t := range bpfgen.EntityTypes() {
		if cat.EntityTypes[i] != t {
			return nil, fmt.Errorf("%s: the entity types must be declared first, as Process, Thread, Processor", LinuxSDLName)
		}
		rel := cat.EntityRelation(t)
		r.ent[i] = slices.Index(cat.Relations, rel)
	}
	r.sensors = make([]*sensorState, len(cat.Relations))
	for _, s := range spec.Sensors {
		r.sensors[s.ID] = &sensorState{s: s, ids: map[uint32]int{}}
	}
	mono, wall := clocks()
	r.hello = &wire.Hello{
		Version:  wire.Version,
		Name:     opts.Name,
		SDL:      text,
		Types:    append([]string(nil), cat.EntityTypes...),
		MonoBase: mono,
		WallBase: wall,
		Period:   cat.ClockPeriod,
		// No wire.CapTriggers: the remote widens join restrictions.
	}
	if !opts.NoSelections {
		r.hello.Caps = append(r.hello.Caps, wire.CapFragments)                     // see filter.go
		r.hello.Caps = append(r.hello.Caps, wire.CapEntityTriggers, wire.CapWhile) // see entsel.go
	}
	if !opts.NoPlans {
		r.plans = plans.NewRegistry(opts.PlanQueue)
		r.hello.Caps = append(r.hello.Caps, wire.CapPlans) // see plan.go
	}
	for _, rel := range cat.Relations {
		r.hello.Sensors = append(r.hello.Sensors, rel.Name)
	}
	return r, nil
}

// Description is linux.sdl with extensions, compiled: what a kernel
// resident announces and the programs it would load.
type Description struct {
	// SDL is the text announced: linux.sdl, then each extension.
	SDL     string
	Catalog *algebra.Catalog
	Spec    *bpfgen.Spec
}

// Describe compiles linux.sdl and the extensions against the running
// kernel's BTF (readable without root) and the executables uprobes name,
// without loading anything.
func Describe(specs []Source) (*Description, error) { return describe(specs, &system{}) }

func describe(specs []Source, k bpfgen.Kernel) (*Description, error) {
	return describeWith(specs, k, bpfgen.Options{})
}

func describeWith(specs []Source, k bpfgen.Kernel, o bpfgen.Options) (*Description, error) {
	files, text, err := parseDescription(specs)
	if err != nil {
		return nil, err
	}
	if err := checkNames(files); err != nil {
		return nil, err
	}
	merged := &sdl.File{Name: files[len(files)-1].Name, Src: files[len(files)-1].Src}
	for _, f := range files {
		merged.Stmts = append(merged.Stmts, f.Stmts...)
	}
	cat, err := sensor.Compile(merged)
	if err != nil {
		return nil, err
	}
	spec, err := bpfgen.CompileWith(cat, files, k, o)
	if err != nil {
		return nil, err
	}
	return &Description{SDL: text, Catalog: cat, Spec: spec}, nil
}

// checkNames reports, in the extension that does it, an entity type or a
// relation declared again (the description is compiled as one file,
// whose errors could not say which file came first).
func checkNames(files []*sdl.File) error {
	var errs source.ErrorList
	first := map[string]string{} // name → "file:line:col"
	note := func(f *sdl.File, id *sdl.Ident, what string) {
		key := what + " " + id.Name
		if at, dup := first[key]; dup {
			errs.AddIn(f.Src, f.Name, id.At, "%s %s is already declared (at %s)", what, id.Name, at)
			return
		}
		first[key] = fmt.Sprintf("%s:%s", f.Name, id.At)
	}
	for _, f := range files {
		for _, st := range f.Stmts {
			switch d := st.(type) {
			case *sdl.EntityTypeDecl:
				for _, n := range d.Names {
					note(f, n, "entity type")
				}
			case *sdl.RelationDecl:
				note(f, d.Name, "relation")
			}
		}
	}
	errs.Sort()
	return errs.Err()
}

// parseDescription parses linux.sdl and the extensions; the announced
// text is their concatenation.
func parseDescription(extra []Source) ([]*sdl.File, string, error) {
	all := append([]Source{{Name: LinuxSDLName, Text: linuxSDL}}, extra...)
	var files []*sdl.File
	var b strings.Builder
	for _, s := range all {
		f, err := sdl.Parse(s.Name, s.Text)
		if err != nil {
			return nil, "", err
		}
		files = append(files, f)
		if b.Len() > 0 {
			fmt.Fprintf(&b, "\n-- from %s\n", s.Name)
		}
		b.WriteString(s.Text)
	}
	return files, b.String(), nil
}

// Available reports why kernel sensors cannot run here (an error wrapping
// ErrUnavailable), or nil.
func Available() error {
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("%w: they are built for x86-64, not %s", ErrUnavailable, runtime.GOARCH)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: loading eBPF programs needs root", ErrUnavailable)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: the kernel has no BTF (/sys/kernel/btf/vmlinux): %v", ErrUnavailable, err)
	}
	// Memory for BPF is accounted by cgroup on recent kernels: a failure
	// to lift RLIMIT_MEMLOCK is not fatal.
	_ = rlimit.RemoveMemlock()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: uint32(os.Getpagesize())})
	if err != nil {
		return fmt.Errorf("%w: cannot create a BPF ring buffer: %v", ErrUnavailable, err)
	}
	m.Close()
	return nil
}

// clocks reads the monotonic clock (the one BPF's ktime is) and the wall
// clock, as close together as possible.
func clocks() (mono, wall int64) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	wall = time.Now().UnixNano()
	return ts.Nano(), wall
}

func monoNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// Hello returns the handshake.
func (r *Resident) Hello() *wire.Hello {
	h := *r.hello
	h.Types = slices.Clone(h.Types)
	h.Sensors = slices.Clone(h.Sensors)
	return &h
}

// Catalog returns the catalog of the resident's description.
func (r *Resident) Catalog() *algebra.Catalog { return r.cat }

// SDL returns the description the resident announces.
func (r *Resident) SDL() string { return r.text }

// Spec returns the generated programs.
func (r *Resident) Spec() *bpfgen.Spec { return r.spec }

// Close ends every session (each gets what the rings still hold in a
// last batch, then session.ErrClosed) and detaches everything. It is
// idempotent.
func (r *Resident) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	tr := r.tr
	r.mu.Unlock()
	if tr != nil {
		tr.stopDrain(true)
	}
	r.mu.Lock()
	for i := range session.Indices(r.sessions.Mask()) {
		r.dropSessionLocked(r.sessions.At(i), session.ErrClosed, true)
	}
	tr = r.tr
	r.tr = nil
	r.mu.Unlock()
	if tr != nil {
		tr.teardown()
	}
}
