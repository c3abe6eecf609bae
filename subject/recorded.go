package subject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/history"
	"github.com/tqmon/tqmon/store/replay"
)

// recording is what the recorded subjects share: no sessions.
type recording struct{}

func (recording) Live() bool                { return false }
func (recording) Params() map[string]string { return nil }
func (recording) session(context.Context, time.Duration, func(Session) error) (*algebra.Window, error) {
	return nil, ErrRecorded
}

// extentWindow is a recording's window, or else its extent.
func extentWindow(w *algebra.Window, start, end algebra.Time, ok bool) *algebra.Window {
	if ok && w == nil {
		w = &algebra.Window{From: start, To: end}
	}
	return w
}

// historySubject is a recorded history directory. It reads what each use
// needs: a query streams the relations it reads from their files (none
// is loaded whole), "now" and Clock ticks read the times of every file
// once (unless observation.csv gives the span), and the uses that want
// the whole history (acquisitional runs, explain, the display, Describe)
// load it once.
type historySubject struct {
	recording
	dir string
	d   *history.Dir

	h      *algebra.History // loaded on first need
	hErr   error
	extent *extent // read on first need
}

// extent is a history's extent, once read.
type extent struct {
	start, end algebra.Time
	ok         bool
	err        error
}

func openHistory(dir string) (*historySubject, error) {
	d, err := history.Open(dir)
	if err != nil {
		return nil, badInput(err)
	}
	return &historySubject{dir: dir, d: d}, nil
}

// history is the whole history, loaded once.
func (s *historySubject) history() (*algebra.History, error) {
	if s.h == nil && s.hErr == nil {
		s.h, s.hErr = s.d.Load()
		if s.hErr != nil {
			s.hErr = badInput(s.hErr)
		}
	}
	return s.h, s.hErr
}

func (s *historySubject) readExtent() *extent {
	if s.extent == nil {
		e := &extent{}
		e.start, e.end, e.ok, e.err = s.d.Extent()
		if e.err != nil {
			e.err = badInput(e.err)
		}
		s.extent = e
	}
	return s.extent
}

// window is the span Clock ticks fill: the history's window, or else its
// extent.
func (s *historySubject) window() (*algebra.Window, error) {
	e := s.readExtent()
	return extentWindow(s.d.Window, e.start, e.end, e.ok), e.err
}

func (s *historySubject) Describe() string {
	h, err := s.history()
	if err != nil {
		return fmt.Sprintf("history %s: %d relations (%v)", s.dir, len(s.d.Catalog.Relations), err)
	}
	n := 0
	if _, _, ok := h.Extent(); ok {
		for _, t := range h.Tables {
			n += len(t.Rows)
		}
	}
	return fmt.Sprintf("history %s: %d relations, %d tuples", s.dir, len(h.Catalog.Relations), n)
}

func (s *historySubject) Catalog() *algebra.Catalog { return s.d.Catalog }
func (s *historySubject) Spec() (db.Spec, error)    { return HistorySpec(s.dir) }
func (s *historySubject) Window() *algebra.Window   { return s.d.Window }
func (s *historySubject) database() *db.DB          { return nil }
func (s *historySubject) Close() error              { return nil }
func (s *historySubject) Sensors() string {
	return "no sensors: the source is a recorded history (every tuple is already there)\n"
}

// Extent is the history's extent; a history whose times do not read has
// none (Run reports why).
func (s *historySubject) Extent() (algebra.Time, algebra.Time, bool) {
	e := s.readExtent()
	return e.start, e.end, e.ok && e.err == nil
}

func (s *historySubject) Now() algebra.Time {
	if _, end, ok := s.Extent(); ok {
		return end
	}
	return 0
}

// Run streams the relations the program reads through it; a relation
// whose file is out of time order is loaded and sorted instead, and the
// run starts again (after o.Rerun).
func (s *historySubject) Run(_ context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error) {
	if o.Acquire {
		h, err := s.history()
		if err != nil {
			return nil, Stats{}, err
		}
		rs, st, err := prog.RunAcquire(h, o.Naive)
		return rs, Stats{Acquire: &st}, err
	}
	if e := s.extent; e != nil && e.err != nil {
		return nil, Stats{}, e.err // "now" was read from a history that does not read
	}
	// A history directory is complete, unless its Lost.csv says where
	// packets were lost: answers are cut out of those gaps.
	lost, err := s.d.Load(algebra.LostName)
	if err != nil {
		return nil, Stats{}, badInput(err)
	}
	gaps := exec.TableGaps(lost.Table(algebra.LostName))
	var loaded []string
	for {
		var src *history.Source
		open := func(rels []string) (stream.Source, error) {
			var err error
			src, err = s.d.Source(rels, loaded...)
			if err != nil {
				return nil, badInput(err)
			}
			return inputSource{src}, nil
		}
		rs, st, err := prog.RunSource(open, s.window, gaps, query.Output{OnElem: o.OnElem, Discard: o.Discard, Observed: s.d.Window != nil})
		if src != nil {
			src.Close()
		}
		var unsorted *history.UnsortedError
		if errors.As(err, &unsorted) && !slices.Contains(loaded, unsorted.Rel) {
			loaded = append(loaded, unsorted.Rel)
			if o.Rerun != nil {
				o.Rerun(err)
			}
			continue
		}
		return rs, Stats{History: &st}, err
	}
}

// inputSource marks the errors of a history's files as ErrInput.
type inputSource struct{ *history.Source }

// Chunk is the history source's Chunk (exec.ChunkSource), its errors
// marked as Next's are.
func (s inputSource) Chunk(rel string, buf []algebra.Tuple) ([]algebra.Tuple, error) {
	buf, err := s.Source.Chunk(rel, buf)
	if err != nil {
		err = badInput(err)
	}
	return buf, err
}

func (s inputSource) Next() (string, stream.Elem, bool, error) {
	rel, e, ok, err := s.Source.Next()
	if err != nil {
		err = badInput(err)
	}
	return rel, e, ok, err
}

func (s *historySubject) Explain(w io.Writer, prog *query.Program, first int, naive bool) error {
	h, err := s.history()
	if err != nil {
		return err
	}
	return explain(w, prog, first, naive, func(r rewrite.Result) string { return rewrite.Explain(r, h) })
}

func (s *historySubject) recorded() (playable, error) {
	h, err := s.history()
	if err != nil {
		return playable{}, err
	}
	start, end, ok := h.Extent()
	return playable{src: play.HistorySource(h, recordedNames(h.Catalog)), done: func() {},
		window: extentWindow(h.Window, start, end, ok), obs: h}, nil
}

// explain writes the plans of the retrieves from first on, rewritten
// unless naive, as describe says.
func explain(w io.Writer, prog *query.Program, first int, naive bool, describe func(rewrite.Result) string) error {
	rw, err := prog.Rewritten(naive)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for i, r := range rw[first:] {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "%s:\n%s", stmtName(prog, first, i), describe(r))
	}
	return bw.Flush()
}

// stmtName names the ith retrieve from first on.
func stmtName(prog *query.Program, first, i int) string {
	if name := prog.Stmts[first+i].Name; name != "" {
		return name
	}
	return fmt.Sprintf("retrieve %d", i+1)
}

// HistorySpec reads the sensor description of a history directory (which
// history.Load checks has exactly one).
func HistorySpec(dir string) (db.Spec, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.sdl"))
	if err != nil || len(matches) != 1 {
		return db.Spec{}, fmt.Errorf("history %s: want exactly one .sdl file", dir)
	}
	text, err := os.ReadFile(matches[0])
	if err != nil {
		return db.Spec{}, err
	}
	return db.Spec{Name: filepath.Base(matches[0]), Text: string(text)}, nil
}

// dbSubject is a database.
type dbSubject struct {
	recording
	dir string
	d   *db.DB
}

func openDB(dir string, writable bool) (*dbSubject, error) {
	d, err := db.Open(dir, db.Options{ReadOnly: !writable})
	if err != nil {
		return nil, badInput(err)
	}
	return &dbSubject{dir: dir, d: d}, nil
}

// noteLive says on w that the database is being recorded, when it is:
// its answers are over what the recording has committed, its window.
func (s *dbSubject) noteLive(w io.Writer) {
	if !s.d.Live() {
		return
	}
	span := "nothing observed yet: its observation has not begun"
	if win := s.d.Window(); win != nil {
		span = fmt.Sprintf("observed %s to %s", algebra.FormatTime(win.From, algebra.TimeAuto), algebra.FormatTime(win.To, algebra.TimeAuto))
	}
	fmt.Fprintf(w, "tqmon: %s is being recorded: answering over what it has committed (%s)\n", s.d.Dir(), span)
}

func (s *dbSubject) Describe() string {
	desc := fmt.Sprintf("database %s: %d relations", s.dir, len(s.d.Catalog().Relations))
	if start, end, ok := s.d.Extent(); ok {
		desc += fmt.Sprintf(", %s to %s", algebra.FormatTime(start, algebra.TimeAuto), algebra.FormatTime(end, algebra.TimeAuto))
	}
	return desc
}

func (s *dbSubject) Catalog() *algebra.Catalog { return s.d.Catalog() }
func (s *dbSubject) Spec() (db.Spec, error)    { return s.d.Spec(), nil }
func (s *dbSubject) Window() *algebra.Window   { return s.d.Window() }
func (s *dbSubject) database() *db.DB          { return s.d }
func (s *dbSubject) Close() error              { return s.d.Close() }
func (s *dbSubject) Sensors() string {
	return "no sensors: the source is a recorded database (what was recorded is all there is)\n"
}

func (s *dbSubject) Extent() (algebra.Time, algebra.Time, bool) { return s.d.Extent() }

func (s *dbSubject) Now() algebra.Time {
	if _, end, ok := s.d.Extent(); ok {
		return end
	}
	return 0
}

// Run plans the program for stored relations (temporal selections become
// time windows on the scans) and replays what it reads; acquisitionally,
// it runs over the whole history.
func (s *dbSubject) Run(ctx context.Context, prog *query.Program, o RunOptions) ([]query.Result, Stats, error) {
	stats := Stats{Blocks: map[string]uint64{}}
	for _, rs := range s.d.Stats() {
		stats.Blocks[rs.Name] = rs.Blocks
	}
	return runStored(ctx, replay.DB(s.d), prog, o, func() (*algebra.History, error) { return s.d.History(nil) }, stats)
}

// runStored runs a program over a store (a database, a Parquet
// recording) as replay plans it — acquisitionally over the whole history,
// which history loads — with stats, what the store says of itself, filled
// in with the run's.
func runStored(ctx context.Context, st replay.Store, prog *query.Program, o RunOptions, history func() (*algebra.History, error), stats Stats) ([]query.Result, Stats, error) {
	if o.Acquire {
		h, err := history()
		if err != nil {
			return nil, Stats{}, err
		}
		rs, ast, err := prog.RunAcquire(h, o.Naive)
		return rs, Stats{Acquire: &ast}, err
	}
	q, err := replay.Plan(st.Catalog(), prog.Stmts)
	if err != nil {
		return nil, Stats{}, err
	}
	rs, rst, err := replay.RunStore(st, q, replay.Options{Context: ctx, From: o.From, To: o.To, Pace: o.Pace, Player: o.Player, OnElem: o.OnElem,
		Discard: o.Discard, Budget: prog.Budget(), NoColumnar: prog.ExecOptions().NoColumnar})
	stats.Read = &rst
	if err != nil {
		return nil, stats, err
	}
	out := make([]query.Result, len(rs))
	for i, r := range rs {
		out[i] = query.Result{Stmt: r.Stmt, Table: r.Table}
	}
	return out, stats, nil
}

// Explain prints each retrieve's plan over the database: the scan rules
// applied and what each relation is read through.
func (s *dbSubject) Explain(w io.Writer, prog *query.Program, first int, _ bool) error {
	return explainStored(w, s.d.Catalog(), prog, first)
}

// explainStored prints each retrieve's plan over a store (a database, a
// Parquet recording): the scan rules applied and what each relation is
// read through.
func explainStored(w io.Writer, cat *algebra.Catalog, prog *query.Program, first int) error {
	q, err := replay.Plan(cat, prog.Stmts)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	for i, r := range q.Rewrite[first:] {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "%s:\ninitial: %s\n", stmtName(prog, first, i), plan.String(r.Initial))
		for _, st := range r.Steps {
			fmt.Fprintf(bw, "%s: %s\n", st.Rule, plan.String(st.After))
		}
		fmt.Fprintf(bw, "final:\n%s", plan.Tree(r.Final))
	}
	for _, r := range plan.ReadsOf(q.Plans).Rels {
		fmt.Fprintf(bw, "reads %s %s\n", r.Rel.Name, how(r.Window))
	}
	return bw.Flush()
}

func (s *dbSubject) recorded() (playable, error) {
	var reads []db.Read
	for _, r := range s.d.Catalog().Relations {
		reads = append(reads, db.Read{Rel: r.Name})
	}
	src, err := s.d.NewSource(reads)
	if err != nil {
		return playable{}, err
	}
	obs := s.d.ObservationHistory()
	start, end, ok := s.d.Extent()
	return playable{src: stream.Merge(src, stream.TableSource(obs, algebra.ObservedName, algebra.LostName)),
		done: func() { src.Close() }, window: extentWindow(s.d.Window(), start, end, ok), obs: obs}, nil
}

// recordedNames are the relations a recording plays: every relation, the
// observation's included.
func recordedNames(cat *algebra.Catalog) []string {
	var names []string
	for _, r := range append(slices.Clone(cat.Relations), cat.Builtins()...) {
		names = append(names, r.Name)
	}
	return names
}
