package remote

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/resident/wire"
)

// Two-phase enabling at the resident. The rewriter's entity-selection
// argument over a derived relation,
//
//	π[F = b.G](πT[from begin of b to …](σ[b.N > k ∧ …](B b)))
//
// where B is derived by
//
//	retrieve into B (G = m.G, N = count(s.X by m.G where s.X = m.G … for each D))
//
// (s a traced event relation, m an entity relation joined on its
// identifier, or the group written s.X itself), enables the detail sensor
// for an entity from the instant its count of s's packets in the window
// first exceeds k. Computed at the remote, that instant would be known
// late, and the detail packets between would be lost; so the remote asks
// the resident for a counting trigger (CTrigger with Count = k + 1,
// Period = D; count.go there), which enables the entity in the sensor call
// that makes the count, before it returns.
//
// Why it is exact: the trigger's count of s's packets carrying the entity
// in the inclusive window [t − D, t] is at least the query's count at t
// (its window (t − D, t] is inside; the inner query's other conditions
// only drop tuples; the join with m's identifier gives each packet at
// most one group, the entity's one current tuple; the session receives
// every s tuple the count needs, by α's own soundness). So it reaches k +
// 1 no later than N > k begins, and falls below it no earlier than N > k
// ends. Several residents each count only their own packets, so the count
// is offered only to one resident.
//
// How long the enable lasts. Without While it lasts for the session: a
// superset of the argument whatever its end (α keeps exactly what the
// argument says). With While (a resident with wire.CapCountWhile), only
// while the resident's count is at least k + 1, plus the drain's lag
// (resident/count.go), and the detail sensor's intervals in progress on
// the entity at the disable are still sent their end. That is less than
// the argument, which for an interval detail relation runs from begin of
// b to forever (its end packet is decided at its last chronon); it is
// exact because of where the argument comes from: an interval derived
// relation B (not an event relation, which only the join rules read, and
// which may drop B from the block) is read only by rule
// alpha-entity-select, which keeps b in the block, joined on b.G = the
// flag holder and "b overlap w", under the same σ[N > k …]. So a detail
// tuple contributes to the answer only if it overlaps a span where N > k
// — inside the resident's enabled spans — and such a tuple is sent:
// begun before the span and in progress at its start, or begun within
// it, it ends either while enabled (sent, as any) or after the disable
// (owed its end: in progress then). The tuples not sent overlap no such
// span, and the join drops them. For an event detail relation the
// argument is the spans themselves, and While delivers exactly those
// events plus the lag's, which α drops.
func (c *commander) counting(rel *algebra.Relation, gate *expr.Col, conds []expr.Expr, u *plan.Scan) bool {
	if len(c.states) != 1 || !c.states[0].hello.Has(wire.CapCount) || u.From == nil {
		return false
	}
	ap, ok := c.defs[u.From].(*plan.Apply)
	if !ok || gate.Attr >= len(ap.Targets) {
		return false
	}
	// The gate reads a column of Apply's tuple (pseudo-variable 0): the
	// group's value, when that column holds an aggregate's by value.
	g, ok := ap.Targets[gate.Attr].Expr.(*expr.Col)
	if !ok || g.Var != 0 {
		return false
	}
	for _, cond := range conds {
		j, n, ok := threshold(cond, u.Var, ap)
		if !ok || j >= len(ap.Aggs) || j >= len(ap.Groups) || len(ap.Groups[j]) != 1 || ap.Groups[j][0] != g.Attr {
			continue
		}
		cmd, on, ok := c.countCommand(rel, ap.Aggs[j], n)
		if !ok {
			continue
		}
		cmd.While = !u.Rel.IsEvent() && c.states[0].hello.Has(wire.CapCountWhile)
		c.next++
		cmd.ID = c.next
		c.send(order{cmd: cmd, rel: rel.Name, on: on})
		return true
	}
	return false
}

// threshold recognises b.N > k, b.N ≥ k (or k < b.N, k ≤ b.N) over
// variable v where B's attribute N is aggregate j's value: it returns j
// and the least count that satisfies it.
func threshold(cond expr.Expr, v int, ap *plan.Apply) (j int, n int64, ok bool) {
	b, ok := cond.(*expr.Binary)
	if !ok {
		return 0, 0, false
	}
	op, x, y := b.Op, b.X, b.Y
	if _, isConst := x.(*expr.Const); isConst {
		x, y = y, x
		switch op {
		case expr.OpLt:
			op = expr.OpGt
		case expr.OpLe:
			op = expr.OpGe
		default:
			return 0, 0, false
		}
	}
	col, ok1 := x.(*expr.Col)
	k, ok2 := y.(*expr.Const)
	if !ok1 || !ok2 || col.Var != v || col.Attr >= len(ap.Targets) || k.V.K != algebra.KindInt {
		return 0, 0, false
	}
	agg, ok := ap.Targets[col.Attr].Expr.(*expr.Col)
	if !ok || agg.Var != 1 {
		return 0, 0, false
	}
	switch op {
	case expr.OpGt:
		return agg.Attr, k.V.N + 1, true
	case expr.OpGe:
		return agg.Attr, k.V.N, true
	}
	return 0, 0, false
}

// countCommand builds the counting trigger for γ (count or countU of a
// traced event relation's tuples by one group, the count's value at least
// n) enabling rel's sensor, if γ is of that form, and the relation it
// counts the packets of (its On).
func (c *commander) countCommand(rel *algebra.Relation, g *plan.Aggregate, n int64) (wire.Command, string, bool) {
	var none wire.Command
	if (g.Func != expr.AggCount && g.Func != expr.AggCountU) || g.NBy != 1 || n < 1 || n > 1<<31 {
		return none, "", false
	}
	var period int64
	switch g.Window.Kind {
	case expr.WindowMoving:
		period = g.Window.D
	case expr.WindowInstant:
		period = 1 // the instant itself: [t − 1, t] covers it
	}
	bag, ok := g.In.(*plan.Project)
	if !ok || !bag.Bag || len(bag.Targets) < 1 {
		return none, "", false
	}
	by, ok := bag.Targets[0].Expr.(*expr.Col)
	if !ok {
		return none, "", false
	}
	// Down to the block's leaves, collecting the equalities of its joins
	// and selections.
	var eqs []expr.Expr
	var alpha *plan.Alpha
	var scans []*plan.Scan
	var walk func(n plan.Node) bool
	walk = func(n plan.Node) bool {
		switch x := n.(type) {
		case *plan.ProjectT:
			return walk(x.In)
		case *plan.SelectT:
			return walk(x.In)
		case *plan.Select:
			eqs = append(eqs, expr.Conjuncts(x.Pred)...)
			return walk(x.In)
		case *plan.Join:
			eqs = append(eqs, x.On...)
			return walk(x.L) && walk(x.R)
		case *plan.Product:
			return walk(x.L) && walk(x.R)
		case *plan.Alpha:
			if alpha != nil {
				return false
			}
			alpha = x
			return true
		case *plan.Scan:
			scans = append(scans, x)
			return true
		}
		return false
	}
	if !walk(bag.In) || alpha == nil || alpha.Rel.Class != algebra.ClassEvent ||
		alpha.Rel.Strategy.Kind == algebra.Sampled || len(scans) > 1 {
		return none, "", false
	}
	// The counted attribute: the group itself, or the α attribute equal
	// to the identifier of the one entity relation joined.
	attr := -1
	switch {
	case by.Var == alpha.Var && len(scans) == 0:
		attr = by.Attr
	case len(scans) == 1 && by.Var == scans[0].Var && by.Attr == 0 &&
		scans[0].Rel.Class == algebra.ClassEntity && !scans[0].Rel.Derived:
		for _, e := range eqs {
			b, ok := e.(*expr.Binary)
			if !ok || b.Op != expr.OpEq {
				continue
			}
			l, lok := b.X.(*expr.Col)
			r, rok := b.Y.(*expr.Col)
			if !lok || !rok {
				continue
			}
			if l.Var == by.Var && l.Attr == 0 {
				l, r = r, l
			}
			if l.Var == alpha.Var && r.Var == by.Var && r.Attr == 0 {
				attr = l.Attr
			}
		}
	}
	if attr < 0 || attr >= len(alpha.Rel.Attrs) {
		return none, "", false
	}
	a := alpha.Rel.Attrs[attr]
	if a.Type.Kind != algebra.KindEntity || a.Type.Entity != rel.Attrs[rel.FlagHolder].Type.Entity {
		return none, "", false
	}
	return wire.Command{Kind: wire.CTrigger, Attr: uint16(attr), Count: uint32(n), Period: period}, alpha.Rel.Name, n <= wire.MaxCount
}

// recorder is a wire.Conn that keeps the commands sent to it (Enabling).
type recorder struct {
	hello *wire.Hello
	cmds  []wire.Command
}

func (r *recorder) Hello() *wire.Hello         { return r.hello }
func (r *recorder) Recv() (*wire.Batch, error) { return nil, io.EOF }
func (r *recorder) Send(c *wire.Command) error { r.cmds = append(r.cmds, *c); return nil }
func (r *recorder) Close() error               { return nil }

// Enabling says, for --explain, how residents with these hellos would
// enable each α of the plans in a live run (p's retrieves, in order):
// the commands RunLive's commander sends, in words — or that the sensor
// is widened, enabled for every entity, when the residents cannot compute
// the argument themselves in time. It is keyed by EnablingKey.
func Enabling(p *query.Program, plans []plan.Node, hellos []*wire.Hello) map[string]string {
	out := map[string]string{}
	if len(hellos) == 0 {
		return out
	}
	for _, root := range plans {
		plan.Walk(root, func(n plan.Node) {
			a, ok := n.(*plan.Alpha)
			if !ok || a.Sampled() {
				return
			}
			states := make([]*connState, len(hellos))
			var rec *recorder // the first resident's (they are sent alike)
			for i, h := range hellos {
				r := &recorder{hello: h}
				if i == 0 {
					rec = r
				}
				st := &connState{conn: r, hello: h, ids: map[string]uint16{}, types: map[string]uint16{}}
				for id, name := range h.Sensors {
					st.ids[name] = uint16(id)
				}
				for id, name := range h.Types {
					st.types[name] = uint16(id)
				}
				states[i] = st
			}
			c := &commander{states: states, defs: map[*check.Retrieve]plan.Node{}}
			for i, r := range p.Stmts {
				if i < len(plans) {
					c.defs[r] = plans[i]
				}
			}
			if !c.enable(a.Rel, a.Enable) {
				out[EnablingKey(a)] = fmt.Sprintf("widened: %s enabled for every %s (the argument is computed here, too late to enable by; α keeps what it says)",
					a.Rel.Name, a.Rel.Attrs[a.Rel.FlagHolder].Type.Entity)
				return
			}
			out[EnablingKey(a)] = describeCommands(rec.cmds, hellos[0], a.Rel)
		})
	}
	return out
}

// EnablingKey names an α for Enabling: α operators alike (relation and
// argument) are enabled alike, so a key found on one rewrite of a program
// applies to another.
func EnablingKey(a *plan.Alpha) string { return plan.String(a) }

// describeCommands says what enable commands do, in words.
func describeCommands(cmds []wire.Command, h *wire.Hello, rel *algebra.Relation) string {
	var parts []string
	var consts []string
	name := func(id uint16) string {
		if int(id) < len(h.Sensors) {
			return h.Sensors[id]
		}
		return fmt.Sprint("sensor ", id)
	}
	flag := rel.Attrs[rel.FlagHolder].Type.Entity
	for _, c := range cmds {
		switch {
		case c.Kind == wire.CEnableAll:
			parts = append(parts, fmt.Sprintf("every %s", flag))
		case c.Kind == wire.CEnable:
			consts = append(consts, c.Entity)
		case c.Kind == wire.CTrigger && c.Count != 0:
			window := "ever"
			if c.Period > 0 {
				window = "the last " + time.Duration(c.Period).String()
			}
			span := " on"
			if c.While && c.Period > 0 {
				span = fmt.Sprintf(", while it stays at least %d (disabled by the resident's first drain round, 1 ms, after it falls; intervals in progress then still sent)", c.Count)
			}
			parts = append(parts, fmt.Sprintf("a counting trigger: each %s from the %s call that brings its count of %s packets within %s to %d%s",
				flag, name(c.On), name(c.On), window, c.Count, span))
		case c.Kind == wire.CTrigger && c.While:
			parts = append(parts, fmt.Sprintf("a while trigger: a %s while its %s tuple matches", flag, name(c.On)))
		case c.Kind == wire.CTrigger:
			parts = append(parts, fmt.Sprintf("a trigger: a %s from the %s packet that names it on", flag, name(c.On)))
		}
	}
	if len(consts) > 0 {
		parts = append(parts, strings.Join(consts, ", "))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}
