package plan

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Aggregate is γ[f(arg by b1…bm, window)](In): the time-varying value of
// an aggregate for each group. In is the aggregate's inner query, a bag
// whose tuples are (b1, …, bm, arg): every one of them contributes, at
// each chronon its window says, to its group's value. The output is, per
// group, the maximal intervals over which the value is constant (for
// count, countU and any also where nothing contributes: 0 or false); only
// Apply consumes it.
type Aggregate struct {
	Func   expr.AggFunc
	Param  *big.Rat // percentile's p, histogram's width; nil for the others
	Window expr.Window
	NBy    int
	T      algebra.Type
	Text   string // the aggregate as written
	In     Node
}

// Apply is apply[targets; where](In, γ1, …, γn): it evaluates the targets
// and the where conjuncts that mention aggregates over the tuples of In
// (the query's block without them), each at every chronon of the tuple's
// valid time, with the values the aggregates have then for the groups
// the tuple picks; it splits a tuple where those values change and drops
// the chronons where the where clause fails or an aggregate has no value.
//
// Targets and Pred are over two pseudo-variables: 0 is In's tuple (its
// columns), 1 the aggregate values (column j is γj's). Groups[j] lists the
// columns of In that hold γj's by-list values.
type Apply struct {
	Targets []check.Target
	Pred    expr.Expr // nil when every where conjunct is in In
	Groups  [][]int
	In      Node
	Aggs    []*Aggregate
	// Bag keeps one output tuple per input tuple and value piece (an
	// aggregate's inner query); otherwise the output is coalesced.
	Bag bool
}

func (n *Aggregate) Children() []Node { return []Node{n.In} }
func (n *Apply) Children() []Node {
	kids := []Node{n.In}
	for _, a := range n.Aggs {
		kids = append(kids, a)
	}
	return kids
}
func (*Aggregate) node() {}
func (*Apply) node()     {}

func (n *Aggregate) Label() string { return "γ[" + n.Text + "]" }
func (n *Apply) Label() string {
	parts := make([]string, len(n.Targets))
	for i, t := range n.Targets {
		parts[i] = t.Name + " = " + t.Expr.String()
	}
	l := "apply"
	if n.Bag {
		l += "bag"
	}
	l += "[" + strings.Join(parts, ", ")
	if n.Pred != nil {
		l += "; where " + n.Pred.String()
	}
	return l + "]"
}

// translateAggs builds the plan of a retrieve with aggregates:
//
//	apply[targets; where with aggregates](block, γ1(inner1), …, γn(innern))
//
// The block is the retrieve without its aggregates: its variables (the by
// lists' among them), the where conjuncts without aggregates, when and
// valid; its targets are the columns apply needs — the targets without
// aggregates, the variables' attributes and times the others use, and each
// aggregate's by-list values.
func translateAggs(r *check.Retrieve) Node {
	var cols []check.Target
	colIdx := map[string]int{}
	col := func(e expr.Expr) int {
		k := expr.Key(e)
		if i, ok := colIdx[k]; ok {
			return i
		}
		colIdx[k] = len(cols)
		cols = append(cols, check.Target{Name: "c" + strconv.Itoa(len(cols)+1), Expr: e, Pos: e.Pos()})
		return len(cols) - 1
	}
	ref := func(e expr.Expr) expr.Expr {
		i := col(e)
		return &expr.Col{Var: 0, Attr: i, T: e.Type(), AttrName: e.String(), At: e.Pos()}
	}
	lift := func(e expr.Expr) expr.Expr {
		return expr.ReplaceLeaves(e, func(x expr.Expr) expr.Expr {
			switch x := x.(type) {
			case *expr.Col, *expr.TimeOf:
				return ref(x)
			case *expr.AggRef:
				return &expr.Col{Var: 1, Attr: x.Index, T: x.T, AttrName: x.Txt, At: x.At}
			}
			return nil
		})
	}
	ap := &Apply{Bag: r.Bag}
	for _, t := range r.Targets {
		e := t.Expr
		if expr.HasAgg(e) {
			e = lift(e)
		} else {
			e = ref(e)
		}
		ap.Targets = append(ap.Targets, check.Target{Name: t.Name, Expr: e, Pos: t.Pos})
	}
	var plain, withAgg []expr.Expr
	for _, c := range expr.Conjuncts(r.Where) {
		if expr.HasAgg(c) {
			withAgg = append(withAgg, lift(c))
		} else {
			plain = append(plain, c)
		}
	}
	ap.Pred = expr.And(withAgg)
	for _, g := range r.Aggs {
		var group []int
		for _, b := range g.By {
			group = append(group, col(b))
		}
		ap.Groups = append(ap.Groups, group)
		ap.Aggs = append(ap.Aggs, &Aggregate{Func: g.Func, Param: g.Param, Window: g.Window, NBy: len(g.By), T: g.T, Text: g.Text,
			In: Translate(g.Inner)})
	}
	ap.In = translateBlock(r, cols, expr.And(plain))
	return ap
}
