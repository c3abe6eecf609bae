package subject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/fleet"
	"github.com/tqmon/tqmon/store/record"
)

// PrintOptions shape Print.
type PrintOptions struct {
	Run    RunOptions
	Output format.Options
	// Stream prints results as they are produced over a recording too
	// (a replay); a live subject's always are.
	Stream bool
	// Results, when set, stores the results too.
	Results *record.ResultDB
	// Export, when set, is fed the results too (display/export).
	Export Exporter
	// Checkpoint, when set, makes a live run's printed answer resumable:
	// it says up to which watermark a run before (killed) printed the
	// answer, which this run does not print again, and is told how far
	// the answer has gone out at each watermark.
	Checkpoint Checkpoint
}

// A Checkpoint is where a resumable monitor keeps how far its answer
// went out (fleet.Resume, through tqmon query --resume).
//
// A resumed run reads the hosts' frames again from the first, so its
// operators hold again what they held (tuples open, counts), and
// produce again every result element. Those the run before had printed
// are not printed again (they still go through the row format, whose
// state — a statement's header printed, a tuple begun — they are part
// of); the others are. Which went out is said per statement by a mark
// (fleet.Mark): the time of the last element printed and the elements
// printed at that time. A statement's elements come in time order (a
// result stream is ordered), so every element before its mark's time
// went out, and at that time those the mark names; an element that
// comes after the mark's time did not. When an element is produced
// depends on how the hosts' frames arrived (a statement's results may
// settle later than the merged watermark), which differs between the run
// killed and the run resumed; what a statement produces, in what order,
// does not. Commit is called at a watermark, once every element given to
// the printer has been written out: the marks then say exactly what the
// bytes committed hold.
type Checkpoint interface {
	// Resumed are the marks, one per statement, of what a run before
	// printed (nil: none; print it all).
	Resumed() []fleet.Mark
	// Commit is told, at watermark t, how many bytes this run has written
	// out and the marks of what they hold.
	Commit(n int64, marks []fleet.Mark, t algebra.Time)
}

// An Exporter is fed what Print prints: each result element of statement
// i as it is produced and each watermark, or, for results computed whole,
// their tables. Its methods must not block on anything outside the
// process (display/export's drop and count what they cannot keep up with).
type Exporter interface {
	Elem(i int, e stream.Elem)
	Watermark(t algebra.Time)
	Table(i int, t *algebra.Table)
}

// Print runs prog over s and prints its results on w: each element as it
// settles (a Printer) from a live subject; from a recording, whole tables
// separated by blank lines, each row as soon as it has settled
// (format.Sorted: the same bytes as the whole tables). It returns what the
// run cost. An incomplete live run (remote.ErrIncomplete) prints what it
// has and returns that error.
func Print(ctx context.Context, s Subject, prog *query.Program, o PrintOptions, w io.Writer) (Stats, error) {
	var p *Printer
	var printing func() // waits for the printing goroutine (live)
	ro := o.Run
	switch {
	case o.Stream || s.Live():
		p = NewPrinter(w, o.Output, prog.Stmts)
		defer p.Close()
		if c := o.Checkpoint; c != nil {
			p.resumed = c.Resumed()
			p.marks = make([]fleet.Mark, len(prog.Stmts))
		}
		ro.Discard = true
		out := NewLiveOutput(p, o.Results, o.Export, o.Checkpoint) // (printed on a goroutine of its own)
		defer out.Wait()
		ro.OnElem = out.Elem
		ro.Progress = out.Settle
		printing = out.Wait
	case !o.Run.Acquire:
		// A recording's results are whole tables, printed as they
		// settle; the results database and the exporters, when there
		// are, still get them whole (a history run may start again).
		p = NewSortedPrinter(w, o.Output, prog.Stmts)
		defer p.Close()
		ro.Discard = o.Results == nil && o.Export == nil
		ro.OnElem = p.Elem
		ro.Rerun = p.Rerun
	}
	results, st, err := s.Run(ctx, prog, ro)
	if printing != nil {
		printing() // everything the run made is printed (or exported) before what follows
	}
	st.TimeFormat = o.Output.Time
	if rec := o.Results; rec != nil {
		if st := st.Live; st != nil {
			rec.Observed(algebra.Window{From: st.Start, To: max(st.End, st.Start)})
		}
		for i, r := range results {
			if ro.Discard {
				break
			}
			rec.Table(i, r.Table)
		}
		if cerr := rec.Close(); err == nil && cerr != nil {
			return st, cerr
		}
	}
	incomplete := errors.Is(err, remote.ErrIncomplete)
	if err != nil && !incomplete {
		if p != nil && !o.Stream && !s.Live() {
			p.Abandon() // a failed run's unsettled rows are not results
		}
		return st, err
	}
	if o.Export != nil && !o.Stream && !s.Live() {
		for i, r := range results {
			o.Export.Table(i, r.Table)
		}
	}
	if p != nil {
		if cerr := p.Close(); cerr != nil {
			return st, cerr
		}
		return st, err
	}
	bw := bufio.NewWriter(w)
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		if err := format.WriteResult(bw, r.Table, i, o.Output); err != nil {
			return st, err
		}
	}
	if ferr := bw.Flush(); ferr != nil {
		return st, ferr
	}
	return st, err
}

// flushEvery bounds how long a printed row waits in a Printer's buffer
// when no watermark comes.
const flushEvery = 50 * time.Millisecond

// sortedPatience is how long a sorted printer (a recording's results)
// waits after it is made before a row goes out by the timer rather than
// because its buffer filled: a history file out of time order is nearly
// always found within it, so that a short run over a small unsorted
// history prints nothing before it is sorted, whatever the machine's
// load — whether rows went out before then depends only on the data
// (TestTQuelExamples). A longer run still shows its rows as they settle.
const sortedPatience = time.Second

// A Printer prints result elements as they settle (format.Stream, or
// format.Sorted for whole tables) into a buffer that goes out on each
// watermark (Settle), when it fills, and at most flushEvery after a row
// was printed — never a write per row. It keeps nothing it has printed:
// only the tuples still open (and, sorted, the rows not yet settled). Its
// methods may be called from several goroutines.
type Printer struct {
	mu    sync.Mutex
	dst   io.Writer
	w     *bufio.Writer
	out   *checked
	fs    format.Rows
	timer *time.Timer
	armed bool
	quiet time.Time // no timed flush before then
	err   error
	// resumed are the marks of what a run before this one printed
	// (Checkpoint): elements within them are formatted, not written;
	// marks, when kept, are what this printer has printed (those
	// elements included).
	resumed, marks []fleet.Mark
}

// NewPrinter prints the results of stmts on w (a writer with a Flush
// method, a bufio.Writer, is flushed too), each row as it is produced.
func NewPrinter(w io.Writer, o format.Options, stmts []*check.Retrieve) *Printer {
	p := newPrinter(w)
	p.fs = format.NewStream(p.w, o, relations(stmts))
	return p
}

// NewSortedPrinter prints the results of stmts on w as whole tables
// (format.Write), each row as soon as it settles (format.Sorted) — by the
// timer only from sortedPatience on.
func NewSortedPrinter(w io.Writer, o format.Options, stmts []*check.Retrieve) *Printer {
	p := newPrinter(w)
	p.fs = format.NewSorted(p.w, o, relations(stmts))
	p.quiet = time.Now().Add(sortedPatience)
	return p
}

func newPrinter(w io.Writer) *Printer {
	p := &Printer{dst: w, out: &checked{w: w}}
	p.w = bufio.NewWriterSize(p.out, 64<<10)
	return p
}

// Elem prints a result element of statement i as it settles.
func (p *Printer) Elem(i int, e stream.Elem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return // closed
	}
	p.elem(i, e)
	p.arm()
}

// elem prints a result element of statement i (p.mu held, not closed).
func (p *Printer) elem(i int, e stream.Elem) {
	if p.marks != nil {
		k := elemKey(e)
		p.marks[i].Add(int64(e.T), k)
		if i < len(p.resumed) && p.resumed[i].Take(int64(e.T), k) {
			p.mute(i, e)
			return
		}
	}
	if err := Stream(p.fs, i, e); err != nil && p.err == nil {
		p.err = err
	}
}

// elems prints items (printstage.go), settling at each watermark, under
// one lock.
func (p *Printer) elems(items []printItem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return // closed
	}
	for _, it := range items {
		if it.settle {
			p.flush()
			continue
		}
		p.elem(it.i, it.e)
	}
	p.arm()
}

// arm starts the timer that writes out what is buffered, unless it is
// running or nothing is buffered.
func (p *Printer) arm() {
	if !p.armed && p.w.Buffered() > 0 {
		p.armed = true
		d := max(flushEvery, time.Until(p.quiet))
		if p.timer == nil {
			p.timer = time.AfterFunc(d, p.Settle)
		} else {
			p.timer.Reset(d)
		}
	}
}

// mute formats e, which went out before, without writing it (p.mu held).
func (p *Printer) mute(i int, e stream.Elem) {
	p.w.Flush()
	p.out.mute = true
	if err := Stream(p.fs, i, e); err != nil && p.err == nil {
		p.err = err
	}
	p.w.Flush()
	p.out.mute = false
}

// elemKey identifies a result element among a statement's at its time,
// the same in every process.
func elemKey(e stream.Elem) uint64 {
	h := algebra.HashTuple(e.Rec.Vals)
	for _, v := range [...]algebra.Value{algebra.Int(int64(e.Kind)), algebra.TimeVal(e.T), algebra.TimeVal(e.Rec.From)} {
		h = algebra.HashValue(h, &v)
	}
	return h
}

// written is how many bytes the printer has written out, and the marks
// of what they hold (copies).
func (p *Printer) written() (int64, []fleet.Mark) {
	p.mu.Lock()
	defer p.mu.Unlock()
	marks := make([]fleet.Mark, len(p.marks))
	for i, m := range p.marks {
		marks[i] = m.Clone()
	}
	return p.out.n, marks
}

// Settle writes out what is buffered (a watermark passed).
func (p *Printer) Settle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs != nil {
		p.flush()
	}
}

// Rerun tells a sorted printer that the run starts again from the
// beginning (why: a history file out of time order, now loaded and
// sorted). Rows buffered but not written out are dropped; the rows that
// went out must be the first the new run prints, which it checks instead
// of printing them again — if they differ, the printer fails with an
// error that says so.
func (p *Printer) Rerun(why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.fs.(*format.Sorted)
	if !ok {
		return
	}
	s.Restart()
	p.w.Reset(p.out)
	p.armed = false
	p.out.replay(why)
}

func (p *Printer) flush() {
	p.armed = false
	err := p.w.Flush()
	if f, ok := p.dst.(interface{ Flush() error }); ok && err == nil {
		err = f.Flush()
	}
	if err != nil && p.err == nil {
		p.err = err
	}
}

// Abandon writes out what has been printed, and not the rows that have
// not settled: the run failed. Later calls to Close do nothing more.
func (p *Printer) Abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.fs = nil
	p.flush()
}

// Close prints the tuples still open (valid until forever) and writes
// everything out; it returns the first write error. Later calls do
// nothing.
func (p *Printer) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return p.err
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	if err := p.fs.Close(); err != nil && p.err == nil {
		p.err = err
	}
	p.fs = nil
	p.flush()
	if err := p.out.done(); err != nil && p.err == nil {
		p.err = err
	}
	return p.err
}

// relations are the result relations of stmts.
func relations(stmts []*check.Retrieve) []*algebra.Relation {
	var rels []*algebra.Relation
	for _, r := range stmts {
		rels = append(rels, r.Result)
	}
	return rels
}

// Stream prints a result element of statement i.
func Stream(s format.Rows, i int, e stream.Elem) error {
	switch e.Kind {
	case stream.Begin:
		s.Begin(i, e.Rec, e.Rec.Vals, e.T)
	case stream.End:
		return s.End(i, e.Rec, e.T)
	case stream.Event:
		return s.Event(i, e.Rec.Vals, e.T)
	}
	return nil
}

// checked is a Printer's destination: it writes through, and remembers
// how many bytes it wrote and a hash of them, so that when a run starts
// again (replay) it can take the new run's first bytes as a check of
// what went out instead of writing them twice.
type checked struct {
	w    io.Writer
	n    int64 // bytes written (or checked) so far
	h    maphash.Hash
	want uint64 // while replaying: the hash of the n bytes that went out
	left int64  // while replaying: bytes still to check
	why  error
	mute bool // bytes that went out in a run before (Printer.mute): dropped, not counted
}

// replay starts checking the next bytes against those written so far.
func (c *checked) replay(why error) {
	if c.n == 0 {
		return
	}
	c.want, c.left, c.why = c.h.Sum64(), c.n, why
	c.n = 0
	c.h.Reset()
}

// done reports a replay that ended before it had checked all that went
// out: the rows printed before were more than the run's.
func (c *checked) done() error {
	if c.left > 0 {
		return c.wrong()
	}
	return nil
}

func (c *checked) wrong() error {
	return fmt.Errorf("%w; the results printed before were wrong: sort the file by time and run the query again", c.why)
}

func (c *checked) Write(b []byte) (int, error) {
	if c.mute {
		return len(b), nil
	}
	k := 0
	if c.left > 0 {
		k = int(min(int64(len(b)), c.left))
		c.h.Write(b[:k])
		c.n += int64(k)
		c.left -= int64(k)
		if c.left == 0 && c.h.Sum64() != c.want {
			return k, c.wrong()
		}
		if k == len(b) {
			return k, nil
		}
	}
	n, err := c.w.Write(b[k:])
	c.h.Write(b[k : k+n])
	c.n += int64(n)
	return k + n, err
}
