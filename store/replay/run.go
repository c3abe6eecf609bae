package replay

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
)

// Query is a sequence of checked retrieves planned for stored relations:
// plan.Translate's plans rewritten by the scan rules, so temporal
// selections become time windows on the scans.
type Query struct {
	Catalog *algebra.Catalog
	Stmts   []*check.Retrieve
	Plans   []plan.Node
	Rewrite []rewrite.Result
}

// Plan plans checked retrieves over stored relations.
func Plan(cat *algebra.Catalog, stmts []*check.Retrieve) (*Query, error) {
	q := &Query{Catalog: cat, Stmts: stmts}
	for _, s := range stmts {
		res, err := rewrite.RewriteStored(&rewrite.Context{Catalog: cat}, plan.Translate(s))
		if err != nil {
			return nil, err
		}
		q.Rewrite = append(q.Rewrite, res)
		q.Plans = append(q.Plans, res.Final)
	}
	return q, nil
}

// Options shape a run over a database.
type Options struct {
	// From and To, when set, limit the run to the tuples valid somewhere
	// in [From, To] (with their whole valid times) and Clock ticks to it.
	From, To *algebra.Time
	// Pace, when set, plays the stored elements through a play.Player
	// with these options (Start and End are set from the run's span, and
	// it drains: elements after the span come at once, the run lasts to
	// its end; heartbeats every 50 ms unless Beat says otherwise) and
	// Player, if set, receives it before the run starts, for control.
	Pace   *play.Options
	Player func(*play.Player)
	// Context ends a paced run early, as the player's Stop does (what was
	// delivered stands).
	Context context.Context
	// OnElem, when set, is called with each result element as it is
	// produced: the statement's index and the element.
	OnElem func(stmt int, e stream.Elem)
	// Discard keeps no result rows when OnElem is set: the tables Run
	// returns are empty.
	Discard bool
	// Budget, if set, bounds the memory the run holds (exec.Budget).
	Budget *exec.Budget
	// NoColumnar runs every statement through the row operators
	// (exec.Options.NoColumnar): for comparisons.
	NoColumnar bool
}

// Result is one retrieve's result relation.
type Result struct {
	Stmt  *check.Retrieve
	Table *algebra.Table
}

// Stats describe a run.
type Stats struct {
	Read     db.ReadStats
	PeakHeld int
	// Reads are the relations read and their windows.
	Reads []db.Read
	// Chunked says the run was columnar over the store's chunks
	// (exec.Network.RunChunks).
	Chunked bool
}

// Store is what a run reads: a badger database (DB) or a Parquet
// recording — one evaluation over either, with the same scan windows.
type Store interface {
	Catalog() *algebra.Catalog
	// Extent and Window are as db.DB's.
	Extent() (start, end algebra.Time, ok bool)
	Window() *algebra.Window
	// Observation is a history holding the observation's tuples (the
	// Observed and Lost tables).
	Observation() (*algebra.History, error)
	// Scan reads relations, each whole or through a window (db.Read): the
	// tuples valid somewhere in it, with their whole valid times.
	Scan(reads []db.Read) (Scan, error)
}

// Scan is a store's time-ordered stream of the relations read.
type Scan interface {
	stream.Source
	Stats() db.ReadStats
	Close()
}

// DB is a database as a Store.
func DB(d *db.DB) Store { return dbStore{d} }

type dbStore struct{ *db.DB }

func (d dbStore) Observation() (*algebra.History, error) { return d.ObservationHistory(), nil }
func (d dbStore) Scan(reads []db.Read) (Scan, error) {
	src, err := d.NewSource(reads)
	if err != nil {
		return nil, err // not a nil *db.Source in an interface
	}
	return src, nil
}

// Parquet is a Parquet recording as a Store.
func Parquet(s *parquet.Store) Store { return parquetStore{s} }

type parquetStore struct{ *parquet.Store }

func (s parquetStore) Scan(reads []db.Read) (Scan, error) {
	sc, err := s.NewScan(reads)
	if err != nil {
		return nil, err // not a nil *parquet.Scan in an interface
	}
	return sc, nil
}

// Span is the part of the store's extent a run covers: the extent,
// narrowed to [From, To] when given; ok is false for an empty store
// without a window.
func Span(d Store, opts Options) (algebra.Window, bool) {
	start, end, ok := d.Extent()
	if !ok {
		return algebra.Window{}, false
	}
	w := algebra.Window{From: start, To: end}
	if opts.From != nil {
		w.From = max(w.From, *opts.From)
	}
	if opts.To != nil {
		w.To = min(w.To, *opts.To)
	}
	return w, true
}

// Run evaluates the query over the database (RunStore).
func Run(d *db.DB, q *Query, opts Options) ([]Result, Stats, error) {
	return RunStore(DB(d), q, opts)
}

// RunStore evaluates the query over a store: each relation the plans
// read is read through the hull of its scans' windows (and the run's
// span), in time order, into the same update network live monitoring
// uses.
func RunStore(d Store, q *Query, opts Options) ([]Result, Stats, error) {
	var st Stats
	reads := plan.ReadsOf(q.Plans)
	var limit *algebra.Window
	if opts.From != nil || opts.To != nil {
		w := algebra.Window{From: algebra.Beginning, To: algebra.Forever}
		if opts.From != nil {
			w.From = *opts.From
		}
		if opts.To != nil {
			w.To = *opts.To
		}
		limit = &w
	}
	for _, r := range reads.Rels {
		w := r.Window
		if limit != nil {
			l := *limit
			if w != nil {
				l = plan.Intersect(*w, l)
			}
			w = &l
		}
		st.Reads = append(st.Reads, db.Read{Rel: r.Rel.Name, Window: w})
	}
	var clock *algebra.Window
	span, ok := Span(d, opts)
	if ok {
		clock = &span
		if reads.Clock != nil {
			w := plan.Intersect(span, *reads.Clock)
			clock = &w
		}
	}
	// The observation's relations are read from the database's
	// observation, and answers are cut out of its gaps (exec.Cut).
	obs, err := d.Observation()
	if err != nil {
		return nil, st, err
	}
	net, err := exec.Build(q.Catalog, q.Stmts, q.Plans, exec.Options{Budget: opts.Budget, NoColumnar: opts.NoColumnar,
		Gaps: exec.TableGaps(obs.Table(algebra.LostName)), Observed: d.Window() != nil})
	if err != nil {
		return nil, st, err
	}
	// Whatever the network reads that the plans' scans do not show (an
	// operator with inputs of its own) is read whole, and Clock ticks are
	// generated over the whole span unless every clock is a scan with a
	// window.
	read := map[string]bool{}
	for _, r := range st.Reads {
		read[r.Rel] = true
	}
	for name := range net.Sources {
		if !read[name] && d.Catalog().Lookup(name) != nil {
			st.Reads = append(st.Reads, db.Read{Rel: name, Window: limit})
		}
	}
	windowed := map[int64]bool{}
	for _, p := range q.Plans {
		plan.Walk(p, func(n plan.Node) {
			if s, ok := n.(*plan.Scan); ok && s.Rel.IsClock() && s.Window != nil {
				windowed[s.Rel.ClockN] = true
			}
		})
	}
	for c := range net.Clocks {
		if !windowed[c] && ok && clock != nil {
			clock = &span
		}
	}
	if opts.OnElem != nil {
		for i, s := range net.Stmts {
			s.Result.OnElem = func(e stream.Elem) { opts.OnElem(i, e) }
			s.Result.Discard = opts.Discard
		}
	}
	var observed []string
	st.Reads = slices.DeleteFunc(st.Reads, func(r db.Read) bool {
		if algebra.IsObservation(r.Rel) {
			observed = append(observed, r.Rel)
			return true
		}
		return false
	})
	src, err := d.Scan(st.Reads)
	if err != nil {
		return nil, st, err
	}
	defer src.Close()
	var from stream.Source = src
	if len(observed) > 0 {
		from = stream.Merge(src, stream.TableSource(obs, observed...))
	}
	if opts.Pace != nil {
		po := *opts.Pace
		if po.Beat == 0 {
			po.Beat = 50 * time.Millisecond
		}
		start, end := algebra.Beginning, algebra.Forever
		if ok {
			start, end = span.From, span.To
		}
		po.Start, po.End, po.Drain = &start, end, true
		p := play.NewPlayer(context.Background(), from, po)
		if opts.Context != nil {
			defer context.AfterFunc(opts.Context, p.Stop)()
		}
		if opts.Player != nil {
			opts.Player(p)
		}
		from = p
	}
	// σ/π statements over one stored relation run columnar over its
	// tuples in chunks when the store offers them (a database does), as
	// over a history directory (query.Program.RunSource): unpaced, and
	// not over the observation's relations (read from a table here).
	// So does a semi-join of two relations (exec.Network.RunSemi).
	var chunks exec.ChunkSource
	rel := ""
	var semi []string
	if opts.Pace == nil && len(observed) == 0 && len(st.Reads) == 1 {
		if rel = net.ChunkRelation(q.Catalog); rel == st.Reads[0].Rel {
			chunks, _ = src.(exec.ChunkSource)
		}
	}
	if opts.Pace == nil && len(observed) == 0 && len(st.Reads) == 2 {
		semi = net.SemiRelations(q.Catalog)
		if semi != nil && slices.ContainsFunc(st.Reads, func(r db.Read) bool { return r.Rel == semi[0] }) &&
			slices.ContainsFunc(st.Reads, func(r db.Read) bool { return r.Rel == semi[1] }) {
			chunks, _ = src.(exec.ChunkSource)
		}
	}
	if chunks != nil && semi != nil {
		err = net.RunSemi(q.Catalog, semi, chunks)
		st.Chunked = true
	} else if chunks != nil {
		err = net.RunChunks(q.Catalog, rel, chunks)
		st.Chunked = true
	} else {
		_, err = net.RunSource(from, clock)
	}
	if err != nil {
		st.Read = src.Stats()
		return nil, st, fmt.Errorf("%w", err)
	}
	st.Read = src.Stats()
	st.PeakHeld = net.PeakHeld()
	out := make([]Result, len(net.Stmts))
	for i, s := range net.Stmts {
		out[i] = Result{Stmt: s.Retrieve, Table: s.Result.Table()}
	}
	return out, st, nil
}
