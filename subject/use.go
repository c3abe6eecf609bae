package subject

import (
	"context"
	"path/filepath"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/record"
)

// Record records a live subject's primitive relations into w, a writer of
// d (record.Live over a session), and returns the span observed.
func Record(ctx context.Context, s Subject, d *db.DB, w *db.Writer, opts record.Options) (algebra.Window, error) {
	var st record.Stats
	win, err := s.session(ctx, opts.Duration, func(ss Session) error {
		o := opts
		o.Duration, o.Ready = ss.Duration, chain(ss.Ready, opts.Ready)
		var err error
		st, err = record.Live(ss.Ctx, ss.Conns, w, d.Catalog(), o)
		return err
	})
	if err != nil {
		return algebra.Window{}, err
	}
	if win != nil {
		return *win, nil
	}
	return algebra.Window{From: st.Start, To: max(st.End, st.Last, st.Start)}, nil
}

// Results opens the database dir to store the results of stmts, run over
// s: s's own database when dir is it, else dir, created with s's sensor
// description when new.
func Results(s Subject, dir string, stmts []*check.Retrieve) (*record.ResultDB, error) {
	spec, err := s.Spec()
	if err != nil {
		return nil, err
	}
	var into *db.DB
	if d := s.database(); d != nil && samePath(d.Dir(), dir) {
		into = d
	}
	return record.OpenResults(dir, into, spec, stmts, s.Window())
}

// samePath reports whether two paths name one file.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}

// Show plays the subject into the animated display: a recording paced as
// po says, a live subject's residents as they report (lo is passed to
// remote.RunLive). It returns when the user quits or ctx ends.
func Show(ctx context.Context, s Subject, setup *show.Setup, po play.Options, lo remote.LiveOptions, so show.Options) error {
	if !s.Live() {
		src, done, window, err := s.recorded()
		if err != nil {
			return err
		}
		defer done()
		return show.History(ctx, setup, src, window, po, so)
	}
	_, err := s.session(ctx, 0, func(ss Session) error {
		lo.Ready = chain(ss.Ready, lo.Ready)
		return show.Live(ctx, setup, ss.Conns, lo, ss.Clock, so)
	})
	return err
}

// Stream prints a result element of statement i as produced.
func Stream(s *format.Stream, i int, e exec.Elem) {
	switch e.Kind {
	case exec.Begin:
		s.Begin(i, e.Rec, e.Rec.Vals, e.T)
	case exec.End:
		s.End(i, e.Rec, e.T)
	case exec.Event:
		s.Event(i, e.Rec.Vals, e.T)
	}
}

// DisplayOptions shape Display.
type DisplayOptions struct {
	// Queries define the derived relations the spec may draw.
	Queries []query.Source
	// Spec is the display spec; ReadSpec, if set, reads it again (the r
	// key).
	Spec     query.Source
	ReadSpec func() (string, error)
	Params   map[string]string
	// Play paces a recording; Live shapes a live run.
	Play  play.Options
	Live  remote.LiveOptions
	Title string
}

// Display compiles the queries with the display spec — enabling only the
// sensors both need; a recording feeds every relation — and shows the
// subject animated in the terminal until the user quits or ctx ends.
// Spec and query errors (ErrInput) come before the terminal is touched.
func Display(ctx context.Context, s Subject, o DisplayOptions) error {
	setup, err := show.Compile(show.Config{Catalog: s.Catalog(), Queries: o.Queries, Display: o.Spec,
		Check: check.Options{Params: o.Params, Now: s.Now()}, FeedAll: !s.Live()})
	if err != nil {
		return badInput(err)
	}
	return Show(ctx, s, setup, o.Play, o.Live, show.Options{Title: o.Title, ReadSpec: o.ReadSpec})
}
