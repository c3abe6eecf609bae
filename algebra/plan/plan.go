package plan

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/expr"
)

// Node is an operator of the logical algebra. The set is closed: only this
// package's types implement it.
type Node interface {
	// Children are the operator's inputs, left to right.
	Children() []Node
	// Label is the operator with its parameters, e.g. `σ[S.Process = "P1"]`.
	Label() string
	node()
}

// Scan reads a relation bound to a range variable: a primitive relation of
// the catalog (from a history, a store or a live subject), a relation derived
// by an earlier retrieve, or the built-in Clock[n].
type Scan struct {
	Var     int    // the variable's index in its retrieve
	VarName string // the variable's name
	Rel     *algebra.Relation
	// From is the retrieve that derives Rel, for derived relations.
	From *check.Retrieve
	// Window, when set, promises that only tuples valid somewhere in it
	// (inclusive) can contribute to the result; the rewriter's scan rules
	// derive it from the when clause, and a store reads just those. It
	// never changes a result: a reader may deliver more.
	Window *algebra.Window
	// Exists marks the variable existential in its block: the checker
	// found that nothing the result is made of reads it
	// (check.Retrieve.Exists), so a binding of the other variables needs
	// one witness of it, not each. Rules that move a leaf into a block of
	// its own clear it there.
	Exists bool
}

// Unit is the relation holding one empty tuple valid over all time: the
// product of no relations (a retrieve without range variables).
type Unit struct{}

// Product is L × R: every pair of tuples, keeping both valid times.
// Overlap marks the ordered overlap variant (the paper's ×₁): the block
// only keeps pairs that overlap and its inputs arrive in time order, so a
// stored tuple can be dropped as soon as it has ended.
type Product struct {
	L, R    Node
	Overlap bool
	// Semi makes it the semi-join L ⋉ R: R's variables are existential in
	// the block (no target and no valid clause mentions them), so a
	// binding of L's variables needs one witness in R, not every one: the
	// block keeps, per binding of the other variables, whether a witness
	// satisfies the where and when conjuncts, and makes one result of it.
	Semi bool
}

// Join is L ⋈[On] R: the product restricted to pairs whose attributes are
// equal as On says (each an equality between an attribute of L and one of R).
type Join struct {
	L, R    Node
	On      []expr.Expr
	Overlap bool // the ordered overlap variant, as for Product
	Semi    bool // the semi-join L ⋉ R, as for Product
}

// Select is σ[Pred](In): the tuples whose values satisfy Pred.
type Select struct {
	Pred expr.Expr
	In   Node
}

// SelectT is σT[Pred](In): the tuples whose valid times satisfy Pred.
type SelectT struct {
	Pred expr.Pred
	In   Node
}

// ProjectT is πT[Valid](In): computes each tuple's valid time from the valid
// times it combines, dropping tuples whose valid time is empty.
type ProjectT struct {
	Valid *expr.Valid
	In    Node
}

// Project is π[Targets](In): computes the result's attributes; the result is
// a set, coalesced — unless Bag, which keeps one tuple per binding (an
// aggregate's inner query, where every binding counts).
type Project struct {
	Targets []check.Target
	In      Node
	Bag     bool
}

// SetOp is L ∩ R or L ∪ R over entity relations (one identifier attribute):
// an identifier is in the intersection while it is in both, in the union
// while it is in either.
type SetOp struct {
	Union bool
	L, R  Node
}

func (n *Scan) Children() []Node     { return nil }
func (n *Unit) Children() []Node     { return nil }
func (n *Product) Children() []Node  { return []Node{n.L, n.R} }
func (n *Join) Children() []Node     { return []Node{n.L, n.R} }
func (n *Select) Children() []Node   { return []Node{n.In} }
func (n *SelectT) Children() []Node  { return []Node{n.In} }
func (n *ProjectT) Children() []Node { return []Node{n.In} }
func (n *Project) Children() []Node  { return []Node{n.In} }
func (n *SetOp) Children() []Node    { return []Node{n.L, n.R} }

func (*Scan) node()     {}
func (*Unit) node()     {}
func (*Product) node()  {}
func (*Join) node()     {}
func (*Select) node()   {}
func (*SelectT) node()  {}
func (*ProjectT) node() {}
func (*Project) node()  {}
func (*SetOp) node()    {}

func (n *Scan) Label() string {
	l := n.Rel.Name
	if n.VarName != "" {
		l += " " + n.VarName
	}
	if n.Window != nil {
		l += " " + WindowLabel(*n.Window)
	}
	return l
}
func (*Unit) Label() string { return "unit" }
func (n *Product) Label() string {
	op := "×"
	if n.Semi {
		op = "⋉"
	}
	if n.Overlap {
		return op + "ₒ"
	}
	return op
}
func (n *Join) Label() string {
	op := "⋈"
	if n.Semi {
		op = "⋉"
	}
	if n.Overlap {
		op += "ₒ"
	}
	return op + "[" + exprList(n.On, " and ") + "]"
}
func (n *Select) Label() string {
	return "σ[" + n.Pred.String() + "]"
}
func (n *SelectT) Label() string { return "σT[" + n.Pred.String() + "]" }
func (n *ProjectT) Label() string {
	return "πT[" + strings.TrimPrefix(n.Valid.String(), "valid ") + "]"
}
func (n *Project) Label() string {
	parts := make([]string, len(n.Targets))
	for i, t := range n.Targets {
		parts[i] = t.Name + " = " + t.Expr.String()
	}
	if n.Bag {
		return "πbag[" + strings.Join(parts, ", ") + "]"
	}
	return "π[" + strings.Join(parts, ", ") + "]"
}
func (n *SetOp) Label() string {
	if n.Union {
		return "∪"
	}
	return "∩"
}

func exprList(es []expr.Expr, sep string) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, sep)
}

// Translate builds the paper's initial algebra for a checked retrieve:
//
//	π[targets](πT[valid](σT[when](σ[where](R1 × … × Rk))))
//
// with σ omitted when there is no where clause and σT omitted when the when
// clause is trivially true. A retrieve with aggregates gets an apply over
// that block and the aggregates' own plans (translateAggs). Each scan
// carries the checker's existential mark (Scan.Exists).
func Translate(r *check.Retrieve) Node {
	if len(r.Aggs) > 0 {
		return translateAggs(r)
	}
	return translateBlock(r, r.Targets, r.Where)
}

// translateBlock builds r's block with the given targets and where clause
// (an aggregate's outer block has its own).
func translateBlock(r *check.Retrieve, targets []check.Target, where expr.Expr) Node {
	var n Node
	for i, v := range r.Vars {
		s := &Scan{Var: i, VarName: v.Name, Rel: v.Rel, From: v.From, Exists: r.Exists != nil && r.Exists[i]}
		if n == nil {
			n = s
		} else {
			n = &Product{L: n, R: s}
		}
	}
	if n == nil {
		n = &Unit{}
	}
	if where != nil {
		n = &Select{Pred: where, In: n}
	}
	if _, trivial := r.When.(*expr.PTrue); !trivial {
		n = &SelectT{Pred: r.When, In: n}
	}
	n = &ProjectT{Valid: r.Valid, In: n}
	return &Project{Targets: targets, In: n, Bag: r.Bag}
}

// String prints a plan on one line, e.g.
//
//	π[Process = W.Process](πT[at end of W](σT[S precede end of W](SendMessage S × Waiting W)))
func String(n Node) string {
	var b strings.Builder
	writeLine(&b, n, false)
	return b.String()
}

func writeLine(b *strings.Builder, n Node, nested bool) {
	switch n := n.(type) {
	case *Product, *Join, *SetOp:
		kids := n.Children()
		if nested {
			b.WriteByte('(')
		}
		// Left-associative: a left operand with the same operator needs no
		// parentheses.
		writeLine(b, kids[0], kids[0].Label() != n.Label())
		b.WriteString(" " + n.Label() + " ")
		writeLine(b, kids[1], true)
		if nested {
			b.WriteByte(')')
		}
	default:
		if len(n.Children()) == 0 {
			b.WriteString(n.Label())
			return
		}
		b.WriteString(n.Label())
		b.WriteByte('(')
		for i, c := range n.Children() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeLine(b, c, false)
		}
		b.WriteByte(')')
	}
}

// Tree prints a plan as an indented tree, one operator per line.
func Tree(n Node) string {
	var b strings.Builder
	b.WriteString(n.Label())
	b.WriteByte('\n')
	writeTree(&b, n, "")
	return b.String()
}

func writeTree(b *strings.Builder, n Node, indent string) {
	kids := n.Children()
	for i, c := range kids {
		last := i == len(kids)-1
		branch, cont := "├── ", "│   "
		if last {
			branch, cont = "└── ", "    "
		}
		fmt.Fprintf(b, "%s%s%s\n", indent, branch, c.Label())
		writeTree(b, c, indent+cont)
	}
}

// Walk calls fn for n and every node below it, parents first.
func Walk(n Node, fn func(Node)) {
	fn(n)
	for _, c := range n.Children() {
		Walk(c, fn)
	}
}
