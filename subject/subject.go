package subject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/transport"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/replay"
)

// ErrInput marks errors in what a subject was opened with — a history
// that does not load, a database that does not open, a bad kernel
// description or --target — as opposed to failures of a system that was
// reached (a command reports the first as usage errors).
var ErrInput = errors.New("subject: bad input")

type inputError struct{ err error }

func (e inputError) Error() string   { return e.err.Error() }
func (e inputError) Unwrap() []error { return []error{e.err, ErrInput} }

func badInput(err error) error { return inputError{err} }

// ErrRecorded is returned by what only a live subject can do (record it).
var ErrRecorded = errors.New("subject: a recording, not a live system")

// Options name one subject: set exactly one of History, DB, Connect, Demo
// and Kernel (Given counts them).
type Options struct {
	// History is a recorded history directory (one .sdl file and one CSV
	// file per relation).
	History string
	// DB is a database. ResultsInto is the database results are to be
	// stored in (Results): when it is DB, DB opens for writing too.
	DB          string
	ResultsInto string
	// Parquet is a Parquet recording's directory (store/parquet).
	Parquet string
	// Security secures the connections to residents and the NATS server
	// (TLS, and whether a token may go in clear: Residents).
	Security transport.Security
	// Connect are the addresses of resident monitors, reached with Token;
	// NATS is a NATS server whose hosts matching the glob Hosts are
	// reached too (Residents).
	Connect []string
	NATS    string
	Hosts   string
	// Skew and Silence shape the fleet's hosts (Residents).
	Skew, Silence time.Duration
	Token         string
	// Resume, when set, makes the fleet's sessions durable and resumable
	// under its name (Residents.Resume).
	Resume *fleet.Resume
	// Demo runs the paper's example system in this process, as Config
	// says. Without Background it starts once the first session's
	// residents know what to enable and runs for that session's duration
	// (until it ends or the context does); with Background it runs from
	// Open to Close and every session joins it. Truth, when set, is where
	// Close writes its complete ground truth.
	Demo       bool
	Config     demo.Config
	Background bool
	Truth      string
	// Kernel is this machine's Linux kernel.
	Kernel *KernelOptions
	// Notes, when set, is told what the user should know about the subject
	// as it opens (a database that is still being recorded).
	Notes io.Writer
	// MaxMemory is the memory budget, in bytes, of every query run over
	// the subject (0: none; see query.Watch and query.DefaultMaxMemory):
	// a run past it stops with an exec.MemoryError.
	MaxMemory int64
}

// KernelOptions shape the kernel subject.
type KernelOptions struct {
	// Command, when set, is started paused (its pid is $target) and
	// released once the sensors are ready; a live run ends once it exits.
	Command []string
	// Target is a running process's pid, $target.
	Target string
	// Specs extend the kernel's description (uprobe sensors).
	Specs []kernel.Source
	// RingBytes is the size of the packet ring buffer.
	RingBytes int
	// Stdin, Stdout and Stderr are the command's (nil: this process's).
	Stdin, Stdout, Stderr *os.File
	// Follow: an enable of a process covers the processes it forks from
	// then on (kernel.Options.Follow).
	Follow bool
	// Logf reports what the resident does otherwise than asked, the
	// answer unchanged (a selection the verifier rejected, a bound that
	// widened a sensor; kernel.Options.Logf). Nil: nothing.
	Logf func(format string, args ...any)
}

func (o *Options) residents() Residents {
	return Residents{Connect: o.Connect, NATS: o.NATS, Hosts: o.Hosts, Token: o.Token, Skew: o.Skew, Silence: o.Silence, Security: o.Security, Resume: o.Resume}
}

// Given counts the subjects the options name.
func (o *Options) Given() int {
	n := 0
	for _, on := range []bool{o.History != "", o.DB != "", o.Parquet != "", o.residents().Given(), o.Demo, o.Kernel != nil} {
		if on {
			n++
		}
	}
	return n
}

// A Subject is what a command monitors.
type Subject interface {
	// Describe says what the subject is, in a line.
	Describe() string
	Catalog() *algebra.Catalog
	// Spec is the sensor description, as a database keeps it.
	Spec() (db.Spec, error)
	// Now is the time "now" stands for in queries: the end of what a
	// recording observed; 0 for a live subject.
	Now() algebra.Time
	// Extent is the span of what a recording holds (ok false when it
	// holds nothing, and for a live subject).
	Extent() (start, end algebra.Time, ok bool)
	// Window is the span a recording covers (nil when it has none, and
	// for a live subject).
	Window() *algebra.Window
	// Params are the parameters the subject defines ($target).
	Params() map[string]string
	// Live subjects stream results as they are produced (RunOptions
	// OnElem) until the context ends, the duration passes or the subject
	// does; recordings give whole tables.
	Live() bool
	// Run runs a compiled program over the subject. A live run whose
	// answers may be incomplete (packets lost, a session lost) returns
	// its results and an error that is remote.ErrIncomplete.
	Run(ctx context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error)
	// Explain writes the plans of the program's retrieves from first on
	// as Run would run them (rewritten unless naive).
	Explain(w io.Writer, prog *query.Program, first int, naive bool) error
	// Sensors reports the sensors: what the last live run enabled,
	// received and lost.
	Sensors() string
	// Close releases the subject. The kernel's returns a *CommandExit
	// when its command exited with a status other than 0.
	Close() error

	// session runs mon against a session of a live subject's residents;
	// it returns the span a demo subject ran (nil for others).
	session(ctx context.Context, d time.Duration, mon func(Session) error) (*algebra.Window, error)
	// recorded is a recording for a display to play.
	recorded() (playable, error)
	database() *db.DB
}

// Session is a live subject's residents for one monitor.
type Session struct {
	Conns []wire.Conn
	// Ready starts a subject waiting for the monitor (the monitor calls
	// it once the residents know what to enable: remote.LiveOptions).
	Ready func()
	// Clock is the subject's own clock when it runs in this process (nil:
	// the residents' reports are the only clock).
	Clock func() algebra.Time
	// Ctx is the context a monitor that runs until the subject ends runs
	// under; Duration bounds it (0: the subject's run bounds it).
	Ctx      context.Context
	Duration time.Duration
	// Follow is how the residents follow descendants (nil: they do not;
	// remote.LiveOptions.Follow).
	Follow *exec.Follow
}

// RunOptions shape a run.
type RunOptions struct {
	// Naive runs the initial plans, not the rewritten ones.
	Naive bool
	// Acquire runs a program over a recorded history acquisitionally:
	// only the packets enabled sensors would deliver.
	Acquire bool
	// Duration and Lease shape a live run (remote.LiveOptions).
	Duration, Lease time.Duration
	// WireBytes counts the bytes a live run's batches take on the wire
	// (remote.LiveOptions.WireBytes; --stats prints them).
	WireBytes bool
	// OnElem, if set, sees each result element as it is produced, in
	// time order for each statement.
	OnElem func(stmt int, e stream.Elem)
	// Rerun, if set, is told that a run over a history starts again from
	// the beginning (why: a file out of time order): OnElem sees the
	// elements again.
	Rerun func(why error)
	// Ready, if set, is called once a live subject's residents know what
	// to enable.
	Ready func()
	// Progress, if set, is called each time a live run's watermark
	// advances (remote.LiveOptions).
	Progress func(algebra.Time)
	// Discard keeps no result rows (OnElem sees them; the tables Run
	// returns are empty): a run then holds only what its operators need.
	Discard bool
	// OnLoss, if set, sees each loss a live run's residents report as
	// it happens; TimeFormat prints the times of a lost session's error.
	OnLoss     func(remote.Loss)
	TimeFormat algebra.TimeFormat
	// From, To, Pace and Player shape a run over a database
	// (replay.Options).
	From, To *algebra.Time
	Pace     *play.Options
	Player   func(*play.Player)
}

// Stats are what a run cost: one of its fields is set, as the subject
// and the run were.
type Stats struct {
	// History is a run over a recorded history (the most tuples held).
	History *query.Stats
	// Acquire is an acquisitional run over a history.
	Acquire *exec.AcquireStats
	// Live is a live run.
	Live *remote.LiveStats
	// Read is a run over a database, whose Blocks holds each relation's
	// blocks.
	Read   *replay.Stats
	Blocks map[string]uint64
	// Files holds each relation's files, for a run over a Parquet
	// recording (whose Read counts the files opened).
	Files map[string]int
	// TimeFormat prints times (a live run's observation).
	TimeFormat algebra.TimeFormat
}

// Write prints the statistics, a line per fact.
func (st Stats) Write(w io.Writer) {
	switch {
	case st.History != nil:
		fmt.Fprintf(w, "packets: %d (complete history, no sensors involved)\npeak held: %d\n", 0, st.History.PeakHeld)
	case st.Acquire != nil:
		writePackets(w, st.Acquire.Total, st.Acquire.Packets)
		fmt.Fprintf(w, "peak held: %d\n", st.Acquire.PeakHeld)
	case st.Live != nil:
		total := 0
		for _, n := range st.Live.Packets {
			total += n
		}
		writePackets(w, total, st.Live.Packets)
		for _, n := range slices.Sorted(maps.Keys(st.Live.Packets)) {
			fmt.Fprintf(w, "produced %s: %d\n", n, st.Live.Wanted[n])
		}
		if st.Live.Placed {
			fmt.Fprintf(w, "placed: every operator ran at the resident (a plan fragment); the wire carried its results\n")
		}
		fmt.Fprintf(w, "wire: %d tuples, %d bytes\n", st.Live.WireTuples, st.Live.WireBytes)
		fmt.Fprintf(w, "lost: %d\n", st.Live.LostPackets())
		fmt.Fprintf(w, "peak held: %d\n", st.Live.PeakHeld)
		for _, o := range st.Live.Observed {
			fmt.Fprintf(w, "observed %s from %s to %s", o.Rel, algebra.FormatTime(o.From, st.TimeFormat), algebra.FormatTime(o.To, st.TimeFormat))
			if o.Period > 0 {
				fmt.Fprintf(w, ", sampled every %s", o.Period)
			}
			if n := o.Lost(); n > 0 {
				fmt.Fprintf(w, ", %d packets lost in %d gaps", n, len(o.Gaps))
			}
			for _, h := range o.Hosts {
				if h.Lost {
					fmt.Fprintf(w, "; on %s up to %s only (its session was lost: unobserved after)", h.Host, algebra.FormatTime(h.To, st.TimeFormat))
				}
			}
			if len(o.Undeclared) > 0 {
				fmt.Fprintf(w, "; not on %s (not declared there: unobserved, not empty)", strings.Join(o.Undeclared, ", "))
			}
			fmt.Fprintln(w)
		}
		for _, h := range slices.Sorted(maps.Keys(st.Live.Skew)) {
			fmt.Fprintf(w, "clock of %s: within ±%s of the monitor's (its watermark is held back that much)\n", h, st.Live.Skew[h])
		}
		if lost := st.Live.SessionLost; lost != nil {
			fmt.Fprintf(w, "session lost: %v\n", lost)
		}
		for _, v := range st.Live.Widened {
			fmt.Fprintf(w, "note: residents cannot compute what α %s needs; its sensor is enabled for every entity and α keeps what it needs\n", v)
		}
	case st.Read != nil && st.Files != nil:
		total := 0
		for _, r := range st.Read.Reads {
			total += st.Files[r.Rel]
		}
		fmt.Fprintf(w, "files read: %d of %d\nrows read: %d\n", st.Read.Read.Files, total, st.Read.Read.Elements)
		for _, r := range st.Read.Reads {
			fmt.Fprintf(w, "read %s %s\n", r.Rel, how(r.Window))
		}
		fmt.Fprintf(w, "peak held: %d\n", st.Read.PeakHeld)
	case st.Read != nil:
		var total uint64
		for _, r := range st.Read.Reads {
			total += st.Blocks[r.Rel]
		}
		fmt.Fprintf(w, "blocks read: %d of %d\n", st.Read.Read.Blocks, total)
		fmt.Fprintf(w, "checkpoint parts read: %d\nends parts read: %d\nelements read: %d\n", st.Read.Read.Checkpoints, st.Read.Read.EndsParts, st.Read.Read.Elements)
		for _, r := range st.Read.Reads {
			fmt.Fprintf(w, "read %s %s\n", r.Rel, how(r.Window))
		}
		fmt.Fprintf(w, "peak held: %d\n", st.Read.PeakHeld)
	}
}

func writePackets(w io.Writer, total int, packets map[string]int) {
	fmt.Fprintf(w, "packets: %d\n", total)
	names := make([]string, 0, len(packets))
	for n := range packets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "packets %s: %d\n", n, packets[n])
	}
}

// how says how a relation is read: whole, or through a window.
func how(w *algebra.Window) string {
	if w == nil {
		return "whole"
	}
	return "through " + plan.WindowLabel(*w)
}

// Open opens the subject the options name.
func Open(ctx context.Context, o Options) (Subject, error) {
	if o.Given() != 1 {
		return nil, badInput(errors.New("give one of --history DIR, --db DB, --parquet DIR, --connect ADDR or --nats URL, --demo or --kernel"))
	}
	if o.Hosts != "" && o.NATS == "" {
		return nil, badInput(errors.New("--hosts GLOB goes with --nats URL (it chooses among a NATS server's hosts)"))
	}
	s, err := open(ctx, o)
	if err != nil || o.MaxMemory <= 0 {
		return s, err
	}
	return bounded{Subject: s, limit: o.MaxMemory}, nil
}

func open(ctx context.Context, o Options) (Subject, error) {
	switch {
	case o.History != "":
		return openHistory(o.History)
	case o.DB != "":
		s, err := openDB(o.DB, o.ResultsInto != "" && samePath(o.ResultsInto, o.DB))
		if err == nil && o.Notes != nil {
			s.noteLive(o.Notes)
		}
		return s, err
	case o.Parquet != "":
		return openParquet(o.Parquet)
	case o.residents().Given():
		return openResidents(ctx, o.residents())
	case o.Demo:
		return openDemo(o)
	}
	return openKernel(o.Kernel)
}

// bounded is a subject whose every run has a memory budget: the one place
// a run's budget is made and watched, whatever the subject.
type bounded struct {
	Subject
	limit int64
}

func (s bounded) Run(ctx context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error) {
	prog, stop := s.within(prog)
	defer stop()
	return s.Subject.Run(ctx, prog, o)
}

// within returns prog under a fresh budget of s's limit, its watchdog
// started, and the function that stops the watchdog: every run over a
// bounded subject (Run, and the display's in present) is made here.
func (s bounded) within(prog *query.Program) (*query.Program, func()) {
	b := &exec.Budget{Limit: s.limit}
	return prog.WithBudget(b), query.Watch(b)
}
