package history

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/grammar/source"
)

// ErrUnsorted is wrapped by the error of a Source that meets a relation's
// file out of time order (a tuple beginning before the one above it): a
// stream cannot go back. Open the source again with that relation loaded
// (UnsortedError.Rel).
var ErrUnsorted = errors.New("history file not in time order")

// UnsortedError names the relation whose file is out of order.
type UnsortedError struct {
	Rel  string
	File string
	Line int
}

func (e *UnsortedError) Error() string {
	return fmt.Sprintf("%s:%d: %v: a tuple begins before the one above it", e.File, e.Line, ErrUnsorted)
}

func (e *UnsortedError) Unwrap() error { return ErrUnsorted }

// Source streams the named relations of the directory in time order, as
// an exec network's RunHistory plays a loaded history: Begins and Events
// at their starts, Ends at their ends (none for tuples still open), at
// equal times Ends first, then by relation name, then in file order. A
// relation's file is read as the stream reaches it, so what is held is
// one record per relation and the tuples open at the current time — not
// the history. The files must be in time order of their starts (Write
// writes them so); one that is not makes Next fail with an
// *UnsortedError, and the relations named in loaded are read whole and
// sorted first instead. Close closes the files.
func (d *Dir) Source(rels []string, loaded ...string) (*Source, error) {
	names := slices.Clone(rels)
	sort.Strings(names)
	names = slices.Compact(names)
	s := &Source{}
	in := &interner{}
	for _, name := range names {
		rel := d.Catalog.Lookup(name)
		if rel == nil {
			s.Close()
			return nil, fmt.Errorf("history %s: no relation %s", d.Path, name)
		}
		rs := &relStream{name: name, event: rel.IsEvent()}
		s.rels = append(s.rels, rs)
		path, ok := d.files[name]
		if !ok {
			continue // no file: no tuples
		}
		if slices.Contains(loaded, name) {
			t := &algebra.Table{Rel: rel}
			if err := readFileInto(path, t, in); err != nil {
				s.Close()
				return nil, err
			}
			rs.loadTable(t)
			continue
		}
		f, err := openRegular(path)
		if err != nil {
			s.Close()
			return nil, err
		}
		// Each reader interns its own strings: it runs on a goroutine
		// of its own.
		r := newRelReader(path, f, rel, &interner{})
		r.states = newStates(path, rel)
		rs.file = path
		rs.start(r, f)
	}
	return s, nil
}

// Source is a stream.Source over a history directory's files (Dir.Source).
type Source struct {
	rels []*relStream
	err  error
}

// relStream is one relation's elements: its begins (or events) as its
// file is read, or from a loaded table, and its ends.
type relStream struct {
	name  string
	event bool

	// Streaming: the file's reader on a goroutine of its own (reading),
	// the batch of tuples taken from it, the next tuple (head), the start
	// of the one before, and the ends of the tuples begun, least first.
	file     string
	reading  *reader
	cur      *batch
	ci       int
	head     *stream.Rec
	headTo   algebra.Time
	haveHead bool
	lastFrom algebra.Time
	started  bool
	ends     endHeap
	seq      int
	recs     []stream.Rec // Recs of tuples to come, allocated together

	err error // what reading the file found wrong

	// Loaded: the elements, in order; and the rows, in order of start,
	// for Chunk (ri the next).
	begins, loadedEnds []stream.Elem
	bi, ei             int
	loaded             bool
	rows               []algebra.Tuple
	ri                 int
}

// endHeap holds the ends of begun tuples, least time first, then in the
// order they began (a binary heap, typed to allocate nothing per tuple).
type endHeap []pendingEnd

type pendingEnd struct {
	t   algebra.Time
	seq int
	rec *stream.Rec
}

func (h endHeap) less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].seq < h[j].seq
}

func (h *endHeap) push(e pendingEnd) {
	*h = append(*h, e)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *endHeap) pop() {
	q := *h
	n := len(q) - 1
	q[0] = q[n]
	q[n] = pendingEnd{}
	q = q[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && q.less(l, m) {
			m = l
		}
		if l+1 < n && q.less(l+1, m) {
			m = l + 1
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
}

// loadTable makes the elements of a loaded table, sorted as RunHistory
// sorts them.
func (rs *relStream) loadTable(t *algebra.Table) {
	rs.loaded = true
	rs.rows = t.Rows
	if !slices.IsSortedFunc(rs.rows, byFrom) {
		rs.rows = slices.Clone(rs.rows)
		slices.SortStableFunc(rs.rows, byFrom)
	}
	recs := make([]stream.Rec, len(t.Rows))
	rs.begins = make([]stream.Elem, len(t.Rows))
	for i := range t.Rows {
		row := &t.Rows[i]
		rec := &recs[i]
		*rec = stream.Rec{Vals: row.Vals, From: row.From}
		if rs.event {
			rs.begins[i] = stream.Elem{Kind: stream.Event, T: row.From, Rec: rec}
			continue
		}
		rs.begins[i] = stream.Elem{Kind: stream.Begin, T: row.From, Rec: rec}
		if row.To != algebra.Forever {
			rs.loadedEnds = append(rs.loadedEnds, stream.Elem{Kind: stream.End, T: row.To, Rec: rec})
		}
	}
	byTime := func(a, b stream.Elem) int { return cmp.Compare(a.T, b.T) }
	slices.SortStableFunc(rs.begins, byTime)
	slices.SortStableFunc(rs.loadedEnds, byTime)
}

// The reading of a relation's file runs ahead of the network, on a
// goroutine of its own (reader): parsing, checking and the network share
// the machine's cores instead of taking turns on one (P1's sends over 1M
// sends: the reading is half the command's CPU). It hands over batches
// of batchRows tuples and holds at most readAhead of them besides the one
// the stream takes from — a bounded read-ahead, not the file. Its
// diagnostics are those a reader gives on one goroutine: its last batch
// carries them, after the tuples read before the first bad row.
const (
	batchRows = 512
	readAhead = 4
)

// batch is tuples read, with the line each began on; the last batch of a
// file has end set, and err what reading found wrong.
type batch struct {
	tuples []tuple
	lines  []int
	end    bool
	err    error
}

// reader reads a relation's file on a goroutine of its own.
type reader struct {
	batches chan *batch
	free    chan *batch
	done    chan struct{} // closed: stop reading
	exited  chan struct{} // closed once the goroutine has closed the file
}

// start starts reading r's file f ahead.
func (rs *relStream) start(r *relReader, f *os.File) {
	rd := &reader{batches: make(chan *batch, readAhead), free: make(chan *batch, readAhead+2),
		done: make(chan struct{}), exited: make(chan struct{})}
	rs.reading = rd
	go rd.run(r, f)
}

func (rd *reader) run(r *relReader, f *os.File) {
	defer close(rd.exited)
	defer f.Close()
	for {
		select {
		case <-rd.done:
			return
		default:
		}
		var b *batch
		select {
		case b = <-rd.free:
			b.tuples, b.lines = b.tuples[:0], b.lines[:0]
		default:
			b = &batch{tuples: make([]tuple, 0, batchRows), lines: make([]int, 0, batchRows)}
		}
		for len(b.tuples) < batchRows {
			var tu tuple
			more := r.next(&tu)
			if more && len(r.errs) > 0 {
				// A bad row: the stream fails, with the file's
				// diagnostics (as many as Load would give).
				for r.next(&tu) {
				}
				more = false
			}
			if !more {
				b.end, b.err = true, r.err()
				break
			}
			b.tuples = append(b.tuples, tu)
			b.lines = append(b.lines, r.csv.recLine)
		}
		select {
		case rd.batches <- b:
		case <-rd.done:
			return
		}
		if b.end {
			return
		}
	}
}

// stop stops the reading and waits until the file is closed.
func (rd *reader) stop() {
	close(rd.done)
	<-rd.exited
}

// drain reads the rest of the file, tuples ignored, for its diagnostics.
func (rd *reader) drain(cur *batch) error {
	for b := cur; ; b = <-rd.batches {
		if b != nil && b.end {
			<-rd.exited
			return b.err
		}
	}
}

// fill reads the next tuple into head, if there is one.
func (rs *relStream) fill() error {
	if rs.haveHead || rs.reading == nil {
		return nil
	}
	for rs.cur == nil || rs.ci == len(rs.cur.tuples) {
		if b := rs.cur; b != nil {
			if b.end {
				rs.err = b.err
				<-rs.reading.exited
				rs.reading, rs.cur = nil, nil
				return rs.err
			}
			select {
			case rs.reading.free <- b:
			default: // (never full: at most readAhead+2 batches exist)
			}
		}
		rs.cur, rs.ci = <-rs.reading.batches, 0
	}
	tu, line := rs.cur.tuples[rs.ci], rs.cur.lines[rs.ci]
	rs.ci++
	if rs.started && tu.from < rs.lastFrom {
		rs.reading.stop()
		rs.reading, rs.cur = nil, nil
		return &UnsortedError{Rel: rs.name, File: rs.file, Line: line}
	}
	rs.started, rs.lastFrom = true, tu.from
	if len(rs.recs) == 0 {
		rs.recs = make([]stream.Rec, 256)
	}
	rec := &rs.recs[0]
	rs.recs = rs.recs[1:]
	*rec = stream.Rec{Vals: tu.vals, From: tu.from}
	rs.head, rs.headTo, rs.haveHead = rec, tu.to, true
	return nil
}

// begin is the relation's next Begin or Event, if any.
func (rs *relStream) begin() (stream.Elem, bool) {
	if rs.loaded {
		if rs.bi < len(rs.begins) {
			return rs.begins[rs.bi], true
		}
		return stream.Elem{}, false
	}
	if !rs.haveHead {
		return stream.Elem{}, false
	}
	k := stream.Begin
	if rs.event {
		k = stream.Event
	}
	return stream.Elem{Kind: k, T: rs.head.From, Rec: rs.head}, true
}

// end is the relation's next End, if any.
func (rs *relStream) end() (stream.Elem, bool) {
	if rs.loaded {
		if rs.ei < len(rs.loadedEnds) {
			return rs.loadedEnds[rs.ei], true
		}
		return stream.Elem{}, false
	}
	if len(rs.ends) == 0 {
		return stream.Elem{}, false
	}
	e := rs.ends[0]
	return stream.Elem{Kind: stream.End, T: e.t, Rec: e.rec}, true
}

func (rs *relStream) popBegin() {
	if rs.loaded {
		rs.begins[rs.bi] = stream.Elem{}
		rs.bi++
		return
	}
	if !rs.event && rs.headTo != algebra.Forever { // open at the end: ends with the stream
		rs.ends.push(pendingEnd{t: rs.headTo, seq: rs.seq, rec: rs.head})
	}
	rs.seq++
	rs.head, rs.haveHead = nil, false
}

func (rs *relStream) popEnd() {
	if rs.loaded {
		rs.loadedEnds[rs.ei] = stream.Elem{}
		rs.ei++
		return
	}
	rs.ends.pop()
}

// Next is the next element over all the relations.
func (s *Source) Next() (string, stream.Elem, bool, error) {
	if s.err != nil {
		return "", stream.Elem{}, false, s.err
	}
	var best *relStream
	var bestE stream.Elem
	bestEnd := false
	for _, rs := range s.rels {
		if err := rs.fill(); err != nil {
			s.err = s.fail(err)
			return "", stream.Elem{}, false, s.err
		}
		// A relation's End before its Begin at the same time; between
		// relations, the first named wins ties.
		if e, ok := rs.end(); ok && (best == nil || stream.Less(e, bestE)) {
			best, bestE, bestEnd = rs, e, true
		}
		if e, ok := rs.begin(); ok && (best == nil || stream.Less(e, bestE)) {
			best, bestE, bestEnd = rs, e, false
		}
	}
	if best == nil {
		return "", stream.Elem{}, false, nil
	}
	if bestEnd {
		best.popEnd()
	} else {
		best.popBegin()
	}
	return best.name, bestE, true, nil
}

// fail ends the stream with err. When err is a file's diagnostics, the
// other files are read to their ends for theirs, so the error lists what
// Load of these relations would (in file order).
func (s *Source) fail(err error) error {
	defer s.Close()
	if !isDiagnostics(err) {
		return err
	}
	var errs source.ErrorList
	for _, rs := range s.rels {
		if rs.reading == nil {
			if rs.err != nil {
				errs = append(errs, source.Diagnostics(rs.err)...)
			}
			continue
		}
		errs = append(errs, source.Diagnostics(rs.reading.drain(rs.cur))...)
		rs.reading, rs.cur = nil, nil
	}
	return errs
}

// isDiagnostics reports whether err is diagnostics about a file's
// content (source.Error or source.ErrorList).
func isDiagnostics(err error) bool {
	var l source.ErrorList
	var e *source.Error
	return errors.As(err, &l) || errors.As(err, &e)
}

// Close stops the reading and closes the files still open.
func (s *Source) Close() error {
	for _, rs := range s.rels {
		if rs.reading != nil {
			rs.reading.stop()
			rs.reading, rs.cur = nil, nil
		}
	}
	return nil
}

// Extent is the span the directory's history observes, as
// algebra.History.Extent has it: its Window, or else from its earliest
// time to its latest finite time, read from every relation's file —
// their times only, the other values being checked when a relation is
// read. ok is false for a history without tuples or window.
func (d *Dir) Extent() (start, end algebra.Time, ok bool, err error) {
	if w := d.Window; w != nil {
		return w.From, w.To, true, nil
	}
	start, end = algebra.Forever, algebra.Beginning
	for _, e := range d.entries {
		if e.rel == nil {
			continue
		}
		f, err := openRegular(e.path)
		if err != nil {
			return 0, 0, false, err
		}
		r := newRelReader(e.path, f, e.rel, nil)
		r.timesOnly = true
		var tu tuple
		for r.next(&tu) {
			ok = true
			start = min(start, tu.from)
			if tu.from != algebra.Beginning {
				end = max(end, tu.from)
			}
			if !e.rel.IsEvent() && tu.to != algebra.Forever {
				end = max(end, tu.to)
			}
		}
		f.Close()
		if err := r.err(); err != nil {
			return 0, 0, false, err
		}
	}
	if !ok {
		return 0, 0, false, nil
	}
	if end == algebra.Beginning { // every time is an infinity
		end = start
	}
	return start, end, true, nil
}
