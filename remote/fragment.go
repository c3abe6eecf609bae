package remote

import (
	"slices"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/rewrite"
)

// fragments installs, on residents that carry out fragments
// (wire.CapFragments), what rewrite.Place decided each α's sensor runs.
// A session's fragments on one sensor combine by union, so once one α on
// a sensor has a fragment, every α on that sensor gets one — those with
// nothing placed a fragment that passes and keeps everything. The monitor
// runs the same σ and π again: results do not depend on the fragments.
func (c *commander) fragments(alphas []*exec.Alpha, placed map[*plan.Alpha]*rewrite.Fragment) {
	for _, st := range c.states {
		if !st.hello.Has(wire.CapFragments) {
			return
		}
	}
	bySensor := map[string][]*exec.Alpha{}
	has := map[string]bool{}
	var rels []string
	for _, a := range alphas {
		s := a.Rel.Name
		if _, ok := bySensor[s]; !ok {
			rels = append(rels, s)
		}
		bySensor[s] = append(bySensor[s], a)
		for _, x := range a.Plans {
			if placed[x] != nil {
				has[s] = true
			}
		}
	}
	for _, s := range rels {
		if !has[s] {
			continue
		}
		// One fragment per plan α: an α operator standing for several
		// (exec.Options.ShareAlphas) needs the union of theirs.
		for _, a := range bySensor[s] {
			for _, x := range a.Plans {
				c.fragment(a, placed[x])
			}
		}
	}
}

// fragment sends α a's fragment f (nil: one that passes and keeps
// everything).
func (c *commander) fragment(a *exec.Alpha, f *rewrite.Fragment) {
	cmd := wire.Command{Kind: wire.CFragment}
	if f != nil {
		if f.Pred != nil && !(c.fleet && fleetOnly(f.Pred, len(a.Rel.Attrs)-1)) {
			cmd.Pred, _ = WirePred(f.Pred)
		}
		for _, k := range f.Keep {
			if c.fleet && k == len(a.Rel.Attrs)-1 {
				continue // Host: the monitor adds it
			}
			cmd.Keep = append(cmd.Keep, uint16(k))
		}
	}
	c.next++
	cmd.ID = c.next
	c.send(order{cmd: cmd, rel: a.Rel.Name})
}

// fleetOnly reports whether a placed selection needs what only a fleet's
// monitor knows: the host attribute (number host) or an entity identifier
// (qualified by its host). A resident cannot evaluate it: the fragment
// passes everything (a superset; the monitor's σ runs anyway).
func fleetOnly(e expr.Expr, host int) bool {
	found := false
	expr.Walk(e, func(x expr.Expr) {
		switch x := x.(type) {
		case *expr.Col:
			found = found || x.Attr == host
		case *expr.Const:
			found = found || x.V.K == algebra.KindEntity
		}
	})
	return found
}

// entityFragments installs, on residents that filter entity relations
// (wire.CapEntityFragments), the selections rewrite.PlaceEntities placed
// on the entity relations the plans read: a session is then sent only the
// entity tuples some read of the relation can use (the disjunction of the
// reads' selections). The plans run them again.
func (c *commander) entityFragments(placed map[string]*rewrite.EntityFragment) {
	for _, st := range c.states {
		if !st.hello.Has(wire.CapEntityFragments) {
			return
		}
	}
	names := make([]string, 0, len(placed))
	for name := range placed {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var kids []wire.Pred
		for _, e := range placed[name].Preds {
			if c.fleet && fleetOnly(e, len(placed[name].Rel.Attrs)-1) {
				kids = nil // not the resident's to evaluate: it sends all
				break
			}
			p, ok := WirePred(e)
			if !ok {
				kids = nil
				break
			}
			kids = append(kids, *p)
		}
		if len(kids) == 0 {
			continue
		}
		cmd := wire.Command{Kind: wire.CFragment, Pred: &kids[0]}
		if len(kids) > 1 {
			cmd.Pred = &wire.Pred{Op: wire.POr, Kids: kids}
		}
		c.next++
		cmd.ID = c.next
		c.send(order{cmd: cmd, rel: name})
	}
}

// WirePred translates a placed selection (rewrite.Place: comparisons of
// one variable's columns with constants, and, or, not) into a wire
// predicate; false for anything else.
func WirePred(e expr.Expr) (*wire.Pred, bool) {
	switch e := e.(type) {
	case *expr.Unary:
		if e.Op != expr.OpNot {
			return nil, false
		}
		x, ok := WirePred(e.X)
		if !ok {
			return nil, false
		}
		return &wire.Pred{Op: wire.PNot, Kids: []wire.Pred{*x}}, true
	case *expr.Binary:
		if e.Op == expr.OpAnd || e.Op == expr.OpOr {
			x, ok1 := WirePred(e.X)
			y, ok2 := WirePred(e.Y)
			if !ok1 || !ok2 {
				return nil, false
			}
			op := wire.PAnd
			if e.Op == expr.OpOr {
				op = wire.POr
			}
			return &wire.Pred{Op: op, Kids: []wire.Pred{*x, *y}}, true
		}
		col, k, mirrored, ok := rewrite.ColConst(e)
		if !ok {
			return nil, false
		}
		op, ok := wireOps[e.Op]
		if !ok {
			return nil, false
		}
		if mirrored {
			op = mirror[op]
		}
		return &wire.Pred{Op: op, Attr: uint16(col.Attr), Value: wireValue(k.V)}, true
	}
	return nil, false
}

var wireOps = map[expr.Op]wire.PredOp{expr.OpEq: wire.PEq, expr.OpNe: wire.PNe, expr.OpLt: wire.PLt,
	expr.OpLe: wire.PLe, expr.OpGt: wire.PGt, expr.OpGe: wire.PGe}

// mirror is the comparison read the other way round: c < x is x > c.
var mirror = map[wire.PredOp]wire.PredOp{wire.PEq: wire.PEq, wire.PNe: wire.PNe, wire.PLt: wire.PGt,
	wire.PLe: wire.PGe, wire.PGt: wire.PLt, wire.PGe: wire.PLe}
