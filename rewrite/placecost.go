package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
)

// The rule "placement cost" (EndoScope's cost-based placement, decided
// statically): a program the rule "resident plans" could place whole at
// its resident is placed only if the results it would send are expected
// to be fewer than the packets they replace.
//
// Why it is an estimate and which way it errs. Placing replaces, on the
// wire, the packets of the program's α operators (after the resident's
// σ/π fragments, which run either way) and its entity tuples by its
// result tuples; a result tuple carries its begin and end and is larger
// than a packet, so a statement that sends a result for every packet of
// an α spares nothing of that α and costs more. A statement does so when
// its output block (the retrieve's block, or the outer block of its
// apply) reads exactly one α, over an event relation that is not sampled,
// besides entity relations each joined by equality of its key with an
// attribute of the event or a constant, with no other condition on them
// and no aggregate in its where clause: every event then names the one
// entity tuple it joins, and gives its own output tuple (at its own
// instant, so it is not coalesced with another's but for events at
// adjacent chronons), whose value — a running count, sum or average, or
// the event's attributes — is new at each event. Its results are at
// least its α's packets. The program is left at the monitor when every
// α it reads is such a statement's (placing spares none of its packets;
// the entity tuples it spares are assumed rarer than the events, as they
// are for processes against their calls). Anything else — a min or max
// (new only at a new extreme), an aggregate with no output variable, a
// selection on an entity's attribute (its selectivity is unknown), an
// interval or sampled relation, a relation read only by sparse
// statements — is expected to send fewer results than packets and is
// placed, as before. The estimate never affects exactness: both places
// run the same network over the same packets.
//
// Measured (BenchmarkKernelWirePlaced, BenchmarkWirePlaced): a running
// count with a join of each call and its process sends 20.1 bytes per
// result placed against 10.3 at the monitor (not placed by this rule);
// min and max of the names called, 3,101 against 104,269 (placed); a
// join with a selection on the process's state and a count of waits by
// mailbox (an interval relation) are placed and spare 2.5 to 3.5 times
// the bytes.

// denseStatement reports whether the final plan root sends at least one
// result per packet of an α (the rule above), and that α.
func denseStatement(root plan.Node) (*plan.Alpha, bool) {
	n := root
	if ap, ok := n.(*plan.Apply); ok {
		if ap.Pred != nil {
			return nil, false
		}
		n = ap.In
	}
	b, ok := decompose(n)
	if !ok {
		return nil, false
	}
	if b.hasUnit && len(b.leaves) == 0 {
		return denseAggregates(root)
	}
	var ev *plan.Alpha
	for _, l := range b.leaves {
		switch x := l.(type) {
		case *plan.Alpha:
			if ev != nil || !x.Rel.IsEvent() || x.Rel.Strategy.Kind == algebra.Sampled {
				return nil, false
			}
			ev = x
		case *plan.Scan:
			if x.Rel.Class != algebra.ClassEntity || algebra.IsObservation(x.Rel.Name) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if ev == nil {
		return nil, false
	}
	for _, c := range b.conds {
		// The event's own selection runs at the resident either way.
		if vs := expr.Vars(c); vs&^(1<<uint(ev.Var)) == 0 {
			continue
		}
		if !entityKeyEquality(c, b.leaves, ev.Var) {
			return nil, false
		}
	}
	return ev, true
}

// denseAggregates: an apply with no output variable sends a result per
// packet of an α when each of its aggregates is a count, sum or average
// (not unique: new at every tuple it counts) over one α, of an event
// relation not sampled, and nothing else.
func denseAggregates(root plan.Node) (*plan.Alpha, bool) {
	ap, ok := root.(*plan.Apply)
	if !ok || len(ap.Aggs) == 0 {
		return nil, false
	}
	var ev *plan.Alpha
	for _, g := range ap.Aggs {
		switch g.Func {
		case expr.AggCount, expr.AggSum, expr.AggAvg:
		default:
			return nil, false
		}
		// Its leaves, not looking into an α's arguments.
		var leaves []plan.Node
		var walk func(n plan.Node)
		walk = func(n plan.Node) {
			switch n.(type) {
			case *plan.Alpha, *plan.Scan, *plan.Unit:
				leaves = append(leaves, n)
				return
			}
			for _, c := range n.Children() {
				walk(c)
			}
		}
		walk(g.In)
		if len(leaves) != 1 {
			return nil, false
		}
		a, ok := leaves[0].(*plan.Alpha)
		if !ok || !a.Rel.IsEvent() || a.Rel.Strategy.Kind == algebra.Sampled || ev != nil && ev.Rel != a.Rel {
			return nil, false
		}
		ev = a
	}
	return ev, true
}

// entityKeyEquality reports whether c is entity.Key = event.attr or entity.Key
// = constant, for an entity relation's variable among leaves.
func entityKeyEquality(c expr.Expr, leaves map[int]plan.Node, ev int) bool {
	bin, ok := c.(*expr.Binary)
	if !ok || bin.Op != expr.OpEq {
		return false
	}
	isKey := func(e expr.Expr) bool {
		col, ok := e.(*expr.Col)
		if !ok || col.Attr != 0 || col.Var == ev {
			return false
		}
		s, ok := leaves[col.Var].(*plan.Scan)
		return ok && s.Rel.Class == algebra.ClassEntity
	}
	other := func(e expr.Expr) bool {
		switch e := e.(type) {
		case *expr.Const:
			return true
		case *expr.Col:
			return e.Var == ev
		}
		return false
	}
	return isKey(bin.X) && other(bin.Y) || isKey(bin.Y) && other(bin.X)
}

// costPlacement applies the rule "placement cost" to a placement the rule
// "resident plans" made (p.Resident): it says the estimate and, when
// placing spares no packet, leaves the program at the monitor (Costly).
func costPlacement(p ProgramPlacement, roots []plan.Node) ProgramPlacement {
	dense := map[string]bool{}
	var per []string
	p.PerPacket = map[string]int{}
	for i, r := range roots {
		if a, ok := denseStatement(r); ok {
			dense[a.Rel.Name] = true
			p.PerPacket[a.Rel.Name]++
			per = append(per, fmt.Sprintf("statement %d a result per packet of α %s (%s)", i+1, a.VarName, a.Rel.Name))
		}
	}
	var spared []string
	for _, r := range roots {
		plan.Walk(r, func(n plan.Node) {
			if a, ok := n.(*plan.Alpha); ok && !dense[a.Rel.Name] && !slices.Contains(spared, a.Rel.Name) {
				spared = append(spared, a.Rel.Name)
			}
		})
	}
	slices.Sort(spared)
	switch {
	case len(per) == 0:
		p.Estimate = "fewer results than packets expected (no statement sends one per packet)"
	case len(spared) == 0:
		p.Resident, p.Costly = false, true
		p.Estimate = strings.Join(per, ", ") + ": placing spares no packet, and a result (with its begin and end) is larger than a packet"
		p.Why = "placing does not pay: " + p.Estimate
	default:
		p.Estimate = strings.Join(per, ", ") + "; placing spares the packets of " + strings.Join(spared, ", ")
	}
	return p
}
