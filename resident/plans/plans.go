// Package plans runs plan fragments (wire.CPlan) at a resident: the one
// fragment runner both residents use — the Go resident, in the subject's
// process, and the kernel resident, in `tqmon resident --kernel`. A
// session whose first command is a CPlan becomes a plan session: the
// resident runs the program — compiled again over its own description,
// with the monitor's algebra (remote.RunFragment) — over a session of its
// own (the open function a resident gives Start), and the plan session
// carries the program's results instead of packets.
//
// Where it runs. In goroutines of its own, beside the resident's drain:
// never in a subject's thread, never in the drain. What it costs the
// resident is what any session costs it (its inner session's bounds,
// shedding and counts are a session's like any other: a fragment that
// falls behind loses packets there, and its answers are cut at those
// gaps — the drain never waits for it), and its state is bounded:
//   - operator state: cmd.Limit bytes (remote.DefaultFragmentLimit, at
//     most remote.MaxFragmentLimit), the network's memory budget;
//   - result tuples begun and not ended: remote.MaxFragmentOpen;
//   - results waiting for the monitor: the resident's queue bound
//     (MaxQueued at most);
//   - fragments: at most MaxPlans at once per resident, equal ones
//     shared, each program (with its arguments) at most MaxText bytes.
//
// Past any of them the fragment stops and the session says where
// (PResultLost): the answer is then incomplete from there — what was sent
// is right, nothing after it was observed — never wrong.
package plans

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// MaxQueued bounds the result packets a plan session holds for a monitor
// that does not read them (a resident's own bound may be lower).
const MaxQueued = 1 << 16

// MaxPlans bounds the plan fragments a resident runs at once (equal ones
// shared count once): each is a network running beside the resident,
// with a session of its own, so this with the fragments' state bound is
// what monitors can make the resident hold and work for.
const MaxPlans = 4

// MaxText bounds a plan fragment's program text (and its arguments):
// compiling and rewriting it is the resident's work (in the Go resident,
// the subject's process's).
const MaxText = 64 << 10

// Queue is a resident's bound on a plan session's waiting results: n,
// defaulted and bounded by MaxQueued.
func Queue(n int) int {
	if n <= 0 || n > MaxQueued {
		return MaxQueued
	}
	return n
}

// Registry is the plan fragments one resident runs, by what they run (a
// session may join an equal one), and how many.
type Registry struct {
	queue int

	mu    sync.Mutex
	byKey map[string]*shared
	runs  int
}

// NewRegistry makes a resident's registry; queue bounds each plan
// session's waiting results (Queue(queue)).
func NewRegistry(queue int) *Registry {
	return &Registry{queue: Queue(queue), byKey: map[string]*shared{}}
}

// Runs returns how many plan fragments run (one for all the sessions that
// share it).
func (g *Registry) Runs() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs
}

// Start makes a session a plan session running cmd: it joins the
// fragment already running the same program, text, arguments and bound
// alike (shared), or starts one, in its own goroutine over a session
// open makes (called there: it may take the resident's lock). core is
// the plan session's (its Fail names a refused command's field); stamp
// is the resident's packet clock. The caller checks that cmd is the
// session's first command.
func (g *Registry) Start(core *session.Core, cmd *wire.Command, open func() wire.Conn, stamp func() int64) (*Out, error) {
	switch {
	case cmd.Limit < 0 || cmd.Limit > remote.MaxFragmentLimit:
		return nil, core.Fail(cmd, "limit", "%d bytes out of range (at most %d)", cmd.Limit, remote.MaxFragmentLimit)
	case len(cmd.Text)+len(strings.Join(cmd.Args, "")) > MaxText:
		return nil, core.Fail(cmd, "text", "%d bytes of program and arguments, over the %d a plan fragment may have", len(cmd.Text)+len(strings.Join(cmd.Args, "")), MaxText)
	}
	key := fmt.Sprintf("%d\x00%q\x00%q", cmd.Limit, cmd.Text, cmd.Args)
	o := &Out{done: make(chan struct{}), max: g.queue}
	g.mu.Lock()
	defer g.mu.Unlock()
	if sp := g.byKey[key]; sp != nil && sp.join(o) {
		return o, nil
	}
	if g.runs >= MaxPlans {
		return nil, core.Fail(cmd, "text", "the resident already runs %d plan fragments, the most it may", MaxPlans)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp := &shared{g: g, key: key, cancel: cancel, open: map[uint64]wire.Packet{}}
	sp.join(o)
	g.byKey[key] = sp // (one no longer joinable runs on for its sessions)
	g.runs++
	c := *cmd
	c.Args = append([]string(nil), cmd.Args...)
	go func() {
		if err := remote.RunFragment(ctx, open(), &c, sp); err != nil {
			sp.Stop(stamp(), "refused: "+err.Error())
		}
	}()
	return o, nil
}

// Slot is a session's plan, once it has one (set under the resident's
// lock, never unset; read without it): a session with one is a plan
// session, whose Recv carries the fragment's results.
type Slot struct{ p atomic.Pointer[Out] }

// Load returns the session's plan (nil: none).
func (sl *Slot) Load() *Out { return sl.p.Load() }

// Store makes o the session's plan.
func (sl *Slot) Store(o *Out) { sl.p.Store(o) }

// Recv is the session's Recv: its plan's results (Out.Recv), or core's
// batches for a session without one.
func (sl *Slot) Recv(ctx context.Context, core *session.Core, close func()) (*wire.Batch, error) {
	if o := sl.p.Load(); o != nil {
		return o.Recv(ctx, core, close)
	}
	return core.Recv(ctx)
}

// Release is the session's Release: a plan's results are not core's
// memory (they are the fragment's, shared by its sessions).
func (sl *Slot) Release(core *session.Core, b *wire.Batch) {
	if sl.p.Load() == nil {
		core.Release(b)
	}
}

// Out is a plan session's results waiting for its monitor
// (remote.FragmentSink for one session).
type Out struct {
	mu     sync.Mutex
	q      []*wire.Batch
	queued int           // packets in q
	max    int           // of queued (Registry.queue)
	ended  bool          // the fragment stopped: q holds its last batches
	done   chan struct{} // closed when ended is set
	cancel func()        // leave the fragment (set by join)
	// endErr is how the session itself ended (its close's error, or its
	// Recv's), once it did: said after the fragment's last results.
	endErr error
}

// Put queues the packets settled up to wm (remote.FragmentSink).
func (o *Out) Put(pks []wire.Packet, wm int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queued+len(pks) > o.max {
		return false
	}
	o.q = append(o.q, &wire.Batch{Packets: pks, Watermark: wm})
	o.queued += len(pks)
	return true
}

// Stop queues where and why the fragment stopped (remote.FragmentSink);
// "" is a normal end (the session it ran over ended).
func (o *Out) Stop(at int64, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if why != "" && why != "ended" {
		o.q = append(o.q, &wire.Batch{Watermark: at, Packets: []wire.Packet{{Kind: wire.PResultLost, TS: at,
			Vals: []wire.Value{{Kind: wire.VString, S: why}}}}})
	}
	if !o.ended {
		o.ended = true
		close(o.done)
	}
}

// Finish leaves the fragment: a CPlan without text, or the session's end
// (Close). The last session to leave stops the fragment and gets its
// last results. (Called under the resident's lock: it takes no lock of
// the resident's.)
func (o *Out) Finish() { o.cancel() }

// Command carries out a command of a plan session (the resident's lock
// held): only a CPlan without text, which finishes the fragment; any
// other is refused.
func (o *Out) Command(core *session.Core, cmd *wire.Command) error {
	if cmd.Kind == wire.CPlan && cmd.Text == "" {
		o.Finish()
		return nil
	}
	return core.Fail(cmd, "kind", "a plan session takes no %s command", cmd.Kind)
}

// Close notes that the session ended with err (the first said) and
// leaves the fragment: Recv says err after the fragment's last results.
func (o *Out) Close(err error) {
	o.end(err)
	o.cancel()
}

// end notes how the session ended (the first said).
func (o *Out) end(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.endErr == nil {
		o.endErr = err
	}
}

// ending is how the session ended (nil: it has not).
func (o *Out) ending() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.endErr
}

// next pops the next batch (nil: none yet) and whether the fragment has
// ended with nothing left to send.
func (o *Out) next() (*wire.Batch, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.q) == 0 {
		return nil, o.ended
	}
	b := o.q[0]
	o.q[0] = nil
	o.q = o.q[1:]
	o.queued -= len(b.Packets)
	return b, false
}

// Recv is a plan session's Recv: the fragment's results. The session's
// own batches (it enables nothing; the entity tuples every session is
// sent) are taken from core and dropped, which also keeps its lease and
// end noticed as any session's. Once the fragment is finished (a CPlan
// without text) or the session ends (the monitor's bye, its lease, the
// resident's close) the fragment stops and its last results — what its
// network settles at its end, as a monitor's does when its run ends — are
// still sent, then the session's end (io.EOF when normal); close closes
// the session once everything is said. A batch it returns is the
// fragment's, shared by its sessions: not core's to take back.
func (o *Out) Recv(ctx context.Context, core *session.Core, close func()) (*wire.Batch, error) {
	for {
		if b, ended := o.next(); b != nil {
			return b, nil
		} else if ended {
			close() // everything said
			if err := o.ending(); err != nil {
				return nil, err // the session's own end (io.EOF: normal)
			}
			return nil, io.EOF
		}
		if o.ending() != nil {
			// Ended: by its monitor or its lease (its close stopped the
			// fragment) or with the resident (the fragment's own session
			// ends with it, after its last packets): the fragment ends
			// either way.
			select {
			case <-o.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		b, err := core.Recv(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			o.end(err)
			continue
		}
		core.Release(b) // (it blocks a few ms at most: the loop's pace)
	}
}

// shared is one running plan fragment and the plan sessions it serves
// (remote.FragmentSink: it hands each of them the results).
//
// A session may join a fragment already running only while the fragment
// has said nothing a joiner would not be given again — no result tuple
// ended, no event, no loss: it is then sent the fragment's start and the
// result tuples begun so far, and its answer is the fragment's, whole,
// over the fragment's observation (exact, aggregates included: a value
// counted since the fragment's start is the value over that
// observation). Later, a session running the same program gets a fragment
// of its own. A session that leaves (its end, or a finish while others
// share the fragment) is sent, after what it had, that the results not
// yet settled are missing: it gets a finished fragment's last results
// only when it is the last to leave. A session that does not keep up
// (its output bound) is dropped alone, told so; the fragment stops when
// none is left.
//
// Locks: g.mu before sp.mu (Start, join), sp.mu before o.mu; Stop takes
// g.mu only once sp.mu is released.
type shared struct {
	g      *Registry
	key    string
	cancel context.CancelFunc

	mu      sync.Mutex
	subs    []*Out
	open    map[uint64]wire.Packet // result tuples begun, not ended: their begin
	started bool                   // the fragment said its start
	start   int64                  // (then) where its observation starts
	said    bool                   // it said what a joiner would miss: no joining
	wm      int64                  // the last watermark put
	ended   bool
	closing bool // its last session left: it is stopping
}

// join adds o unless the fragment has ended or said what o would miss
// (false).
func (sp *shared) join(o *Out) bool {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.ended || sp.closing || sp.said {
		return false
	}
	o.cancel = func() { sp.leave(o) }
	if sp.started {
		pks := []wire.Packet{{Kind: wire.PResultStart, TS: sp.start}}
		for _, pk := range sp.open {
			pks = append(pks, pk)
		}
		if !o.Put(pks, sp.wm) {
			o.Stop(sp.wm, "over its output bound (the tuples open when it joined)")
			return true
		}
	}
	sp.subs = append(sp.subs, o)
	return true
}

// leave takes o out; the last to leave stops the fragment, and gets its
// last results. (It takes no more than sp.mu and o.mu.)
func (sp *shared) leave(o *Out) {
	sp.mu.Lock()
	i := slices.Index(sp.subs, o)
	if i < 0 {
		sp.mu.Unlock()
		return
	}
	if len(sp.subs) == 1 {
		sp.closing = true // its Stop follows, from its goroutine
		sp.mu.Unlock()
		sp.cancel()
		return
	}
	sp.subs = slices.Delete(sp.subs, i, i+1)
	wm := sp.wm
	sp.mu.Unlock()
	o.Stop(wm, "left a plan fragment other monitors share: its results not yet settled are missing")
}

// Put hands the packets to every session (remote.FragmentSink).
func (sp *shared) Put(pks []wire.Packet, wm int64) bool {
	sp.mu.Lock()
	for _, pk := range pks {
		switch pk.Kind {
		case wire.PResultStart:
			sp.started, sp.start = true, pk.TS
		case wire.PResultBegin:
			sp.open[pk.Tuple] = pk
		case wire.PResultEnd:
			delete(sp.open, pk.Tuple)
			sp.said = true
		case wire.PResultEvent, wire.PResultLoss:
			sp.said = true
		}
	}
	sp.wm = wm
	var dropped []*Out
	sp.subs = slices.DeleteFunc(sp.subs, func(o *Out) bool {
		if o.Put(pks, wm) {
			return false
		}
		dropped = append(dropped, o)
		return true
	})
	left := len(sp.subs)
	sp.closing = sp.closing || left == 0
	sp.mu.Unlock()
	for _, o := range dropped {
		o.Stop(wm, "over its output bound (the monitor did not keep up)")
	}
	return left > 0 // (false: RunFragment stops)
}

// Stop ends every session's results (remote.FragmentSink).
func (sp *shared) Stop(at int64, why string) {
	sp.mu.Lock()
	sp.ended = true
	subs := sp.subs
	sp.subs = nil
	sp.mu.Unlock()
	g := sp.g
	g.mu.Lock()
	if g.byKey[sp.key] == sp {
		delete(g.byKey, sp.key)
	}
	g.runs--
	g.mu.Unlock()
	for _, o := range subs {
		o.Stop(at, why)
	}
}
