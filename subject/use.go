package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/display/scene"
	"github.com/tqmon/tqmon/display/show"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/journal"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/record"
)

// Stores say where a recording goes: a new database (DB, written with
// Writer), a new or empty Parquet directory (Parquet, store/parquet), or
// both at once — one recorder writing into both (record.Tee).
type Stores struct {
	DB             string
	Writer         db.WriterOptions
	Parquet        string
	ParquetOptions parquet.Options
	// Journal, when set, is a JetStream the recording is journaled into,
	// under JournalHost (store/journal): a consumer writes it as Parquet
	// files, resuming where it stopped.
	Journal     jetstream.JetStream
	JournalHost string
	// JournalOptions shape the journal's stream (its limits, replicas).
	JournalOptions journal.Options
}

// Record records the live subject s into the stores until the context
// ends, opts.Duration passes or the subject ends (a demo subject run for
// this recording then closes, so its ground truth is written), writes
// the span observed as the recording's window, and returns the database
// (open, for the caller to report on and close; nil without one), the
// Parquet writer (closed; nil without one) and the window. A database or
// Parquet directory that exists, or relations the subject lacks, are
// ErrInput errors. A recording that lost packets or its session returns
// what it recorded (its window what was observed) and an error that is
// remote.ErrIncomplete.
func Record(ctx context.Context, s Subject, to Stores, opts record.Options) (*db.DB, *parquet.Writer, algebra.Window, error) {
	var win algebra.Window
	spec, err := s.Spec()
	if err != nil {
		return nil, nil, win, err
	}
	var (
		d     *db.DB
		w     *db.Writer
		pw    *parquet.Writer
		sinks []record.Sink
		cat   *algebra.Catalog
	)
	undo := func() {
		if w != nil {
			w.Close()
		}
		if d != nil {
			d.Close()
		}
		if pw != nil {
			pw.Close()
		}
	}
	if to.DB != "" {
		if d, err = db.Create(to.DB, spec); err != nil {
			return nil, nil, win, badInput(err)
		}
		cat = d.Catalog()
		if len(opts.Relations) > 0 {
			if _, err := record.Program(cat, opts.Relations); err != nil {
				d.Close()
				os.RemoveAll(to.DB)
				return nil, nil, win, badInput(err)
			}
		}
		if w, err = d.NewWriter(to.Writer); err != nil {
			undo()
			return nil, nil, win, err
		}
		sinks = append(sinks, record.DB(w))
	}
	if to.Parquet != "" {
		if pw, err = parquet.Create(to.Parquet, spec, to.ParquetOptions); err != nil {
			undo()
			return nil, nil, win, badInput(err)
		}
		cat = pw.Catalog()
		if len(opts.Relations) > 0 {
			if _, err := record.Program(cat, opts.Relations); err != nil {
				undo()
				os.RemoveAll(to.Parquet) // new or empty before
				return nil, nil, win, badInput(err)
			}
		}
		sinks = append(sinks, record.SinkOf[*parquet.RelWriter](pw))
	}
	var pub *journal.Publisher
	if to.Journal != nil {
		if cat == nil {
			if cat, err = spec.Catalog(); err != nil {
				undo()
				return nil, nil, win, badInput(err)
			}
		}
		if _, err := journal.Ensure(ctx, to.Journal, to.JournalOptions); err != nil {
			undo()
			return nil, nil, win, err
		}
		if pub, err = journal.NewPublisher(to.Journal, to.JournalHost, spec); err != nil {
			undo()
			return nil, nil, win, err
		}
		sinks = append(sinks, pub)
	}
	if len(sinks) == 0 {
		return nil, nil, win, badInput(errors.New("nowhere to record: give a database, a Parquet directory or a journal"))
	}
	win, err = recordInto(ctx, s, record.Tee(sinks...), cat, opts)
	if err != nil && !errors.Is(err, remote.ErrIncomplete) {
		undo()
		return nil, nil, win, err
	}
	if w != nil {
		w.SetWindow(win)
		if cerr := w.Close(); cerr != nil {
			w = nil
			undo()
			return nil, nil, win, cerr
		}
	}
	if pub != nil {
		pub.SetWindow(win)
		if cerr := pub.Close(); cerr != nil {
			if d != nil {
				d.Close()
			}
			if pw != nil {
				pw.Close()
			}
			return nil, nil, win, cerr
		}
	}
	if pw != nil {
		pw.SetWindow(win)
		if cerr := pw.Close(); cerr != nil {
			if d != nil {
				d.Close()
			}
			return nil, nil, win, cerr
		}
	}
	return d, pw, win, err
}

// recordInto records a live session of s into the sink and returns the
// window it observed, for the caller to set before closing the sink. A
// recording that lost packets or its session returns its window and an
// error that is remote.ErrIncomplete.
func recordInto(ctx context.Context, s Subject, sink record.Sink, cat *algebra.Catalog, opts record.Options) (algebra.Window, error) {
	var win algebra.Window
	var st record.Stats
	ran, err := s.session(ctx, opts.Duration, func(ss Session) error {
		o := opts
		o.Duration, o.Ready = ss.Duration, chain(ss.Ready, opts.Ready)
		var err error
		st, err = record.Live(ss.Ctx, ss.Conns, sink, cat, o)
		return err
	})
	// A recording that lost packets or its session is kept, with the
	// window it observed, and reported incomplete.
	incomplete := errors.Is(err, remote.ErrIncomplete)
	var exit *CommandExit
	if err == nil || incomplete {
		if cerr := s.Close(); cerr != nil && !errors.As(cerr, &exit) && err == nil {
			err = cerr // the command's status is not the recording's
		}
	}
	if err != nil && !incomplete {
		return win, err
	}
	// Observed from when the recording attached to the last time the
	// residents reported: a subject that ended did so there, not at
	// forever.
	win = algebra.Window{From: st.Start, To: max(st.End, st.Last, st.Start)}
	if ran != nil && st.SessionLost == nil {
		// A subject run in process for this recording waited for it to
		// attach: its whole run was observed.
		win = *ran
	}
	return win, err
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

// present plays the subject into the animated display: a recording paced as
// po says, a live subject's residents as they report (lo is passed to
// remote.RunLive). It returns when the user quits or ctx ends.
func present(ctx context.Context, s Subject, setup *show.Setup, po play.Options, lo remote.LiveOptions, so show.Options) error {
	if b, ok := s.(bounded); ok {
		// The display's network runs within the budget as every query
		// does: the setup is the caller's, so a copy carries it.
		within := *setup
		prog, stop := b.within(setup.Prog)
		defer stop()
		within.Prog, setup = prog, &within
	}
	if !s.Live() {
		pb, done, err := playback(ctx, s, setup, po, so)
		if err != nil {
			return err
		}
		defer done()
		return pb.Run(ctx)
	}
	_, err := s.session(ctx, 0, func(ss Session) error {
		lo.Ready, lo.Follow = chain(ss.Ready, lo.Ready), ss.Follow
		return show.Live(ctx, setup, ss.Conns, lo, ss.Clock, so)
	})
	return err
}

// playable is a recording for a display to play: its elements, every
// relation whole (src, released by done), the window they cover, and how
// they were observed (obs: a history holding its Observed and Lost
// tables, empty when it says nothing of its observation).
type playable struct {
	src    stream.Source
	done   func()
	window *algebra.Window
	obs    *algebra.History
}

// playback starts playing recording s into the display (show.NewPlayback)
// and returns the function that stops it and releases the recording. What
// the recording says of its observation is shown — each row of its Lost
// relation a gap ('×', "lost N" once play reaches it), each relation its
// Observed rows say was sampled named with its period — and the display's
// answers are cut at those gaps exactly as query --db's are: the gaps the
// cut is given are exec.TableGaps of the same Lost table (see
// store/replay.Run), so the display and a query agree on the recording.
func playback(ctx context.Context, s Subject, setup *show.Setup, po play.Options, so show.Options) (*show.Playback, func(), error) {
	rec, err := s.recorded()
	if err != nil {
		return nil, nil, err
	}
	lost := rec.obs.Table(algebra.LostName)
	for _, r := range lost.Rows {
		so.Losses = append(so.Losses, scene.Loss{Rel: r.Vals[0].S, From: r.From, To: r.To, Count: uint64(r.Vals[1].N)})
	}
	for _, r := range rec.obs.Table(algebra.ObservedName).Rows {
		if p := r.Vals[1].N; p > 0 {
			so.Sampled = append(so.Sampled, scene.Sampling{Rel: r.Vals[0].S, Period: time.Duration(p)})
		}
	}
	so.Gaps = exec.TableGaps(lost)
	pb, err := show.NewPlayback(ctx, setup, rec.src, rec.window, po, so)
	if err != nil {
		rec.done()
		return nil, nil, err
	}
	return pb, func() { pb.Close(); rec.done() }, nil
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
	// TZ is the time zone of the clock and the timeline's axis (--tz).
	TZ string
	// Export, when set, starts exporters for the queries' results (rels:
	// their relations, in order), fed as the display computes them and
	// closed when it ends (tqmon view's --prometheus, --otlp, --exec).
	Export func(rels []*algebra.Relation) (DisplayExporter, error)
}

// DisplayExporter is what DisplayOptions.Export starts (display/export's
// Set is one).
type DisplayExporter interface {
	Exporter
	Close(ctx context.Context) error
}

// ReadDisplaySpec reads the display spec file at path into DisplayOptions:
// its text (Spec, named by its path for diagnostics) and how to read it
// again when the user asks (ReadSpec, the r key).
func (o *DisplayOptions) ReadDisplaySpec(path string) error {
	read := func() (string, error) {
		text, err := source.ReadFile(path, nil) // bounded; stdin is the terminal
		if err != nil {
			return "", fmt.Errorf("display spec: %w", err)
		}
		return text, nil
	}
	text, err := read()
	if err != nil {
		return err
	}
	o.Spec, o.ReadSpec = query.Source{Name: path, Text: text}, read
	return nil
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
	so := show.Options{Title: o.Title, ReadSpec: o.ReadSpec, TZ: o.TZ}
	if o.Export != nil {
		rels := make([]*algebra.Relation, setup.Users)
		for i, st := range setup.Prog.Stmts[:setup.Users] {
			rels[i] = st.Result
		}
		x, err := o.Export(rels)
		if err != nil {
			return badInput(err)
		}
		defer x.Close(ctx)
		users := setup.Users
		elem := func(i int, e stream.Elem) {
			if i < users {
				x.Elem(i, e)
			}
		}
		so.OnElem = elem
		onElem, progress := o.Live.OnElem, o.Live.Progress
		o.Live.OnElem = func(i int, e stream.Elem) {
			elem(i, e)
			if onElem != nil {
				onElem(i, e)
			}
		}
		o.Live.Progress = func(t algebra.Time) {
			x.Watermark(t)
			if progress != nil {
				progress(t)
			}
		}
	}
	return present(ctx, s, setup, o.Play, o.Live, so)
}
