package exec

import (
	"fmt"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// Stmt is one retrieve compiled into operators.
type Stmt struct {
	Retrieve *check.Retrieve
	Plan     plan.Node
	Join     *Join
	Coalesce *Coalesce
	Result   *Collector
	out      *Tee // the coalesced result, to the collector and later statements
}

// Network is the update network of a sequence of retrieves.
type Network struct {
	Stmts []*Stmt
	// Sources maps each primitive relation a statement reads to the tee that
	// feeds every reader.
	Sources map[string]*Tee
	// Clocks maps n to the tee of Clock[n].
	Clocks map[int64]*Tee
	// Heartbeat receives only Advance: it drives statements without range
	// variables.
	Heartbeat *Tee
	// ClockPeriod is the base Clock period.
	ClockPeriod int64

	st      *runState
	holders []holder
	peak    int
}

// Options tune a network without changing its results.
type Options struct {
	// SweepMin is the number of stored tuples at which a join input is
	// first swept for tuples no future binding can use (default 64; tests
	// use 1 to sweep at every step).
	SweepMin int
}

// Build compiles plans (one per statement, in order) into a network.
func Build(cat *algebra.Catalog, stmts []*check.Retrieve, plans []plan.Node, opts Options) (*Network, error) {
	n := &Network{
		Sources:     map[string]*Tee{},
		Clocks:      map[int64]*Tee{},
		Heartbeat:   &Tee{},
		ClockPeriod: algebra.DefaultClockPeriod,
		st:          &runState{},
	}
	if cat != nil {
		n.ClockPeriod = cat.ClockPeriod
	}
	byRetrieve := map[*check.Retrieve]*Stmt{}
	for i, r := range stmts {
		spec, leaves, err := compileBlock(plans[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		s := &Stmt{Retrieve: r, Plan: plans[i], out: &Tee{}}
		s.Result = NewCollector(r.Result)
		s.out.Add(s.Result)
		s.Coalesce = NewCoalesce(s.out)
		s.Join = NewJoin(spec, s.Coalesce, n.st, opts.SweepMin)
		n.holders = append(n.holders, s.Join, s.Coalesce)
		if len(leaves) == 0 {
			n.Heartbeat.Add(s.Join.Input(0))
		}
		for v, leaf := range leaves {
			in := s.Join.Input(v)
			switch {
			case leaf.Rel.IsClock():
				t := n.Clocks[leaf.Rel.ClockN]
				if t == nil {
					t = &Tee{}
					n.Clocks[leaf.Rel.ClockN] = t
				}
				t.Add(in)
			case leaf.From != nil:
				src := byRetrieve[leaf.From]
				if src == nil {
					return nil, fmt.Errorf("%s reads %s before it is derived", r.Name, leaf.Rel.Name)
				}
				src.out.Add(in)
			default:
				t := n.Sources[leaf.Rel.Name]
				if t == nil {
					t = &Tee{}
					n.Sources[leaf.Rel.Name] = t
				}
				t.Add(in)
			}
		}
		byRetrieve[r] = s
		n.Stmts = append(n.Stmts, s)
	}
	return n, nil
}

// compileBlock flattens a retrieve's plan — π over πT over any tree of σ,
// σT, × and ⋈ over scans — into a JoinSpec. The leaves come back indexed by
// variable.
func compileBlock(root plan.Node) (JoinSpec, []*plan.Scan, error) {
	var spec JoinSpec
	pr, ok := root.(*plan.Project)
	if !ok {
		return spec, nil, fmt.Errorf("plan root is %s, want π", root.Label())
	}
	pt, ok := pr.In.(*plan.ProjectT)
	if !ok {
		return spec, nil, fmt.Errorf("π input is %s, want πT", pr.In.Label())
	}
	for _, t := range pr.Targets {
		spec.Targets = append(spec.Targets, t.Expr)
	}
	spec.Valid = pt.Valid
	var whens []expr.Pred
	leaves := map[int]*plan.Scan{}
	unit := false
	var walk func(n plan.Node) error
	walk = func(n plan.Node) error {
		switch n := n.(type) {
		case *plan.Select:
			spec.Conds = append(spec.Conds, expr.Conjuncts(n.Pred)...)
			return walk(n.In)
		case *plan.SelectT:
			whens = append(whens, expr.PConjuncts(n.Pred)...)
			return walk(n.In)
		case *plan.Product:
			if err := walk(n.L); err != nil {
				return err
			}
			return walk(n.R)
		case *plan.Join:
			spec.Conds = append(spec.Conds, n.On...)
			if err := walk(n.L); err != nil {
				return err
			}
			return walk(n.R)
		case *plan.Scan:
			if _, dup := leaves[n.Var]; dup {
				return fmt.Errorf("variable %s scanned twice", n.VarName)
			}
			leaves[n.Var] = n
			return nil
		case *plan.Unit:
			unit = true
			return nil
		}
		return fmt.Errorf("operator %s cannot appear inside a retrieve block", n.Label())
	}
	if err := walk(pt.In); err != nil {
		return spec, nil, err
	}
	spec.When = expr.PAndOf(whens)
	out := make([]*plan.Scan, len(leaves))
	for v, s := range leaves {
		if v < 0 || v >= len(out) {
			return spec, nil, fmt.Errorf("variable %s has index %d of %d", s.VarName, v, len(out))
		}
		out[v] = s
		spec.Events = append(spec.Events, false)
	}
	for v, s := range out {
		if s == nil {
			return spec, nil, fmt.Errorf("variable %d is not scanned", v)
		}
		spec.Events[v] = s.Rel.IsEvent()
	}
	if unit && len(out) > 0 {
		return spec, nil, fmt.Errorf("unit relation beside scans")
	}
	return spec, out, nil
}

// Err is the first runtime error of the run, if any.
func (n *Network) Err() error { return n.st.err }

// Held is the number of tuples the operators hold now.
func (n *Network) Held() int {
	total := 0
	for _, h := range n.holders {
		total += h.Held()
	}
	return total
}

// PeakHeld is the largest Held seen by the driver.
func (n *Network) PeakHeld() int { return n.peak }

func (n *Network) notePeak() {
	if h := n.Held(); h > n.peak {
		n.peak = h
	}
}
