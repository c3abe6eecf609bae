package subject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

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
// is produced (flushed at once) from a live subject, whole tables
// separated by blank lines otherwise. It returns what the run cost. An
// incomplete live run (remote.ErrIncomplete) prints what it has and
// returns that error.
func Print(ctx context.Context, s Subject, prog *query.Program, o PrintOptions, w io.Writer) (Stats, error) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	var fs *format.Stream
	ro := o.Run
	if o.Stream || s.Live() {
		fs = NewStream(bw, o.Output, prog.Stmts)
		ro.OnElem = func(i int, e stream.Elem) {
			Stream(fs, i, e)
			bw.Flush()
			if o.Results != nil {
				o.Results.Elem(i, e)
			}
		}
	}
	results, st, err := s.Run(ctx, prog, ro)
	st.TimeFormat = o.Output.Time
	if rec := o.Results; rec != nil {
		if st := st.Live; st != nil {
			rec.Observed(algebra.Window{From: st.Start, To: max(st.End, st.Start)})
		}
		for i, r := range results {
			if fs == nil {
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
	if fs != nil {
		if err := fs.Close(); err != nil {
			return st, err
		}
	} else {
		for i, r := range results {
			if i > 0 {
				fmt.Fprintln(bw)
			}
			if err := format.Write(bw, r.Table, o.Output); err != nil {
				return st, err
			}
		}
	}
	if ferr := bw.Flush(); ferr != nil {
		return st, ferr
	}
	return st, err
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
