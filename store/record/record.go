package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/db"
)

// Recordable lists the relations a live recording can hold: those with a
// sensor, and entity relations.
func Recordable(cat *algebra.Catalog) []string {
	var out []string
	for _, r := range cat.Relations {
		if r.Strategy.Kind != algebra.NotSensed || r.Class == algebra.ClassEntity {
			out = append(out, r.Name)
		}
	}
	return out
}

// Program compiles one plain retrieve of every attribute per relation
// (`range of x is R retrieve (x.A, …)`): run live, it makes the residents
// enable exactly those relations' sensors, for every entity.
func Program(cat *algebra.Catalog, relations []string) (*query.Program, error) {
	can := Recordable(cat)
	var srcs []query.Source
	for _, name := range relations {
		r := cat.Lookup(name)
		switch {
		case r == nil:
			return nil, fmt.Errorf("no relation %s to record (the sensors describe %s)", name, strings.Join(can, ", "))
		case !slices.Contains(can, name):
			return nil, fmt.Errorf("%s has no sensor and is not an entity relation: nothing can record it live", name)
		}
		var targets []string
		for _, a := range r.Attrs {
			targets = append(targets, "x."+a.Name)
		}
		srcs = append(srcs, query.Source{Name: "record " + name,
			Text: fmt.Sprintf("range of x is %s retrieve (%s)", name, strings.Join(targets, ", "))})
	}
	return query.Compile(cat, srcs, check.Options{})
}

// Options shape a live recording.
type Options struct {
	// Relations to record (default: Recordable).
	Relations []string
	// Duration stops the recording after this long (0: until the context
	// ends or the residents do).
	Duration time.Duration
	// Lease is the lease the residents grant (default remote's).
	Lease time.Duration
	// SyncEvery is how often what was recorded is made durable (default
	// 200 ms).
	SyncEvery time.Duration
	// Ready, when set, is called once the residents have been told what
	// to enable.
	Ready func()
	// OnLoss, when set, sees each loss as the residents report it;
	// TimeFormat prints a lost session's times.
	OnLoss     func(remote.Loss)
	TimeFormat algebra.TimeFormat
	// OnElem, when set, sees each relation's tuples as they are recorded
	// (stmt: the relation's index in Relations, or in Recordable's order),
	// and Progress the time up to which all have been (tqmon record's
	// exports; remote.LiveOptions).
	OnElem   func(stmt int, e stream.Elem)
	Progress func(t algebra.Time)
}

// Stats describe a live recording.
type Stats struct {
	remote.LiveStats
	// Last is the latest time of any input recorded.
	Last algebra.Time
}

// Live records what live residents report of the chosen relations into w
// (a database's writer, record.DB, or any other Sink)
// until the context ends, the duration passes or the residents end, making
// it durable every SyncEvery; the window synced runs from when the
// recording attached (the observation's start, remote.Observation) to the
// latest input. It leaves w open: the caller sets the final window and
// closes it. A writer's error — the disk full (db.ErrDiskFull) included —
// ends the recording, and is returned; what was synced before stays in
// the database. A recording that lost packets or its session returns its
// stats and an error that is remote.ErrIncomplete.
func Live(ctx context.Context, conns []wire.Conn, w Sink, cat *algebra.Catalog, opts Options) (Stats, error) {
	var st Stats
	rels := opts.Relations
	if len(rels) == 0 {
		rels = Recordable(cat)
	}
	if len(rels) == 0 {
		return st, ErrNothing
	}
	prog, err := Program(cat, rels)
	if err != nil {
		return st, err
	}
	tp, err := NewTap(w, rels)
	if err != nil {
		return st, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tp.onErr = cancel
	every := opts.SyncEvery
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				tp.sync()
			}
		}
	}()
	_, live, err := remote.RunLive(ctx, prog, conns, remote.LiveOptions{Duration: opts.Duration, Lease: opts.Lease,
		Ready: opts.Ready, Tap: tp.Input, Started: tp.Start, OnLoss: opts.OnLoss, TimeFormat: opts.TimeFormat,
		OnElem: opts.OnElem, Progress: opts.Progress, Discard: opts.OnElem != nil})
	if err == nil {
		err = live.Err()
	}
	close(done)
	wg.Wait()
	st.LiveStats = live
	tp.mu.Lock()
	st.Last = tp.last
	tp.observation() // whole: written with the caller's final window
	terr := tp.err
	tp.mu.Unlock()
	if terr != nil {
		return st, terr
	}
	return st, err
}

// Tap writes the inputs of a live run (remote.LiveOptions.Tap) into a
// database writer, as the ground truth would have them: an interval when
// it begins (a sample when first seen, with the time it was valid since)
// and when it ends; one reported whole at its end, whole. It is safe to
// call from the live run while another goroutine syncs.
type Tap struct {
	mu      sync.Mutex
	w       Sink
	rels    map[string]RelSink
	sampled map[uint64]bool
	start   algebra.Time
	last    algebra.Time
	started bool
	err     error
	onErr   func()
	// The observation (remote.Input of Observed and Lost): tuples in
	// order of their begins, their keys' index.
	obs   db.Observation
	obsAt map[uint64]int
}

// NewTap makes a tap recording the named relations.
func NewTap(w Sink, relations []string) (*Tap, error) {
	tp := &Tap{w: w, rels: map[string]RelSink{}, sampled: map[uint64]bool{}, start: algebra.Beginning, last: algebra.Beginning,
		obsAt: map[uint64]int{}}
	for _, name := range relations {
		rw, err := w.Relation(name)
		if err != nil {
			return nil, err
		}
		tp.rels[name] = rw
	}
	return tp, nil
}

// Input records one input.
func (tp *Tap) Input(in remote.Input) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.err != nil {
		return
	}
	if algebra.IsObservation(in.Rel) {
		tp.observe(in)
		return
	}
	if in.T > tp.last && in.T != algebra.Forever { // the ends of what was open at the end are not observed times
		tp.last = in.T
	}
	rw := tp.rels[in.Rel]
	if rw == nil {
		return
	}
	var err error
	switch {
	case in.Entity && in.Begin, !in.Entity && in.Kind == stream.PacketBegin:
		err = rw.Begin(in.Key, in.T, in.Vals)
	case !in.Entity && in.Kind == stream.PacketSample:
		if !tp.sampled[in.Key] {
			tp.sampled[in.Key] = true
			err = rw.Begin(in.Key, in.From, in.Vals)
		}
	case in.Entity, in.Kind == stream.PacketEnd, in.Kind == stream.PacketSampleEnd:
		delete(tp.sampled, in.Key)
		var ok bool
		ok, err = rw.End(in.Key, in.T)
		if err == nil && !ok {
			// Its begin was never seen (enabled in its middle): whole.
			err = rw.Whole(in.From, in.T, in.Vals)
		}
	case in.Kind == stream.PacketEvent:
		err = rw.Event(in.T, in.Vals)
	case in.Kind == stream.PacketWhole:
		err = rw.Whole(in.From, in.T, in.Vals)
	default:
		err = fmt.Errorf("%s: input of unknown kind %d", in.Rel, in.Kind)
	}
	tp.fail(err)
}

// observe notes an Observed or Lost tuple beginning or ending: the
// observation is written with the window at each sync (db.Writer cuts it
// to the window, so a tuple still open ends where the window does).
func (tp *Tap) observe(in remote.Input) {
	rows := &tp.obs.Observed
	if in.Rel == algebra.LostName {
		rows = &tp.obs.Lost
	}
	if in.Begin {
		tp.obsAt[in.Key] = len(*rows)
		*rows = append(*rows, algebra.Tuple{Vals: in.Vals, From: in.T, To: algebra.Forever})
		return
	}
	if i, ok := tp.obsAt[in.Key]; ok {
		(*rows)[i].To = in.T
		delete(tp.obsAt, in.Key)
	}
}

// observation passes the observation so far to the writer.
func (tp *Tap) observation() {
	o := db.Observation{Observed: slices.Clone(tp.obs.Observed), Lost: slices.Clone(tp.obs.Lost)}
	tp.w.SetObservation(o)
}

func (tp *Tap) fail(err error) {
	if err != nil && tp.err == nil {
		tp.err = fmt.Errorf("recording: %w", err)
		if tp.onErr != nil {
			tp.onErr()
		}
	}
}

// Start sets the start of the window the tap syncs: the observation's
// (remote.LiveOptions.Started). Until then nothing is synced; from then a
// reader of the database finds a window, the first one (from, from) synced
// at once — before anything was observed a query answers over that, with
// nothing in it.
func (tp *Tap) Start(from algebra.Time) {
	tp.mu.Lock()
	tp.start, tp.last, tp.started = from, max(tp.last, from), true
	tp.mu.Unlock()
	tp.sync()
}

// sync makes everything so far durable, the window reaching the latest
// input.
func (tp *Tap) sync() {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.err != nil || !tp.started {
		return
	}
	// Inputs come in time order: nothing earlier than the latest will.
	tp.w.Advance(tp.last)
	tp.w.SetWindow(algebra.Window{From: tp.start, To: max(tp.last, tp.start)})
	tp.observation()
	tp.fail(tp.w.Sync())
}

// Err is the first error recording met.
func (tp *Tap) Err() error {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.err
}

// ErrNothing: the sensors describe no relation a live recording can hold.
var ErrNothing = errors.New("nothing to record: the sensors describe no sensed or entity relation")
