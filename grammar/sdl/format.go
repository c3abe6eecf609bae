package sdl

import (
	"strconv"
	"strings"
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
