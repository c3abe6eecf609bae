package tquel

import (
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/grammar/internal/front"
)

// Binding levels of the expression grammar, loosest first (see TQuel.g4).
const (
	levelOr      = 1
	levelAnd     = 2
	levelNot     = 3 // prefix not
	levelCmp     = 4 // = != < <= > >= precede equal (non-associative)
	levelOverlap = 5 // overlap extend
	levelAdd     = 6
	levelMul     = 7
	levelNeg     = 8 // prefix -
	levelTimeOf  = 9 // prefix begin of / end of
	levelAtom    = 10

	// noOpen: no prefix operator is open at the right end of the text.
	noOpen = 100
)

// binaryLevel is the binding level of an infix operator.
func binaryLevel(op Op) int {
	switch op {
	case OpOr:
		return levelOr
	case OpAnd:
		return levelAnd
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpPrecede, OpEqual:
		return levelCmp
	case OpOverlap, OpExtend:
		return levelOverlap
	case OpAdd, OpSub:
		return levelAdd
	case OpMul, OpDiv, OpMod:
		return levelMul
	}
	return levelAtom
}

// FormatExpr renders an expression as canonical TQuel text that parses back
// to the same tree: keywords in lower case, single spaces around infix
// operators, and parentheses only where the tree needs them (a Paren node is
// always printed as parentheses, so text produced by Parse keeps its own).
func FormatExpr(e Expr) string {
	s, _, _ := formatExpr(e)
	return s
}

// formatExpr returns the text of e, the binding level of its outermost
// construct (levelAtom for primaries and prefix operators, which may stand
// as the operand of anything), and the loosest level of a prefix operator
// left open at its right end: such an operator would swallow an infix
// operator of that level or tighter written after the text.
func formatExpr(e Expr) (text string, level, open int) {
	switch x := e.(type) {
	case nil:
		return "<nil>", levelAtom, noOpen
	case *Ident:
		return identName(x), levelAtom, noOpen
	case *AttrRef:
		if x.All {
			return identName(x.Var) + ".all", levelAtom, noOpen
		}
		return identName(x.Var) + "." + identName(x.Attr), levelAtom, noOpen
	case *NumberLit:
		return x.Text, levelAtom, noOpen
	case *StringLit:
		return front.Quote(x.Value), levelAtom, noOpen
	case *DurationLit:
		return x.Text, levelAtom, noOpen
	case *ParamRef:
		return "$" + x.Name, levelAtom, noOpen
	case *Paren:
		return "(" + FormatExpr(x.X) + ")", levelAtom, noOpen
	case *Aggregate:
		return formatAggregate(x), levelAtom, noOpen
	case *Unary:
		return formatPrefix("-", levelNeg, x.X)
	case *Not:
		return formatPrefix("not ", levelNot, x.X)
	case *TimeOf:
		return formatPrefix(x.Op.String()+" ", levelTimeOf, x.X)
	case *TemporalUnary:
		return formatPrefix(x.Op.String()+" ", levelTimeOf, x.X)
	case *Binary:
		return formatBinary(x.Op, x.X, x.Y)
	case *TemporalBinary:
		return formatBinary(x.Op, x.X, x.Y)
	}
	return "<?>", levelAtom, noOpen
}

func identName(x *Ident) string {
	if x == nil {
		return "<nil>"
	}
	return x.Name
}

// formatPrefix renders a prefix operator of the given level: its operand is
// parsed at that level, so a looser infix operation needs parentheses.
func formatPrefix(op string, level int, x Expr) (string, int, int) {
	s, l, o := formatExpr(x)
	if l < level {
		s, o = "("+s+")", noOpen
	}
	if op == "-" && strings.HasPrefix(s, "-") {
		s = " " + s // "--" would start a comment
	}
	return op + s, levelAtom, min(level, o)
}

// formatBinary renders an infix operation. Operators are left-associative
// except comparisons, which do not chain.
func formatBinary(op Op, x, y Expr) (string, int, int) {
	level := binaryLevel(op)
	ls, ll, lo := formatExpr(x)
	if ll < level || (level == levelCmp && ll == level) || lo <= level {
		ls = "(" + ls + ")"
	}
	rs, rl, ro := formatExpr(y)
	if rl <= level {
		rs, ro = "("+rs+")", noOpen
	}
	return ls + " " + op.String() + " " + rs, level, ro
}

func formatAggregate(a *Aggregate) string {
	var b strings.Builder
	b.WriteString(a.Func.String())
	b.WriteByte('(')
	b.WriteString(FormatExpr(a.Arg))
	if a.Param != nil {
		b.WriteString(", ")
		b.WriteString(FormatExpr(a.Param))
	}
	for i, e := range a.By {
		if i == 0 {
			b.WriteString(" by ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(FormatExpr(e))
	}
	if a.Window.At.IsValid() || a.Window.Kind != WindowInstant {
		switch a.Window.Kind {
		case WindowInstant:
			b.WriteString(" for each instant")
		case WindowEver:
			b.WriteString(" for ever")
		case WindowMoving:
			b.WriteString(" for each ")
			if a.Window.Size != nil {
				b.WriteString(a.Window.Size.Text)
			} else {
				b.WriteString("<nil>")
			}
		}
	}
	if a.Where != nil {
		b.WriteString(" where ")
		b.WriteString(FormatExpr(a.Where))
	}
	if a.When != nil {
		b.WriteString(" when ")
		b.WriteString(FormatExpr(a.When))
	}
	b.WriteByte(')')
	return b.String()
}

// FormatStmt renders a statement as canonical TQuel text on one line that
// parses back to the same statement: `range of V is R[N]`, or `retrieve`
// with its targets (Name = Expr) and its clauses in the order valid, where,
// when, as of.
func FormatStmt(s Stmt) string {
	var b strings.Builder
	switch x := s.(type) {
	case *RangeStmt:
		b.WriteString("range of ")
		b.WriteString(identName(x.Var))
		b.WriteString(" is ")
		b.WriteString(identName(x.Rel))
		if x.Index != nil {
			b.WriteString("[" + strconv.FormatInt(x.Index.Value, 10) + "]")
		}
	case *RetrieveStmt:
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
			b.WriteString(FormatTarget(t))
		}
		b.WriteByte(')')
		if v := x.Valid; v != nil {
			if v.At != nil {
				b.WriteString(" valid at " + FormatExpr(v.At))
			} else {
				b.WriteString(" valid from " + FormatExpr(v.From) + " to " + FormatExpr(v.To))
			}
		}
		if x.Where != nil {
			b.WriteString(" where " + FormatExpr(x.Where))
		}
		if x.When != nil {
			b.WriteString(" when " + FormatExpr(x.When))
		}
		if x.AsOf != nil {
			b.WriteString(" as of " + FormatExpr(x.AsOf.At))
		}
	default:
		return "<?>"
	}
	return b.String()
}

// FormatTarget renders one element of a target list: `Name = Expr`, or the
// expression alone for `Var.Attr` and `Var.all`.
func FormatTarget(t *Target) string {
	if t == nil {
		return "<nil>"
	}
	if t.Name != nil {
		return t.Name.Name + " = " + FormatExpr(t.Expr)
	}
	return FormatExpr(t.Expr)
}

// FormatFile renders every statement of f, one per line.
func FormatFile(f *File) string {
	var b strings.Builder
	for _, s := range f.Stmts {
		b.WriteString(FormatStmt(s))
		b.WriteByte('\n')
	}
	return b.String()
}
