package subject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
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
}

// Print runs prog over s and prints its results on w: each element as it
// settles (a Printer) from a live subject, whole tables separated by
// blank lines otherwise. It returns what the run cost. An incomplete
// live run (remote.ErrIncomplete) prints what it has and returns that
// error.
func Print(ctx context.Context, s Subject, prog *query.Program, o PrintOptions, w io.Writer) (Stats, error) {
	var p *Printer
	ro := o.Run
	if o.Stream || s.Live() {
		p = NewPrinter(w, o.Output, prog.Stmts)
		defer p.Close()
		ro.Discard = true
		ro.OnElem = func(i int, e stream.Elem) {
			p.Elem(i, e)
			if o.Results != nil {
				o.Results.Elem(i, e)
			}
		}
		ro.Progress = func(algebra.Time) { p.Settle() }
	}
	results, st, err := s.Run(ctx, prog, ro)
	st.TimeFormat = o.Output.Time
	if rec := o.Results; rec != nil {
		if st := st.Live; st != nil {
			rec.Observed(algebra.Window{From: st.Start, To: max(st.End, st.Start)})
		}
		for i, r := range results {
			if p == nil {
				rec.Table(i, r.Table)
			}
		}
		if cerr := rec.Close(); err == nil && cerr != nil {
			return st, cerr
		}
	}
	incomplete := errors.Is(err, remote.ErrIncomplete)
	if err != nil && !incomplete {
		return st, err
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
		if err := format.Write(bw, r.Table, o.Output); err != nil {
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

// A Printer prints result elements as they settle (format.Stream) into a
// buffer that goes out on each watermark (Settle), when it fills, and at
// most flushEvery after a row was printed — never a write per row. It
// keeps nothing it has printed: only the tuples still open. Its methods
// may be called from several goroutines.
type Printer struct {
	mu    sync.Mutex
	dst   io.Writer
	w     *bufio.Writer
	fs    *format.Stream
	timer *time.Timer
	armed bool
	err   error
}

// NewPrinter prints the results of stmts on w (a writer with a Flush
// method, a bufio.Writer, is flushed too).
func NewPrinter(w io.Writer, o format.Options, stmts []*check.Retrieve) *Printer {
	p := &Printer{dst: w, w: bufio.NewWriterSize(w, 64<<10)}
	p.fs = NewStream(p.w, o, stmts)
	return p
}

// Elem prints a result element of statement i as it settles.
func (p *Printer) Elem(i int, e stream.Elem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs == nil {
		return // closed
	}
	Stream(p.fs, i, e)
	if !p.armed && p.w.Buffered() > 0 {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(flushEvery, p.Settle)
		} else {
			p.timer.Reset(flushEvery)
		}
	}
}

// Settle writes out what is buffered (a watermark passed).
func (p *Printer) Settle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fs != nil {
		p.flush()
	}
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
	return p.err
}

// NewStream prints the results of stmts as they are produced.
func NewStream(w io.Writer, o format.Options, stmts []*check.Retrieve) *format.Stream {
	var rels []*algebra.Relation
	for _, r := range stmts {
		rels = append(rels, r.Result)
	}
	return format.NewStream(w, o, rels)
}

// Stream prints a result element of statement i as produced.
func Stream(s *format.Stream, i int, e stream.Elem) {
	switch e.Kind {
	case stream.Begin:
		s.Begin(i, e.Rec, e.Rec.Vals, e.T)
	case stream.End:
		s.End(i, e.Rec, e.T)
	case stream.Event:
		s.Event(i, e.Rec.Vals, e.T)
	}
}
