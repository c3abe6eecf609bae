package db

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/tqmon/tqmon/algebra"
)

// WriterOptions tune how a writer lays out what it records; the defaults
// suit recording and reading at millions of tuples per second.
type WriterOptions struct {
	// BlockElems is the number of elements per block (default 4096).
	BlockElems int
	// CheckpointElems is the least number of elements between two
	// checkpoints of a relation (default 8 blocks); a checkpoint also waits
	// for CheckpointFactor elements per tuple it would list (default 4), so
	// checkpoints cost a bounded fraction of the recording.
	CheckpointElems  int
	CheckpointFactor int
	// FlushBytes flushes pending blocks once they reach this size (default
	// 1 MiB), bounding memory and the size of each commit.
	FlushBytes int
	// Retain, when positive, drops what is older than this (in the
	// recording's time) as checkpoints pass (they come at least every
	// Retain/4 then): every tuple valid at or after latest−Retain is kept.
	Retain int64
	// OnCommit, when set, is called (from the writer's committing
	// goroutine) after each flush is durable.
	OnCommit func(CommitInfo)
}

// CommitInfo describes a committed flush.
type CommitInfo struct {
	// Through is the time up to which every element given to the writer is
	// in the database (Beginning when nothing is yet).
	Through algebra.Time
	// Tuples and Elements count what the database holds, all relations.
	Tuples, Elements uint64
	// Synced reports a flush also forced to stable storage (Sync).
	Synced bool
}

func (o *WriterOptions) defaults() {
	if o.BlockElems <= 0 {
		o.BlockElems = 4096
	}
	if o.CheckpointElems <= 0 {
		o.CheckpointElems = 8 * o.BlockElems
	}
	if o.CheckpointFactor <= 0 {
		o.CheckpointFactor = 4
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = 1 << 20
	}
}

// ErrOrder is returned for an element earlier than one already given for
// its relation (only Begins may come late: see Writer).
var ErrOrder = errors.New("not in time order")

// Writer records tuples into a database. For each relation, elements must
// come in time order — Begin and End, Event, Whole at its end — except that
// a Begin may come late (a sampled tuple first seen after it began, a
// traced-then-disabled tuple reported whole at its end). Values passed in
// are kept, not copied, until written: they must not be modified. A Writer
// is used from one goroutine; it commits in the background.
type Writer struct {
	d       *DB
	opts    WriterOptions
	rels    []*RelWriter
	pending int
	window  *algebra.Window
	// observation is cut to the window and written with it.
	observation *Observation
	q           chan *commit
	done        chan struct{}
	mu          sync.Mutex
	err         error
	through     algebra.Time // of the last commit applied
	closed      bool
}

// NewWriter starts writing to the database. A database has at most one
// writer; it must have been opened for writing.
func (d *DB) NewWriter(opts WriterOptions) (*Writer, error) {
	if d.readOnly {
		return nil, fmt.Errorf("database %s is open read-only", d.dir)
	}
	if d.writer != nil {
		return nil, fmt.Errorf("database %s already has a writer", d.dir)
	}
	opts.defaults()
	w := &Writer{d: d, opts: opts, q: make(chan *commit, 2), done: make(chan struct{}), through: algebra.Beginning}
	w.window = d.Window()
	d.writer = w
	go w.commitLoop()
	return w, nil
}

// RelWriter writes one relation.
type RelWriter struct {
	w    *Writer
	m    *relMeta
	keys map[uint64]uint64 // caller's key → open tuple id
	open map[uint64]*openTuple
	// tail holds the elements of the latest instant: they are written when
	// time moves on, so a tuple that begins and ends at one instant (empty)
	// is never written.
	tail     []elem
	haveTail bool
	cur      *blockBuilder
	curSeq   uint64
	curDirty bool
	sealed   []kv
	// epochs are the checkpoint times from the floor on; epochMin the least
	// tuple id each needs the ends of.
	epochs    []int64
	epochMin  []uint64
	since     int              // elements since the last checkpoint
	lastCheck int64            // time of the last checkpoint (or the first element)
	late      map[int64][]elem // epoch (Beginning: before the first) → late Begins
	ckpts     []pendingCheck
	ckptParts map[int64]uint64
	ends      map[uint64]*endsPart
	drop      []keyRange
	touched   bool
}

type kv struct{ k, v []byte }

type keyRange struct{ from, to []byte }

type pendingCheck struct {
	at     int64
	seq    uint64
	tuples []openTuple
}

type endsPart struct {
	seq     uint64
	entries []endEntry
	dirty   bool
	idle    int
}

// Relation returns the writer of a relation of the database.
func (w *Writer) Relation(name string) (*RelWriter, error) {
	m, err := w.d.meta(name)
	if err != nil {
		return nil, err
	}
	for len(w.rels) <= int(m.id) {
		w.rels = append(w.rels, nil)
	}
	if r := w.rels[m.id]; r != nil {
		return r, nil
	}
	if m.state.elements > 0 {
		return nil, fmt.Errorf("relation %s is already recorded in %s: record into a new database", name, w.d.dir)
	}
	r := &RelWriter{w: w, m: m, keys: map[uint64]uint64{}, open: map[uint64]*openTuple{},
		cur: newBlockBuilder(m.id, m.sch), late: map[int64][]elem{}, ckptParts: map[int64]uint64{},
		ends: map[uint64]*endsPart{}}
	m.state.frontier = algebra.Beginning
	w.rels[m.id] = r
	return r, nil
}

// Name is the relation's name.
func (r *RelWriter) Name() string { return r.m.rel.Name }

// SetWindow sets the observation window written with each flush. While
// recording, its end is capped by what is durable (CommitInfo.Through).
func (w *Writer) SetWindow(win algebra.Window) {
	w.window = &win
}

func (w *Writer) bgErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (r *RelWriter) check(vals []algebra.Value) error {
	if r.w.closed {
		return errors.New("writer is closed")
	}
	if err := r.m.sch.checkVals(vals); err != nil {
		return fmt.Errorf("%s: %w", r.m.rel.Name, err)
	}
	return nil
}

func (r *RelWriter) order(t int64, what string) error {
	if r.haveTail && t < r.m.state.frontier {
		return fmt.Errorf("%s: %s at %d after %d: %w", r.m.rel.Name, what, t, r.m.state.frontier, ErrOrder)
	}
	return nil
}

// Begin records that the interval tuple the caller calls key begins at
// from. A Begin earlier than elements already given is recorded late.
func (r *RelWriter) Begin(key uint64, from algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if r.m.rel.IsEvent() {
		return fmt.Errorf("%s is an event relation: no intervals", r.m.rel.Name)
	}
	if from == algebra.Forever {
		return fmt.Errorf("%s: a tuple cannot begin at forever", r.m.rel.Name)
	}
	if _, dup := r.keys[key]; dup {
		return fmt.Errorf("%s: tuple %d begins twice", r.m.rel.Name, key)
	}
	id := r.begin(from, algebra.Forever, vals)
	r.keys[key] = id
	return r.w.maybeFlush()
}

// begin records a Begin (in order or late) and returns the tuple's id; to
// is the tuple's end when already known (a whole tuple), else Forever.
func (r *RelWriter) begin(from, to algebra.Time, vals []algebra.Value) uint64 {
	st := &r.m.state
	id := st.nextID
	st.nextID++
	st.tuples++
	r.extent(from)
	e := elem{kind: kBegin, t: from, id: id, vals: vals}
	inOrder := !r.haveTail || from >= st.frontier
	if inOrder {
		r.advance(from) // before the tuple is open: a checkpoint at from lists only earlier tuples
		r.tail = append(r.tail, e)
	}
	if to == algebra.Forever {
		r.open[id] = &openTuple{id: id, from: from, vals: vals}
	}
	if !inOrder {
		r.lateBegin(e, to)
	}
	r.touched = true
	return id
}

// End records that tuple key ends at to. ok is false when key is not an
// open tuple (the caller may then record it whole).
func (r *RelWriter) End(key uint64, to algebra.Time) (ok bool, err error) {
	if r.w.closed {
		return false, errors.New("writer is closed")
	}
	id, found := r.keys[key]
	if !found {
		return false, nil
	}
	if err := r.order(to, "end"); err != nil {
		return true, err
	}
	if to == algebra.Forever {
		return true, fmt.Errorf("%s: an end at forever is no end", r.m.rel.Name)
	}
	delete(r.keys, key)
	r.end(id, to)
	return true, r.w.maybeFlush()
}

func (r *RelWriter) end(id uint64, to algebra.Time) {
	delete(r.open, id)
	r.advance(to)
	r.tail = append(r.tail, elem{kind: kEnd, t: to, id: id})
	if to != algebra.Forever {
		r.extentEnd(to)
	}
	r.touched = true
}

// Event records an event tuple at at.
func (r *RelWriter) Event(at algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if !r.m.rel.IsEvent() {
		return fmt.Errorf("%s is an interval relation: no events", r.m.rel.Name)
	}
	if err := r.order(at, "event"); err != nil {
		return err
	}
	r.m.state.tuples++
	r.extent(at)
	r.advance(at)
	r.tail = append(r.tail, elem{kind: kEvent, t: at, vals: vals})
	r.touched = true
	return r.w.maybeFlush()
}

// Whole records a complete interval tuple [from, to), learnt at to (to
// Forever: a tuple still going on). An empty one (from ≥ to) is not
// recorded.
func (r *RelWriter) Whole(from, to algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if r.m.rel.IsEvent() {
		return fmt.Errorf("%s is an event relation: no intervals", r.m.rel.Name)
	}
	if from >= to {
		return nil
	}
	if to == algebra.Forever {
		// Reported whole, but still going on: an open tuple.
		r.begin(from, algebra.Forever, vals)
		return r.w.maybeFlush()
	}
	if err := r.order(to, "end"); err != nil {
		return err
	}
	id := r.begin(from, to, vals)
	r.end(id, to)
	return r.w.maybeFlush()
}

func (r *RelWriter) extent(t int64) {
	st := &r.m.state
	if !st.extOK {
		st.extOK, st.extStart, st.extEnd = true, t, algebra.Beginning
	}
	st.extStart = min(st.extStart, t)
	if t != algebra.Beginning {
		st.extEnd = max(st.extEnd, t)
	}
}

func (r *RelWriter) extentEnd(t int64) {
	r.m.state.extEnd = max(r.m.state.extEnd, t)
}

// advance moves the relation to instant t (≥ its frontier): the previous
// instant's elements go into the block, and a checkpoint may open at t.
func (r *RelWriter) advance(t int64) {
	st := &r.m.state
	if r.haveTail && t == st.frontier {
		return
	}
	if r.haveTail {
		r.flushTail()
	}
	switch {
	case r.since >= max(r.w.opts.CheckpointElems, r.w.opts.CheckpointFactor*len(r.open)):
		r.checkpoint(t)
	case r.w.opts.Retain > 0 && r.since > 0 && t-r.lastCheck >= r.w.opts.Retain/4:
		// Retention moves the floor from checkpoint to checkpoint: keep
		// them no further apart than a quarter of the span kept.
		r.checkpoint(t)
	}
	if !r.haveTail {
		r.lastCheck = t
	}
	st.frontier, r.haveTail = t, true
}

// flushTail writes the latest instant's elements into the current block:
// Ends first, and neither half of a tuple that began and ended there.
func (r *RelWriter) flushTail() {
	if len(r.tail) == 0 {
		return
	}
	// Tuples that began and ended at this instant.
	var empty map[uint64]bool
	var begins map[uint64]bool
	for i := range r.tail {
		if e := &r.tail[i]; e.kind == kBegin && len(r.tail) > 1 {
			if begins == nil {
				begins = map[uint64]bool{}
			}
			begins[e.id] = true
		}
	}
	for i := range r.tail {
		if e := &r.tail[i]; e.kind == kEnd && begins[e.id] {
			if empty == nil {
				empty = map[uint64]bool{}
			}
			empty[e.id] = true
		}
	}
	for pass := 0; pass < 2; pass++ {
		for i := range r.tail {
			e := &r.tail[i]
			if (e.kind == kEnd) != (pass == 0) {
				continue
			}
			if e.kind != kEvent && empty[e.id] {
				if e.kind == kBegin {
					r.m.state.tuples--
				}
				continue
			}
			r.add(e)
		}
	}
	clear(r.tail)
	r.tail = r.tail[:0]
}

// add appends an in-order element to the current block.
func (r *RelWriter) add(e *elem) {
	if r.cur.n == 0 {
		r.curSeq = r.m.state.nextSeq
		r.m.state.nextSeq++
		r.m.state.blocks++
	}
	before := len(r.cur.body)
	r.cur.add(e)
	r.curDirty, r.touched = true, true
	r.w.pending += len(r.cur.body) - before
	r.m.state.elements++
	r.since++
	if e.kind == kEnd {
		r.addEnd(e.id, e.t)
	}
	if r.cur.n >= r.w.opts.BlockElems {
		r.seal()
	}
}

func (r *RelWriter) seal() {
	if r.cur.n == 0 {
		return
	}
	r.sealed = append(r.sealed, kv{timedKey(pBlock, r.m.id, r.cur.first, r.curSeq), r.cur.bytes()})
	r.cur.reset()
	r.curDirty = false
}

func (r *RelWriter) addEnd(id uint64, to int64) {
	b := bucketOf(id)
	p := r.ends[b]
	if p == nil {
		p = &endsPart{seq: r.m.state.nextSeq}
		r.m.state.nextSeq++
		r.ends[b] = p
	}
	p.entries = append(p.entries, endEntry{id: id, to: to})
	p.dirty, p.idle = true, 0
	r.w.pending += 10
}

// checkpoint opens an epoch at t: the current block is sealed and the
// tuples open now are listed.
func (r *RelWriter) checkpoint(t int64) {
	r.seal()
	tuples := make([]openTuple, 0, len(r.open))
	minID := r.m.state.nextID
	for _, o := range r.open {
		tuples = append(tuples, *o)
		minID = min(minID, o.id)
	}
	sort.Slice(tuples, func(i, j int) bool { return tuples[i].id < tuples[j].id })
	r.ckpts = append(r.ckpts, pendingCheck{at: t, tuples: tuples})
	r.ckptParts[t] = 1
	r.epochs = append(r.epochs, t)
	r.epochMin = append(r.epochMin, minID)
	r.since, r.lastCheck = 0, t
	r.w.pending += 16 * len(tuples)
	r.retain(t)
}

// lateBegin records a Begin earlier than the relation's frontier: in a
// block of its own within its epoch, and in every later checkpoint it was
// open at.
func (r *RelWriter) lateBegin(e elem, to int64) {
	i := sort.Search(len(r.epochs), func(i int) bool { return r.epochs[i] > e.t }) // epochs[:i] ≤ e.t
	switch {
	case i > 0:
		r.late[r.epochs[i-1]] = append(r.late[r.epochs[i-1]], e)
	case !r.m.state.floorOK:
		r.late[algebra.Beginning] = append(r.late[algebra.Beginning], e)
	}
	// (Below the retention floor no block is needed: every checkpoint kept
	// lists the tuple.)
	for _, c := range r.epochs[i:] {
		if to != algebra.Forever && c > to {
			break
		}
		seq := r.ckptParts[c]
		r.ckptParts[c] = seq + 1
		r.ckpts = append(r.ckpts, pendingCheck{at: c, seq: seq, tuples: []openTuple{{id: e.id, from: e.t, vals: e.vals}}})
	}
	r.m.state.elements++
	r.w.pending += 32
}

// retain moves the floor to the last checkpoint at or before t−Retain and
// schedules what lies below it for deletion.
func (r *RelWriter) retain(t int64) {
	keep := r.w.opts.Retain
	if keep <= 0 || t-keep > t {
		return
	}
	cut := t - keep
	i := sort.Search(len(r.epochs), func(i int) bool { return r.epochs[i] > cut }) - 1
	if i < 0 {
		return
	}
	floor, minID := r.epochs[i], r.epochMin[i]
	st := &r.m.state
	if st.floorOK && floor <= st.floor {
		return
	}
	st.floorOK, st.floor = true, floor
	id := r.m.id
	r.drop = append(r.drop,
		keyRange{timedKey(pBlock, id, algebra.Beginning, 0), timedKey(pBlock, id, floor, 0)},
		keyRange{timedKey(pCheck, id, algebra.Beginning, 0), timedKey(pCheck, id, floor, 0)},
		keyRange{endsKey(id, 0, 0), endsKey(id, bucketOf(minID), 0)})
	for _, c := range r.epochs[:i] {
		delete(r.ckptParts, c)
	}
	for e := range r.late {
		if e < floor {
			delete(r.late, e) // flushed already, or never needed
		}
	}
	r.epochs = slices.Clone(r.epochs[i:])
	r.epochMin = slices.Clone(r.epochMin[i:])
}

// Advance promises that no element earlier than t will come for any
// relation (a live recording's inputs arrive in time order): each
// relation's latest instant, if before t, can no longer change and is
// written with the next flush.
func (w *Writer) Advance(t algebra.Time) {
	for _, r := range w.rels {
		if r != nil && len(r.tail) > 0 && r.tail[0].t < t {
			r.flushTail()
		}
	}
}

func (w *Writer) maybeFlush() error {
	if w.pending < w.opts.FlushBytes {
		return nil
	}
	return w.flush(false, false)
}

// Flush writes everything but each relation's latest instant (which may
// still change) and returns once the commit is queued; OnCommit reports
// when it is durable.
func (w *Writer) Flush() error { return w.flush(false, false) }

// Sync is Flush followed by forcing the database to stable storage.
func (w *Writer) Sync() error { return w.flush(true, false) }

func (w *Writer) flush(sync, final bool) error {
	if err := w.bgErr(); err != nil {
		return err
	}
	c := &commit{sync: sync}
	through := algebra.Forever
	var tuples, elements uint64
	for _, r := range w.rels {
		if r == nil {
			continue
		}
		if final {
			r.flushTail()
		} else if len(r.tail) > 0 {
			through = min(through, r.tail[0].t-1)
		}
		r.collect(c, final)
		tuples += r.m.state.tuples
		elements += r.m.state.elements
	}
	for _, m := range w.d.rels {
		if int(m.id) >= len(w.rels) || w.rels[m.id] == nil {
			tuples += m.state.tuples
			elements += m.state.elements
		}
	}
	if w.window != nil {
		win := *w.window
		for _, m := range w.d.rels {
			if m.state.floorOK && m.state.floor > win.From {
				win.From = m.state.floor // complete from the highest floor on
			}
		}
		if win.To > through {
			win.To = through
		}
		win.To = max(win.To, win.From)
		c.sets = append(c.sets, kv{singleKey(pWindow), encodeWindow(win)})
		w.d.window = &win
		if w.observation != nil {
			o := w.observation.within(win)
			c.sets = append(c.sets, kv{singleKey(pObserved), encodeObservation(o)})
			w.d.observation = &o
		}
		through = win.To
	}
	c.info = CommitInfo{Through: through, Tuples: tuples, Elements: elements, Synced: sync}
	w.pending = 0
	w.q <- c
	return nil
}

// collect moves the relation's pending writes into a commit.
func (r *RelWriter) collect(c *commit, final bool) {
	if !r.touched && len(r.sealed) == 0 && len(r.drop) == 0 {
		return
	}
	c.sets = append(c.sets, r.sealed...)
	r.sealed = nil
	if final {
		r.seal()
		c.sets = append(c.sets, r.sealed...)
		r.sealed = nil
	} else if r.curDirty && r.cur.n > 0 {
		// The block still filling is written as it stands and rewritten
		// under the same key until it is full.
		c.sets = append(c.sets, kv{timedKey(pBlock, r.m.id, r.cur.first, r.curSeq), r.cur.bytes()})
		r.curDirty = false
	}
	epochs := make([]int64, 0, len(r.late))
	for e := range r.late {
		epochs = append(epochs, e)
	}
	slices.Sort(epochs)
	for _, e := range epochs {
		elems := r.late[e]
		slices.SortFunc(elems, func(a, b elem) int { return elemCmp(&a, &b) })
		for len(elems) > 0 {
			n := min(len(elems), r.w.opts.BlockElems)
			seq := r.m.state.nextSeq
			r.m.state.nextSeq++
			r.m.state.blocks++
			c.sets = append(c.sets, kv{timedKey(pBlock, r.m.id, elems[0].t, seq), encodeBlock(r.m.id, r.m.sch, elems[:n])})
			elems = elems[n:]
		}
		delete(r.late, e)
	}
	for _, p := range r.ckpts {
		c.sets = append(c.sets, kv{timedKey(pCheck, r.m.id, p.at, p.seq), encodeCheckpoint(r.m.id, r.m.sch, p.at, p.tuples)})
	}
	r.ckpts = nil
	for b, p := range r.ends {
		if p.dirty {
			c.sets = append(c.sets, kv{endsKey(r.m.id, b, p.seq), encodeEnds(r.m.id, b, p.entries)})
			p.dirty = false
		} else {
			p.idle++
		}
		// A part written with many entries, or idle for long, is done;
		// later ends of its bucket start a new part.
		if len(p.entries) >= 1<<(EndsBucketBits-1) || p.idle > 20 || final {
			delete(r.ends, b)
		}
	}
	c.sets = append(c.sets, kv{relKey(pState, r.m.id), encodeState(&r.m.state)})
	c.drops = append(c.drops, r.drop...)
	r.drop = nil
	r.touched = false
}

// Close writes everything, including each relation's latest instant,
// waits until it is durable, and ends the writer. Tuples still open stay
// open.
func (w *Writer) Close() error {
	if w.closed {
		return w.bgErr()
	}
	err := w.flush(true, true)
	w.closed = true
	close(w.q)
	<-w.done
	w.d.writer = nil
	if err != nil {
		return err
	}
	return w.bgErr()
}
