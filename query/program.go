package query

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/rewrite"
)

// Source is a query text with the name diagnostics use for it.
type Source struct {
	Name string
	Text string
}

// Program is a sequence of checked retrieves with their plans.
type Program struct {
	Catalog *algebra.Catalog
	Stmts   []*check.Retrieve
	Plans   []plan.Node
	// Sources and Params are what Compile compiled (its texts, and the
	// values of their $NAME references), and UsesNow whether a query named
	// now: a resident compiles the same texts again to run a plan
	// fragment (remote: plan fragments). A program checked otherwise has
	// none.
	Sources []Source
	Params  map[string]string
	UsesNow bool

	budget     *exec.Budget // WithBudget
	noColumnar bool         // WithoutColumnar
}

// WithoutColumnar returns the program to run through the row operators
// only (exec.Options.NoColumnar): for comparisons. The program itself is
// shared, not copied.
func (p *Program) WithoutColumnar() *Program {
	q := *p
	q.noColumnar = true
	return &q
}

// Compile parses every source (reporting the syntax errors of all of them),
// then checks them in order in one session, so range declarations and
// derived relations carry from one source to the next, and translates each
// retrieve into its initial algebra.
func Compile(cat *algebra.Catalog, srcs []Source, opts check.Options) (*Program, error) {
	var errs source.ErrorList
	files := make([]*tquel.File, len(srcs))
	for i, s := range srcs {
		f, err := tquel.Parse(s.Name, s.Text)
		if err != nil {
			errs = append(errs, source.Diagnostics(err)...)
			continue
		}
		files[i] = f
	}
	if len(errs) > 0 {
		return nil, errs
	}
	p := &Program{Catalog: cat, Sources: srcs, Params: opts.Params}
	nowFunc, now := opts.NowFunc, opts.Now
	opts.NowFunc = func() algebra.Time {
		p.UsesNow = true
		if nowFunc != nil {
			return nowFunc()
		}
		return now
	}
	sess := check.NewSession(cat, opts)
	for _, f := range files {
		stmts, err := sess.Check(f)
		if err != nil {
			errs = append(errs, source.Diagnostics(err)...)
			continue
		}
		p.Stmts = append(p.Stmts, stmts...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for _, r := range p.Stmts {
		p.Plans = append(p.Plans, plan.Translate(r))
	}
	return p, nil
}

// Result is one retrieve's result relation.
type Result struct {
	Stmt  *check.Retrieve
	Table *algebra.Table
}

// Stats describe a run.
type Stats struct {
	// PeakHeld is the most tuples the operators held at once.
	PeakHeld int
	// Chunked says the run was columnar over a source's chunks
	// (exec.Network.RunChunks or RunSemi).
	Chunked bool
}

// ExecOptions are the options of the networks the program's runs build:
// its budget, and whether the columnar path is off.
func (p *Program) ExecOptions() exec.Options {
	return exec.Options{Budget: p.budget, NoColumnar: p.noColumnar}
}

// RunHistory evaluates the program incrementally over a recorded history,
// its plans rewritten with the Stored rules (existential variables become
// semi-joins).
func (p *Program) RunHistory(h *algebra.History) ([]Result, Stats, error) {
	plans, err := p.StoredPlans()
	if err != nil {
		return nil, Stats{}, err
	}
	// Answers are cut out of the gaps the history's Lost relation holds.
	eo := p.ExecOptions()
	eo.Gaps, eo.Observed = exec.TableGaps(h.Table(algebra.LostName)), h.Window != nil
	net, err := exec.Build(p.Catalog, p.Stmts, plans, eo)
	if err != nil {
		return nil, Stats{}, err
	}
	if err := net.RunHistory(h); err != nil {
		return nil, Stats{}, err
	}
	return results(net), Stats{PeakHeld: net.PeakHeld()}, nil
}

// RunSource evaluates the program incrementally over a time-ordered
// stream of the primitive relations it reads: open is given their names
// (sorted) and returns the stream, read through once. window is asked for
// the span Clock ticks fill only when the program reads a clock (a
// recording's extent may take reading it to know). Answers are cut out of
// gaps, if not nil (exec.Cut). Like RunHistory, it runs the plans
// rewritten with the Stored rules (StoredPlans). out, when its OnElem is
// set, sees the result elements as they are produced. When every
// statement is σ/π over one relation and the source is an
// exec.ChunkSource, the program runs columnar over the relation's chunks
// (Network.RunChunks), with the same results, elements and Skipped; so
// does a program of one semi-join of two relations (Network.RunSemi),
// with the same results and elements.
func (p *Program) RunSource(open func(rels []string) (stream.Source, error), window func() (*algebra.Window, error), gaps exec.Gaps, out Output) ([]Result, Stats, error) {
	plans, err := p.StoredPlans()
	if err != nil {
		return nil, Stats{}, err
	}
	eo := p.ExecOptions()
	eo.Gaps, eo.Observed = gaps, out.Observed
	net, err := exec.Build(p.Catalog, p.Stmts, plans, eo)
	if err != nil {
		return nil, Stats{}, err
	}
	if out.OnElem != nil {
		for i, s := range net.Stmts {
			s.Result.OnElem = func(e stream.Elem) { out.OnElem(i, e) }
			s.Result.Discard = out.Discard
		}
	}
	rels := make([]string, 0, len(net.Sources))
	for name := range net.Sources {
		rels = append(rels, name)
	}
	slices.Sort(rels)
	var w *algebra.Window
	if len(net.Clocks) > 0 {
		if w, err = window(); err != nil {
			return nil, Stats{}, err
		}
	}
	src, err := open(rels)
	if err != nil {
		return nil, Stats{}, err
	}
	// σ/π statements over one relation run columnar over its tuples in
	// chunks, when the source offers them (exec.RunChunks).
	if rel := net.ChunkRelation(p.Catalog); rel != "" {
		if cs, ok := src.(exec.ChunkSource); ok {
			if err := net.RunChunks(p.Catalog, rel, cs); err != nil {
				return nil, Stats{}, err
			}
			return results(net), Stats{PeakHeld: net.PeakHeld(), Chunked: true}, nil
		}
	}
	// A semi-join of two relations runs columnar over their chunks too
	// (exec.RunSemi).
	if rels := net.SemiRelations(p.Catalog); rels != nil {
		if cs, ok := src.(exec.ChunkSource); ok {
			if err := net.RunSemi(p.Catalog, rels, cs); err != nil {
				return nil, Stats{}, err
			}
			return results(net), Stats{PeakHeld: net.PeakHeld(), Chunked: true}, nil
		}
	}
	if _, err := net.RunSource(src, w); err != nil {
		return nil, Stats{}, err
	}
	return results(net), Stats{PeakHeld: net.PeakHeld()}, nil
}

// Output is where a run's result elements go besides its result tables.
type Output struct {
	// OnElem, when set, sees each result element of statement stmt as it
	// is produced, in time order.
	OnElem func(stmt int, e stream.Elem)
	// Discard keeps no result rows (with OnElem: the tables are empty).
	Discard bool
	// Observed says the source is an observation (a recording with a
	// window): see exec.Options.Observed.
	Observed bool
}

// results are the result tables of a network's retrieves.
func results(net *exec.Network) []Result {
	out := make([]Result, len(net.Stmts))
	for i, s := range net.Stmts {
		out[i] = Result{Stmt: s.Retrieve, Table: s.Result.Table()}
	}
	return out
}

// StoredPlans rewrites each retrieve's initial algebra with the Stored rule
// set (rewrite.RewriteStored): the plans run over stored relations.
func (p *Program) StoredPlans() ([]plan.Node, error) {
	out := make([]plan.Node, len(p.Plans))
	for i, pl := range p.Plans {
		res, err := rewrite.RewriteStored(&rewrite.Context{Catalog: p.Catalog}, pl)
		if err != nil {
			return nil, err
		}
		out[i] = res.Final
	}
	return out, nil
}

// Rewritten translates each retrieve into the algebra with α operators
// (WithAlphas) and, unless naive, rewrites it. The rewrite results carry
// the trace --explain shows.
func (p *Program) Rewritten(naive bool) ([]rewrite.Result, error) {
	out := make([]rewrite.Result, len(p.Plans))
	for i, pl := range p.Plans {
		a := plan.WithAlphas(pl, p.Catalog)
		if naive {
			out[i] = rewrite.Result{Initial: a, Final: a}
			continue
		}
		res, err := rewrite.Rewrite(&rewrite.Context{Catalog: p.Catalog}, a)
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}

// RunAcquire evaluates the program acquisitionally over a history: a
// simulated resident monitor delivers only the packets enabled sensors
// would produce (see algebra/exec). naive runs the initial plans.
func (p *Program) RunAcquire(h *algebra.History, naive bool) ([]Result, exec.AcquireStats, error) {
	rw, err := p.Rewritten(naive)
	if err != nil {
		return nil, exec.AcquireStats{}, err
	}
	plans := make([]plan.Node, len(rw))
	for i, r := range rw {
		plans[i] = r.Final
	}
	eo := p.ExecOptions()
	eo.Observed = h.Window != nil
	net, err := exec.Build(p.Catalog, p.Stmts, plans, eo)
	if err != nil {
		return nil, exec.AcquireStats{}, err
	}
	stats, err := net.RunAcquire(h)
	if err != nil {
		return nil, stats, err
	}
	return results(net), stats, nil
}
