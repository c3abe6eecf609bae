package tquel

import (
	"fmt"
	"strings"

	"github.com/tqmon/tqmon/grammar/internal/front"
)

// dump renders an expression as a fully parenthesised S-expression naming
// every node, so tests can assert the exact tree shape:
//
//	(and (= p.Process r.Process) (= p.State "Running"))
//
// Node kinds that share an operator are told apart: TimeOf is
// "(timeof begin of X)" and TemporalUnary "(begin of X)"; Paren is "paren",
// unary minus "neg"; a float NumberLit has an "f" suffix.
func dump(e Expr) string {
	switch x := e.(type) {
	case nil:
		return "<nil>"
	case *Ident:
		return x.Name
	case *AttrRef:
		if x.All {
			return x.Var.Name + ".all"
		}
		return x.Var.Name + "." + x.Attr.Name
	case *NumberLit:
		if x.Float {
			return x.Text + "f"
		}
		return x.Text
	case *StringLit:
		return front.Quote(x.Value)
	case *DurationLit:
		return fmt.Sprintf("%s=%dns", x.Text, x.NS)
	case *ParamRef:
		return "$" + x.Name
	case *Paren:
		return "(paren " + dump(x.X) + ")"
	case *Unary:
		return "(neg " + dump(x.X) + ")"
	case *Not:
		return "(not " + dump(x.X) + ")"
	case *TimeOf:
		return "(timeof " + x.Op.String() + " " + dump(x.X) + ")"
	case *TemporalUnary:
		return "(" + x.Op.String() + " " + dump(x.X) + ")"
	case *Binary:
		return "(" + x.Op.String() + " " + dump(x.X) + " " + dump(x.Y) + ")"
	case *TemporalBinary:
		return "(" + x.Op.String() + " " + dump(x.X) + " " + dump(x.Y) + ")"
	case *Aggregate:
		var b strings.Builder
		b.WriteString("(" + x.Func.String() + " " + dump(x.Arg))
		if x.Param != nil {
			b.WriteString(" param:" + dump(x.Param))
		}
		for _, e := range x.By {
			b.WriteString(" by:" + dump(e))
		}
		switch x.Window.Kind {
		case WindowEver:
			b.WriteString(" ever")
		case WindowMoving:
			b.WriteString(" each:" + dump(x.Window.Size))
		default:
			if x.Window.At.IsValid() {
				b.WriteString(" instant")
			}
		}
		if x.Where != nil {
			b.WriteString(" where:" + dump(x.Where))
		}
		if x.When != nil {
			b.WriteString(" when:" + dump(x.When))
		}
		return b.String() + ")"
	}
	return fmt.Sprintf("<%T>", e)
}

// dumpStmt renders a statement with dump for its expressions.
func dumpStmt(s Stmt) string {
	switch x := s.(type) {
	case *RangeStmt:
		out := "range " + x.Var.Name + " " + x.Rel.Name
		if x.Index != nil {
			out += fmt.Sprintf("[%d]", x.Index.Value)
		}
		return out
	case *RetrieveStmt:
		var b strings.Builder
		b.WriteString("retrieve")
		if x.Into {
			b.WriteString(" into")
		}
		if x.Name != nil {
			b.WriteString(" " + x.Name.Name)
		}
		if x.Unique {
			b.WriteString(" unique")
		}
		b.WriteString(" (")
		for i, t := range x.Targets {
			if i > 0 {
				b.WriteString(", ")
			}
			if t.Name != nil {
				b.WriteString(t.Name.Name + "=")
			}
			b.WriteString(dump(t.Expr))
		}
		b.WriteString(")")
		if x.Valid != nil {
			if x.Valid.At != nil {
				b.WriteString(" valid-at:" + dump(x.Valid.At))
			} else {
				b.WriteString(" valid-from:" + dump(x.Valid.From) + " to:" + dump(x.Valid.To))
			}
		}
		if x.Where != nil {
			b.WriteString(" where:" + dump(x.Where))
		}
		if x.When != nil {
			b.WriteString(" when:" + dump(x.When))
		}
		if x.AsOf != nil {
			b.WriteString(" as-of:" + dump(x.AsOf.At))
		}
		return b.String()
	}
	return fmt.Sprintf("<%T>", s)
}

// checkTree reports the first nil where the AST promises a node, or "".
func checkTree(f *File) string {
	var bad string
	var expr func(e Expr)
	expr = func(e Expr) {
		if bad != "" {
			return
		}
		switch x := e.(type) {
		case nil:
			bad = "nil expression"
		case *Ident:
			if x.Name == "" || !x.At.IsValid() {
				bad = "empty ident"
			}
		case *AttrRef:
			if x.Var == nil || (x.Attr == nil) != x.All {
				bad = "bad AttrRef"
			}
		case *Paren:
			expr(x.X)
		case *Unary:
			expr(x.X)
		case *Not:
			expr(x.X)
		case *TimeOf:
			expr(x.X)
		case *TemporalUnary:
			expr(x.X)
		case *Binary:
			if !x.OpPos.IsValid() {
				bad = "binary without OpPos"
			}
			expr(x.X)
			expr(x.Y)
		case *TemporalBinary:
			expr(x.X)
			expr(x.Y)
		case *Aggregate:
			if x.Func == AggInvalid {
				bad = "aggregate without function"
			}
			expr(x.Arg)
			for _, b := range x.By {
				expr(b)
			}
			if x.Window.Kind == WindowMoving && x.Window.Size == nil {
				bad = "moving window without size"
			}
			if x.Where != nil {
				expr(x.Where)
			}
			if x.When != nil {
				expr(x.When)
			}
		}
	}
	for _, s := range f.Stmts {
		switch x := s.(type) {
		case *RangeStmt:
			if x.Var == nil || x.Rel == nil {
				return "range without names"
			}
		case *RetrieveStmt:
			if len(x.Targets) == 0 {
				return "retrieve without targets"
			}
			if x.Into && x.Name == nil {
				return "into without name"
			}
			for _, t := range x.Targets {
				if t == nil {
					return "nil target"
				}
				expr(t.Expr)
			}
			if x.Valid != nil {
				if x.Valid.At != nil {
					expr(x.Valid.At)
				} else {
					expr(x.Valid.From)
					expr(x.Valid.To)
				}
			}
			if x.Where != nil {
				expr(x.Where)
			}
			if x.When != nil {
				expr(x.When)
			}
			if x.AsOf != nil {
				expr(x.AsOf.At)
			}
		default:
			return fmt.Sprintf("statement %T", s)
		}
	}
	return bad
}
