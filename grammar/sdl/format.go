package sdl

import (
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/grammar/internal/front"
)

// FormatStmt renders a statement as canonical SDL text on one line that
// parses back to the same statement: keywords in lower case, `Name: Type
// role` attributes separated by ", ", the strategy after the attribute
// list.
func FormatStmt(s Stmt) string {
	var b strings.Builder
	switch x := s.(type) {
	case *EntityTypeDecl:
		b.WriteString("entity type ")
		for i, n := range x.Names {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(identName(n))
		}
	case *RelationDecl:
		b.WriteString(x.Class.String())
		b.WriteString(" relation ")
		b.WriteString(identName(x.Name))
		b.WriteByte('(')
		for i, a := range x.Attrs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(formatAttr(a))
		}
		b.WriteByte(')')
		if st := x.Strategy; st != nil {
			b.WriteByte(' ')
			b.WriteString(st.Kind.String())
			b.WriteString(" on ")
			b.WriteString(st.On.String())
			if st.Counter != 0 {
				b.WriteString(" counter ")
				b.WriteString(strconv.FormatInt(st.Counter, 10))
			}
		}
	case *ClockDecl:
		b.WriteString("clock ")
		b.WriteString(x.Text)
	case *SensorDecl:
		b.WriteString("sensor ")
		b.WriteString(identName(x.Name))
		if x.To == nil {
			b.WriteString(" at ")
			formatClause(&b, x.From)
		} else {
			b.WriteString(" from ")
			formatClause(&b, x.From)
			b.WriteString(" to ")
			formatClause(&b, x.To)
		}
	default:
		return "<?>"
	}
	return b.String()
}

func formatAttr(a *Attr) string {
	if a == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(identName(a.Name))
	b.WriteString(": ")
	switch {
	case a.Type == nil:
		b.WriteString("<nil>")
	case a.Type.Name == "enum":
		b.WriteString("enum(")
		for i, m := range a.Type.Enum {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(identName(m))
		}
		b.WriteByte(')')
	default:
		b.WriteString(a.Type.Name)
	}
	if a.Role != RoleNone {
		b.WriteByte(' ')
		b.WriteString(a.Role.String())
	}
	return b.String()
}

func identName(x *Ident) string {
	if x == nil {
		return "<nil>"
	}
	return x.Name
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

func formatClause(b *strings.Builder, c *ProbeClause) {
	if c == nil || c.Probe == nil {
		b.WriteString("<nil>")
		return
	}
	p := c.Probe
	b.WriteString(p.Kind.String())
	b.WriteByte(' ')
	if p.Kind == ProbeTracepoint {
		b.WriteString(identName(p.Group))
		b.WriteByte(':')
		b.WriteString(identName(p.Event))
	} else {
		b.WriteString(front.Quote(p.Path))
		b.WriteByte(' ')
		b.WriteString(front.Quote(p.Symbol))
	}
	if len(c.Binds) > 0 {
		b.WriteString(" (")
		for i, x := range c.Binds {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(identName(x.Name))
			b.WriteString(" = ")
			b.WriteString(FormatBExpr(x.Value))
		}
		b.WriteByte(')')
	}
	if c.Key != nil {
		b.WriteString(" key ")
		b.WriteString(FormatBExpr(c.Key))
	}
	for i, cond := range c.Conds {
		if i == 0 {
			b.WriteString(" when ")
		} else {
			b.WriteString(" and ")
		}
		b.WriteString(FormatBExpr(cond.X))
		b.WriteByte(' ')
		b.WriteString(cond.Op.String())
		b.WriteByte(' ')
		if cond.Op == CondIn {
			b.WriteByte('(')
		}
		for j, v := range cond.Values {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Text)
		}
		if cond.Op == CondIn {
			b.WriteByte(')')
		}
	}
}

// FormatBExpr renders a binding value as written canonically.
func FormatBExpr(x BExpr) string {
	switch e := x.(type) {
	case *BRef:
		parts := make([]string, len(e.Path))
		for i, p := range e.Path {
			parts[i] = identName(p)
		}
		return strings.Join(parts, ".")
	case *BCall:
		return identName(e.Func) + "(" + FormatBExpr(e.Arg) + ")"
	case *BNum:
		return e.Text
	case *BMask:
		return FormatBExpr(e.X) + " & " + e.Mask.Text
	}
	return "<nil>"
}
