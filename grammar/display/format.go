package display

import (
	"strconv"
	"strings"

	"github.com/tqmon/tqmon/grammar/internal/front"
)

// FormatStmt renders a statement as canonical display-spec text on one
// line that parses back to the same statement: keywords in lower case,
// `colour` spelt so, `asc` and default values left out.
func FormatStmt(s Stmt) string {
	var b strings.Builder
	switch x := s.(type) {
	case *DisplayStmt:
		b.WriteString("display ")
		b.WriteString(identName(x.Rel))
		b.WriteString(" as ")
		b.WriteString(FormatRep(x.Rep))
		for _, a := range x.Aspects {
			b.WriteByte(' ')
			b.WriteString(FormatAspect(a))
		}
	case *TimeStmt:
		b.WriteString("time ")
		if x.Trace {
			b.WriteString("animationtrace")
		} else {
			b.WriteString("animation")
		}
		if x.Decay != nil {
			b.WriteString(" decay ")
			b.WriteString(x.Decay.Text)
		}
	case *ShowStmt:
		b.WriteString("show ")
		b.WriteString(x.What.String())
	default:
		return "<?>"
	}
	return b.String()
}

// FormatRep renders a representation.
func FormatRep(r Rep) string {
	switch x := r.(type) {
	case *IconRep:
		return x.Shape.String()
	case *LinkRep:
		if x.Kind == Inside {
			return "inside (" + identName(x.From) + ", " + identName(x.To) + ")"
		}
		return x.Kind.String() + " from " + identName(x.From) + " to " + identName(x.To)
	case *FlashRep:
		if x.Blink {
			return "blink " + identName(x.Attr)
		}
		return "flash " + identName(x.Attr)
	case *PlotRep:
		return "plot " + identName(x.Attr)
	}
	return "<?>"
}

// FormatAspect renders an aspect.
func FormatAspect(a Aspect) string {
	var b strings.Builder
	switch x := a.(type) {
	case *LabelAspect:
		b.WriteString("label " + identName(x.Attr))
	case *ShadeAspect:
		b.WriteString("shade " + identName(x.Attr))
		if x.Map != nil {
			b.WriteString(" (")
			for i, e := range x.Map {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(formatKey(e.Key) + " = " + strconv.Itoa(e.Percent) + "%")
			}
			b.WriteByte(')')
		}
	case *ColourAspect:
		b.WriteString("colour " + identName(x.Attr))
		if x.Map != nil {
			b.WriteString(" (")
			for i, e := range x.Map {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(formatKey(e.Key) + " = " + identName(e.Colour))
			}
			b.WriteByte(')')
		}
	case *OrderAspect:
		b.WriteString("order by " + identName(x.Attr))
		if x.Desc {
			b.WriteString(" desc")
		}
	case *AtAspect:
		b.WriteString("at " + x.Side.String())
	case *ForAspect:
		if x.Dur == nil {
			return "for <nil>"
		}
		b.WriteString("for " + x.Dur.Text)
	default:
		return "<?>"
	}
	return b.String()
}

func formatKey(k *Key) string {
	if k == nil {
		return "<nil>"
	}
	if k.Kind == KeyString {
		return front.Quote(k.Text)
	}
	return k.Text
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
