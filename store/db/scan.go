package db

import (
	"container/heap"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// ReadStats count what a read fetched from the database.
type ReadStats struct {
	Blocks      int // blocks decoded
	Checkpoints int // checkpoint parts decoded
	EndsParts   int // ends parts decoded
	Elements    int // elements delivered
	// Files counts the files a Parquet recording's scan opened (its
	// Elements: the rows they held).
	Files int
}

// Read says what to read of one relation: all of it (Window nil) or the
// tuples valid somewhere in Window (inclusive).
type Read struct {
	Rel    string
	Window *algebra.Window
}

// Source is a time-ordered stream of stored relations' elements (an
// stream.Source): Begins, Ends and Events in time order, Ends first at equal
// times. A windowed read delivers exactly the tuples valid somewhere in
// its window, with their whole valid times: it starts at the checkpoint at
// or before the window, reads blocks up to the window's end (delivering
// those begun earlier only if still open when the window starts), and
// looks up when the tuples still open there end. A tuple whose end was
// never recorded is open: it has a Begin and no End.
type Source struct {
	dir   string
	txn   *badger.Txn
	rels  []*relReader
	cur   int // reader of the last element, -1 before the first
	bound elemKey
	stats ReadStats
	err   error
	// chunked: the source is read by Chunk (Next then fails).
	chunked bool
}

type elemKey struct {
	t     int64
	phase uint8
}

func keyOf(e *stream.Elem) elemKey {
	if e.Kind == stream.End {
		return elemKey{e.T, 0}
	}
	return elemKey{e.T, 1}
}

func (a elemKey) le(b elemKey) bool {
	return a.t < b.t || a.t == b.t && a.phase <= b.phase
}

// NewSource reads the given relations (each at most once). Close it when
// done.
func (d *DB) NewSource(reads []Read) (src *Source, err error) {
	err = guard(d.dir, func() error {
		src, err = d.newSource(reads)
		return err
	})
	return src, err
}

func (d *DB) newSource(reads []Read) (*Source, error) {
	s := &Source{dir: d.dir, txn: d.bdb.NewTransaction(false), cur: -1}
	seen := map[string]bool{}
	for _, rd := range reads {
		m, err := d.meta(rd.Rel)
		if err != nil {
			s.Close()
			return nil, err
		}
		if seen[rd.Rel] {
			s.Close()
			return nil, fmt.Errorf("relation %s read twice", rd.Rel)
		}
		seen[rd.Rel] = true
		r := &relReader{m: m, txn: s.txn, stats: &s.stats, lo: algebra.Beginning, hi: algebra.Forever,
			open: map[uint64]*stream.Rec{}}
		if rd.Window != nil {
			r.lo, r.hi = rd.Window.From, rd.Window.To
		}
		if err := r.start(); err != nil {
			s.Close()
			return nil, fmt.Errorf("database %s: %s: %w", d.dir, rd.Rel, err)
		}
		s.rels = append(s.rels, r)
	}
	return s, nil
}

// Close releases the source's snapshot of the database.
func (s *Source) Close() {
	for _, r := range s.rels {
		if r.it != nil {
			r.it.Close()
			r.it = nil
		}
	}
	s.txn.Discard()
}

// Stats are the source's counts so far.
func (s *Source) Stats() ReadStats { return s.stats }

// Next returns the next element in time order.
func (s *Source) Next() (rel string, e stream.Elem, ok bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			s.err = faulted(s.dir, r)
			rel, e, ok, err = "", stream.Elem{}, false, s.err
		}
	}()
	return s.next()
}

func (s *Source) next() (string, stream.Elem, bool, error) {
	if s.err != nil {
		return "", stream.Elem{}, false, s.err
	}
	if s.chunked {
		return "", stream.Elem{}, false, fmt.Errorf("database %s: the source is read by Chunk", s.dir)
	}
	if s.cur < 0 {
		for _, r := range s.rels {
			if err := r.step(); err != nil {
				s.err = fmt.Errorf("database %s: %s: %w", s.dir, r.m.rel.Name, err)
				return "", stream.Elem{}, false, s.err
			}
		}
		s.pick()
	} else {
		r := s.rels[s.cur]
		if err := r.step(); err != nil {
			s.err = fmt.Errorf("database %s: %s: %w", s.dir, r.m.rel.Name, err)
			return "", stream.Elem{}, false, s.err
		}
		// Stay with this reader while it is ahead of every other.
		if !r.ok || !keyOf(&r.head).le(s.bound) {
			s.pick()
		}
	}
	if s.cur < 0 || !s.rels[s.cur].ok {
		return "", stream.Elem{}, false, nil
	}
	r := s.rels[s.cur]
	s.stats.Elements++
	return r.m.rel.Name, r.head, true, nil
}

// pick finds the reader with the least head, and the second least (the
// bound up to which it may go on alone).
func (s *Source) pick() {
	best, second := -1, -1
	for i, r := range s.rels {
		if !r.ok {
			continue
		}
		switch {
		case best < 0 || !keyOf(&s.rels[best].head).le(keyOf(&r.head)):
			best, second = i, best
		case second < 0 || !keyOf(&s.rels[second].head).le(keyOf(&r.head)):
			second = i
		}
	}
	if best < 0 {
		s.cur = 0
		if len(s.rels) == 0 {
			s.cur = -1
		}
		return
	}
	s.cur = best
	s.bound = elemKey{algebra.Forever, 2}
	if second >= 0 {
		s.bound = keyOf(&s.rels[second].head)
	}
}

// relReader reads one relation.
type relReader struct {
	m      *relMeta
	txn    *badger.Txn
	stats  *ReadStats
	lo, hi int64

	head   stream.Elem
	headID uint64 // the id of head's tuple, when head is a Begin
	ok     bool

	phase int // 0 snapshot, 1 blocks, 2 ends after the window, 3 done
	snap  []openTuple
	si    int

	it       *badger.Iterator
	prefix   []byte
	curs     cursorHeap
	nextKey  int64 // time of the next unopened block
	haveNext bool

	open     map[uint64]*stream.Rec
	fromSnap bool // a checkpoint listed tuples
	// pre: the read is before its window; tuples begun there (ids) are
	// delivered (preq) only if still open when it starts.
	pre    bool
	ids    []uint64
	preq   []stream.Elem
	preqID []uint64 // preq's tuples' ids
	qi     int
	recs   []stream.Rec
	ends   []stream.Elem
	ei     int
	begin  int64 // the checkpoint (or Beginning) the read starts at

	chunk chunker // when read by Source.Chunk
}

// start finds the checkpoint to begin at and positions the block iterator.
func (r *relReader) start() error {
	st := &r.m.state
	at := algebra.Beginning
	have := false
	lo := r.lo
	if st.floorOK && lo < st.floor {
		lo = st.floor
	}
	if lo != algebra.Beginning || st.floorOK {
		c, ok, err := r.lastCheckpoint(lo)
		if err != nil {
			return err
		}
		switch {
		case ok && (!st.floorOK || c >= st.floor):
			at, have = c, true
		case st.floorOK:
			at, have = st.floor, true
		}
	}
	if have {
		if err := r.readCheckpoint(at); err != nil {
			return err
		}
		r.fromSnap = len(r.snap) > 0
	}
	r.pre = r.lo > algebra.Beginning && r.lo >= at
	r.begin = at
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	r.prefix = relKey(pBlock, r.m.id)
	opts.Prefix = r.prefix
	r.it = r.txn.NewIterator(opts)
	r.it.Seek(timedKey(pBlock, r.m.id, at, 0))
	return r.peekBlock()
}

// lastCheckpoint finds the time of the last checkpoint at or before t.
func (r *relReader) lastCheckpoint(t int64) (int64, bool, error) {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = true
	opts.Prefix = relKey(pCheck, r.m.id)
	it := r.txn.NewIterator(opts)
	defer it.Close()
	it.Seek(timedKey(pCheck, r.m.id, t, ^uint64(0)))
	if !it.Valid() {
		return 0, false, nil
	}
	k, err := parseKey(it.Item().Key())
	if err != nil {
		return 0, false, err
	}
	return k.t, true, nil
}

// readCheckpoint reads every part of the checkpoint at c.
func (r *relReader) readCheckpoint(c int64) error {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = timedKey(pCheck, r.m.id, c, 0)[:11]
	it := r.txn.NewIterator(opts)
	defer it.Close()
	seen := map[uint64]bool{}
	for it.Rewind(); it.Valid(); it.Next() {
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return err
		}
		at, tuples, err := decodeCheckpoint(v, r.m.id, r.m.sch)
		if err != nil {
			return err
		}
		if at != c {
			return fmt.Errorf("%w: checkpoint at %d filed under %d", ErrCorrupt, at, c)
		}
		r.stats.Checkpoints++
		for _, t := range tuples {
			if !seen[t.id] {
				seen[t.id] = true
				r.snap = append(r.snap, t)
			}
		}
	}
	slices.SortFunc(r.snap, func(a, b openTuple) int {
		if a.from != b.from {
			if a.from < b.from {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	return nil
}

func (r *relReader) peekBlock() error {
	r.haveNext = false
	if !r.it.Valid() {
		return nil
	}
	k, err := parseKey(r.it.Item().Key())
	if err != nil {
		return err
	}
	r.nextKey, r.haveNext = k.t, true
	return nil
}

// cursor is an open block.
type cursor struct {
	br  *blockReader
	e   elem
	seq uint64
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if c := elemCmp(&h[i].e, &h[j].e); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// openBlock decodes the next block and adds its cursor.
func (r *relReader) openBlock() error {
	item := r.it.Item()
	k, err := parseKey(item.Key())
	if err != nil {
		return err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return err
	}
	br, err := openBlock(v, r.m.id, r.m.sch)
	if err == nil && br.first != k.t {
		err = fmt.Errorf("%w: its first element is at %s", ErrCorrupt, spanTime(br.first))
	}
	if err != nil {
		return r.damagedBlock(k, err)
	}
	r.stats.Blocks++
	c := &cursor{br: br, seq: k.seq}
	ok, err := br.next(&c.e)
	if err != nil {
		return err
	}
	if ok {
		heap.Push(&r.curs, c)
	}
	r.it.Next()
	return r.peekBlock()
}

// damagedBlock names a block that does not decode and the span of the
// relation's history it holds: from its time to the next block's.
func (r *relReader) damagedBlock(k parsedKey, err error) error {
	to := "the end"
	if r.it.Next(); r.it.Valid() {
		if nk, kerr := parseKey(r.it.Item().Key()); kerr == nil {
			to = spanTime(nk.t)
		}
	}
	return fmt.Errorf("block at %s (sequence %d, its elements up to %s): %w", spanTime(k.t), k.seq, to, err)
}

func (r *relReader) rec(vals []algebra.Value, from int64) *stream.Rec {
	if len(r.recs) == 0 {
		r.recs = make([]stream.Rec, 256)
	}
	rec := &r.recs[0]
	r.recs = r.recs[1:]
	rec.Vals, rec.From = vals, from
	return rec
}

// step moves head to the relation's next element.
func (r *relReader) step() error {
	for {
		switch r.phase {
		case 0:
			if r.pre {
				// Before the window, tuples are collected, not delivered:
				// only those still open when it starts will be.
				for _, t := range r.snap {
					r.open[t.id] = r.rec(t.vals, t.from)
					r.ids = append(r.ids, t.id)
				}
				r.si = len(r.snap)
			}
			if r.si < len(r.snap) {
				t := &r.snap[r.si]
				r.si++
				rec := r.rec(t.vals, t.from)
				r.open[t.id] = rec
				r.head, r.headID, r.ok = stream.Elem{Kind: stream.Begin, T: t.from, Rec: rec}, t.id, true
				return nil
			}
			r.snap = nil
			r.phase = 1
		case 1:
			ok, err := r.stepBlocks()
			if err != nil || ok {
				return err
			}
			r.it.Close()
			r.it = nil
			if err := r.lookupEnds(); err != nil {
				return err
			}
			r.phase = 2
		case 2:
			if r.ei < len(r.ends) {
				r.head, r.ok = r.ends[r.ei], true
				r.ei++
				return nil
			}
			r.phase = 3
		default:
			r.ok = false
			return nil
		}
	}
}

// stepBlocks delivers the next element of the blocks up to the window's
// end; ok is false once there is none.
func (r *relReader) stepBlocks() (bool, error) {
	for {
		if r.qi < len(r.preq) {
			r.head, r.headID, r.ok = r.preq[r.qi], r.preqID[r.qi], true
			r.qi++
			return true, nil
		}
		// Open every block that may hold the next element.
		for r.haveNext && (len(r.curs) == 0 || r.nextKey <= r.curs[0].e.t) {
			if err := r.openBlock(); err != nil {
				return false, err
			}
		}
		if len(r.curs) == 0 {
			if r.pre {
				r.release()
				continue
			}
			return false, nil
		}
		c := r.curs[0]
		e := c.e
		if r.pre && !(e.t < r.lo || e.t == r.lo && e.kind == kEnd) {
			r.release()
			continue
		}
		if e.t > r.hi {
			return false, nil
		}
		more, err := c.br.next(&c.e)
		if err != nil {
			return false, err
		}
		if more {
			if len(r.curs) > 1 {
				heap.Fix(&r.curs, 0)
			}
		} else {
			heap.Pop(&r.curs)
		}
		switch e.kind {
		case kBegin:
			if r.fromSnap {
				if _, dup := r.open[e.id]; dup {
					continue // listed by the checkpoint already
				}
			}
			rec := r.rec(e.vals, e.t)
			r.open[e.id] = rec
			if r.pre {
				r.ids = append(r.ids, e.id)
				continue
			}
			r.head, r.headID, r.ok = stream.Elem{Kind: stream.Begin, T: e.t, Rec: rec}, e.id, true
			return true, nil
		case kEnd:
			rec := r.open[e.id]
			if rec == nil {
				continue // began before what this read covers
			}
			delete(r.open, e.id)
			if r.pre {
				continue // ended before the window
			}
			r.head, r.ok = stream.Elem{Kind: stream.End, T: e.t, Rec: rec}, true
			return true, nil
		default:
			if e.t < r.lo {
				continue
			}
			r.head, r.ok = stream.Elem{Kind: stream.Event, T: e.t, Rec: r.rec(e.vals, e.t)}, true
			return true, nil
		}
	}
}

// release delivers, in time order, the Begins of the tuples collected
// before the window that are still open when it starts.
func (r *relReader) release() {
	r.pre = false
	type cand struct {
		id  uint64
		rec *stream.Rec
	}
	var cands []cand
	for _, id := range r.ids {
		if rec := r.open[id]; rec != nil {
			cands = append(cands, cand{id, rec})
		}
	}
	r.ids = nil
	slices.SortFunc(cands, func(a, b cand) int {
		if a.rec.From != b.rec.From {
			if a.rec.From < b.rec.From {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	for _, c := range cands {
		r.preq = append(r.preq, stream.Elem{Kind: stream.Begin, T: c.rec.From, Rec: c.rec})
		r.preqID = append(r.preqID, c.id)
	}
}

// lookupEnds finds, for the tuples still open after the window, when they
// end (if they do), from the ends index.
func (r *relReader) lookupEnds() error {
	if r.hi == algebra.Forever || len(r.open) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(r.open))
	for id := range r.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	err := r.endsOf(ids, func(id uint64, to int64) error {
		rec := r.open[id]
		if rec == nil {
			return nil
		}
		if to <= r.hi || to <= rec.From {
			return fmt.Errorf("%w: tuple %d ends at %d, inside what was read", ErrCorrupt, id, to)
		}
		delete(r.open, id)
		r.ends = append(r.ends, stream.Elem{Kind: stream.End, T: to, Rec: rec})
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(r.ends, func(i, j int) bool { return r.ends[i].T < r.ends[j].T })
	return nil
}

// endsOf calls found with the end the ends index records for each of the
// tuples ids (sorted) that has one, reading each bucket's parts once.
func (r *relReader) endsOf(ids []uint64, found func(id uint64, to int64) error) error {
	opts := badger.DefaultIteratorOptions
	for i := 0; i < len(ids); {
		b := bucketOf(ids[i])
		j := i
		for j < len(ids) && bucketOf(ids[j]) == b {
			j++
		}
		want := ids[i:j]
		i = j
		opts.Prefix = endsKey(r.m.id, b, 0)[:11]
		it := r.txn.NewIterator(opts)
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				it.Close()
				return err
			}
			got, entries, err := decodeEnds(v, r.m.id)
			if err != nil {
				it.Close()
				return err
			}
			if got != b {
				it.Close()
				return fmt.Errorf("%w: ends of bucket %d filed under %d", ErrCorrupt, got, b)
			}
			r.stats.EndsParts++
			for _, e := range entries {
				if _, ok := slices.BinarySearch(want, e.id); !ok {
					continue
				}
				if err := found(e.id, e.to); err != nil {
					it.Close()
					return err
				}
			}
		}
		it.Close()
	}
	return nil
}

// errStop ends a scan early.
var errStop = errors.New("stop")

// ScanKeys calls fn for every key of a prefix, in order (diagnostics and
// tests).
func (d *DB) scanKeys(prefix []byte, fn func(k []byte) error) error {
	return d.bdb.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := fn(it.Item().Key()); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return err
			}
		}
		return nil
	})
}
