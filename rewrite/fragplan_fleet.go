package rewrite

import (
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// PlacePerHost decides the rule "per-host plans" (the paper's horizontal
// fragmentation over a fleet): a fleet's program whose every result
// tuple is made of one host's tuples only, and says which host, runs
// whole at each host — the host compiles it over its own part of the
// fleet's catalog (its relations, each with Host, its entity identifiers
// host-qualified: a fleet of one) — and the monitor's answer is the union
// of the hosts' answers.
//
// A plan is host-local when each of its output tuples derives from the
// tuples of a single host, and some of its output columns determine that
// host ("host columns": equal values there mean the same host). Host-local
// are:
//
//   - a scan or α of a primitive relation (not the Clock, not Observed or
//     Lost, not a derived relation): its host columns are Host and its
//     entity-typed attributes, whose identifiers the monitor qualifies
//     with the host (HOST/ID, and host names hold no '/': an identifier
//     and a host name are never equal, so one value never names two hosts);
//   - a block π(πT(σT(σ(L1 × … × Lk)))) whose leaves are host-local,
//     and whose conjuncts equate
//     host columns so that every host-local leaf is linked to every other
//     (a join on Process, on Host): two hosts' tuples then never meet in a
//     product tuple that passes the selection. Its host columns are the
//     targets that are a leaf's host column;
//   - an apply whose block is host-local and each of whose aggregates is
//     grouped by a host column (by h.Host, by an entity attribute) of a
//     host-local block that the apply's own tuple picks by a host column:
//     the group the tuple of host h picks is made of h's tuples only. Its
//     host columns are the targets that are the block's host columns.
//
// A program is placed per host when every statement's plan is host-local
// with a host column among its targets. Why it is exact: for a host-local
// plan P over a fleet's history H = ⋃h Hh (Hh host h's tuples, disjoint),
// P(H) = ⋃h P(Hh) — each result tuple needs one host's tuples, which are
// all in that host's part, and a tuple of Hh's answer is one of H's since
// nothing another host has can undo it (no negation or difference is
// host-local; an aggregate's group is one host's). The hosts' answers are
// disjoint because each result names its host, so the union needs no
// coalescing: the monitor concatenates them. Each host's answer is the
// plan fragment's (PlaceProgram's "why it is exact": the same compiler and
// network over the same packets), so a host's losses, and a host lost,
// cut that host's part only.
//
// Left at the monitor: programs PlaceProgram keeps there for a reason
// other than the fleet (the observation's relations, no join or
// aggregate), programs reading the Clock (a host's fragment ticks over
// what that host observed, the monitor's over the whole run), programs
// reading a derived relation (which host a derived
// tuple is of the rule does not follow through retrieve into), aggregates
// over every host (ungrouped, or grouped by something that does not
// determine the host: their combination is a merge the monitor does not
// have), joins not linked by host columns, and results that do not name
// their host (two hosts' equal answers would have to be coalesced).
func PlacePerHost(cat *algebra.Catalog, roots ...plan.Node) ProgramPlacement {
	if !cat.Fleet {
		return ProgramPlacement{Why: "not a fleet"}
	}
	p := placeOne(roots)
	if !p.Resident {
		return p
	}
	p.Resident = false
	for _, root := range roots {
		cols, why := hostLocal(root)
		if why != "" {
			p.Why = why
			return p
		}
		if len(cols) == 0 {
			p.Why = "a result does not name its host (two hosts' equal results would merge)"
			return p
		}
	}
	p.Resident, p.PerHost = true, true
	return p
}

// hostLocal returns the host columns of n, or why n is not host-local.
func hostLocal(n plan.Node) (map[int]bool, string) {
	switch x := n.(type) {
	case *plan.Alpha:
		return relHostCols(x.Rel), ""
	case *plan.Scan:
		switch {
		case x.Rel.Derived:
			return nil, "it reads the derived relation " + x.Rel.Name
		case x.Rel.IsClock():
			// Each host's Clock ticks over its own observation, the
			// monitor's over the run's: at the edges they differ.
			return nil, "it reads the Clock (a host's ticks only over what it observed)"
		}
		return relHostCols(x.Rel), ""
	case *plan.Apply:
		for _, a := range x.Aggs {
			if a.NBy == 0 {
				return nil, "the aggregate " + a.Text + " is over every host (the hosts' parts would have to be merged)"
			}
		}
		in, why := hostLocal(x.In)
		if why != "" {
			return nil, why
		}
		for j, a := range x.Aggs {
			acols, why := hostLocal(a.In)
			if why != "" {
				return nil, why
			}
			picked := false
			for k := 0; k < a.NBy && j < len(x.Groups) && k < len(x.Groups[j]); k++ {
				if acols[k] && in[x.Groups[j][k]] {
					picked = true
				}
			}
			if !picked {
				return nil, "the aggregate " + a.Text + " is not grouped by its host (the hosts' parts would have to be merged)"
			}
		}
		out := map[int]bool{}
		for i, t := range x.Targets {
			if c, ok := t.Expr.(*expr.Col); ok && c.Var == 0 && in[c.Attr] {
				out[i] = true
			}
		}
		return out, ""
	}
	b, ok := decompose(n)
	if !ok {
		return nil, "an operator the rule does not follow (" + plan.String(n) + ")"
	}
	// The leaves' host columns, and which leaves are linked by an
	// equality of host columns (union-find over the variables).
	leafCols := map[int]map[int]bool{}
	parent := map[int]int{}
	var find func(v int) int
	find = func(v int) int {
		for parent[v] != v {
			v = parent[v]
		}
		return v
	}
	for v, l := range b.leaves {
		cols, why := hostLocal(l)
		if why != "" {
			return nil, why
		}
		leafCols[v] = cols
		parent[v] = v
	}
	if len(leafCols) == 0 {
		return nil, "it reads no host's relation"
	}
	isHost := func(e expr.Expr) (*expr.Col, bool) {
		c, ok := e.(*expr.Col)
		return c, ok && leafCols[c.Var] != nil && leafCols[c.Var][c.Attr]
	}
	for _, c := range b.conds {
		eq, ok := c.(*expr.Binary)
		if !ok || eq.Op != expr.OpEq {
			continue
		}
		l, lok := isHost(eq.X)
		r, rok := isHost(eq.Y)
		if lok && rok {
			parent[find(l.Var)] = find(r.Var)
		}
	}
	root := -1
	for v := range leafCols {
		if root < 0 {
			root = find(v)
		} else if find(v) != root {
			return nil, "a join does not equate host-qualified attributes (two hosts' tuples could meet)"
		}
	}
	out := map[int]bool{}
	for i, t := range b.root.Targets {
		if _, ok := isHost(t.Expr); ok {
			out[i] = true
		}
	}
	return out, ""
}

// relHostCols are a primitive relation's host columns in a fleet: Host
// and its entity-typed attributes.
func relHostCols(r *algebra.Relation) map[int]bool {
	out := map[int]bool{}
	for i, a := range r.Attrs {
		if a.Type.Kind == algebra.KindEntity || a.Name == algebra.HostAttr {
			out[i] = true
		}
	}
	return out
}
