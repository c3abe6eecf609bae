package sdl

import (
	"strconv"
	"strings"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/sdl/gen"
	"github.com/tqmon/tqmon/grammar/source"
)

// Parse parses a sensor-description text. name is the file name used in
// diagnostics.
//
// On failure Parse returns a nil File and a source.ErrorList holding every
// problem found (at most about twenty), sorted by position, each as
// "name:line:col: message" with 1-based lines and rune columns.
func Parse(name, text string) (*File, error) {
	return front.Parse(&language, name, text)
}

// language wires SDL's generated lexer and parser, its error messages and
// its converter into the shared harness.
var language = front.Language[*gen.SDLParser, File]{
	NewLexer:  func(in antlr.CharStream) antlr.Lexer { return gen.NewSDLLexer(in) },
	NewParser: gen.NewSDLParser,
	Literals: front.Literals{
		ErrorChar: gen.SDLLexerERROR_CHAR,
		Number:    gen.SDLLexerNUMBER,
		Duration:  gen.SDLLexerDURATION,
		String:    gen.SDLLexerSTRING,
	},
	// The grammar itself nests at most two levels; the bound only keeps
	// error recovery on hostile input cheap.
	Nesting: front.Nesting{
		Open:  front.NewTokenSet(gen.SDLLexerLPAREN),
		Close: front.NewTokenSet(gen.SDLLexerRPAREN),
		What:  "parentheses",
	},
	Syntax:   syntax,
	Recovery: recovery,
	Convert: func(p *gen.SDLParser, in *front.Input) *File {
		c := &converter{d: in.Diag, lits: in.Lits}
		return c.spec(in.Src, p.Spec())
	},
}

// ---------------------------------------------------------------- converter

// converter walks the ANTLR parse tree and builds the AST. It tolerates the
// partial trees that error recovery leaves (nil children, conjured tokens)
// and checks the values the grammar cannot: counters and clock periods.
type converter struct {
	d    *front.Diag
	lits map[int]front.Lit
}

func (c *converter) name(ctx gen.INameContext) *Ident {
	if ctx == nil {
		return nil
	}
	t := front.OneToken(ctx)
	if front.Missing(t) {
		return nil
	}
	return &Ident{At: front.TokPos(t), Name: t.GetText()}
}

func (c *converter) spec(src *source.File, ctx gen.ISpecContext) *File {
	f := &File{Name: src.Name(), Src: src}
	if ctx == nil {
		return f
	}
	for _, s := range ctx.AllStmt() {
		if st := c.stmt(s); st != nil {
			f.Stmts = append(f.Stmts, st)
		}
	}
	return f
}

func (c *converter) stmt(ctx gen.IStmtContext) Stmt {
	switch s := ctx.(type) {
	case *gen.EntityStmtContext:
		kw := front.TermTok(s.ENTITY())
		if s.TYPE() == nil {
			return c.relation(kw, ClassEntity, s.Relation())
		}
		decl := &EntityTypeDecl{At: front.TokPos(kw)}
		for _, n := range s.AllName() {
			id := c.name(n)
			if id == nil {
				return nil
			}
			decl.Names = append(decl.Names, id)
		}
		if len(decl.Names) == 0 {
			return nil
		}
		return decl
	case *gen.RelationStmtContext:
		kw := s.GetCls()
		if front.Missing(kw) {
			return nil
		}
		class := ClassEvent
		if kw.GetTokenType() == gen.SDLLexerINTERVAL {
			class = ClassInterval
		}
		return c.relation(kw, class, s.Relation())
	case *gen.SensorStmtContext:
		return c.sensor(s)
	case *gen.ClockStmtContext:
		t := front.TermTok(s.DURATION())
		if front.Missing(t) {
			return nil
		}
		decl := &ClockDecl{At: front.TokPos(front.TermTok(s.CLOCK())), Text: t.GetText(), ValPos: front.TokPos(t)}
		l := c.lits[t.GetStart()]
		decl.Period = l.NS
		if !l.Bad && l.NS <= 0 {
			c.d.Add(decl.ValPos, "clock period must be positive")
		}
		return decl
	}
	return nil
}

func (c *converter) relation(kw antlr.Token, class Class, ctx gen.IRelationContext) Stmt {
	if ctx == nil || front.Missing(kw) {
		return nil
	}
	decl := &RelationDecl{At: front.TokPos(kw), Class: class, Name: c.name(ctx.Name())}
	if decl.Name == nil {
		return nil
	}
	for _, a := range ctx.AllAttr() {
		attr := c.attr(a)
		if attr == nil {
			return nil
		}
		decl.Attrs = append(decl.Attrs, attr)
	}
	if len(decl.Attrs) == 0 {
		return nil
	}
	if s := ctx.Strategy(); s != nil {
		if decl.Strategy = c.strategy(s); decl.Strategy == nil {
			return nil
		}
	}
	return decl
}

func (c *converter) attr(ctx gen.IAttrContext) *Attr {
	if ctx == nil {
		return nil
	}
	a := &Attr{Name: c.name(ctx.Name())}
	if a.Name == nil {
		return nil
	}
	switch t := ctx.TypeRef().(type) {
	case *gen.EnumTypeContext:
		a.Type = &TypeRef{At: front.TokPos(front.TermTok(t.ENUM())), Name: "enum"}
		for _, n := range t.AllName() {
			id := c.name(n)
			if id == nil {
				return nil
			}
			a.Type.Enum = append(a.Type.Enum, id)
		}
		if len(a.Type.Enum) == 0 {
			return nil
		}
	case *gen.NamedTypeContext:
		tok := front.OneToken(t.TypeName())
		if front.Missing(tok) {
			return nil
		}
		a.Type = &TypeRef{At: front.TokPos(tok), Name: tok.GetText()}
	default:
		return nil
	}
	if r := ctx.Role(); r != nil {
		a.Role, a.RolePos = role(r)
		if a.Role == RoleNone {
			return nil
		}
	}
	return a
}

func role(ctx gen.IRoleContext) (Role, Pos) {
	t := front.OneToken(ctx)
	if front.Missing(t) {
		return RoleNone, Pos{}
	}
	switch t.GetTokenType() {
	case gen.SDLLexerPERFORMER:
		return RolePerformer, front.TokPos(t)
	case gen.SDLLexerINITIATOR:
		return RoleInitiator, front.TokPos(t)
	case gen.SDLLexerTARGET:
		return RoleTarget, front.TokPos(t)
	}
	return RoleNone, Pos{}
}

func (c *converter) strategy(ctx gen.IStrategyContext) *Strategy {
	s := &Strategy{At: front.TokPos(ctx.GetStart())}
	switch {
	case ctx.SAMPLED() != nil:
		s.Kind = Sampled
	case ctx.THEN() != nil:
		s.Kind = TracedThenDisabled
	case ctx.TRACED() != nil:
		s.Kind = Traced
	default:
		return nil
	}
	r := ctx.Role()
	if r == nil {
		return nil
	}
	if s.On, s.OnPos = role(r); s.On == RoleNone {
		return nil
	}
	if ctx.COUNTER() != nil {
		t := front.TermTok(ctx.NUMBER())
		if front.Missing(t) {
			return nil
		}
		s.CounterPos = front.TokPos(t)
		if c.lits[t.GetStart()].Bad {
			return s
		}
		text := t.GetText()
		v, err := strconv.ParseInt(text, 10, 64)
		switch {
		case strings.ContainsAny(text, ".eE") || (err == nil && v <= 0):
			c.d.Add(s.CounterPos, "counter must be a positive integer, not '%s'", front.Shorten(text))
		case err != nil:
			c.d.Add(s.CounterPos, "counter '%s' is out of range", front.Shorten(text))
		default:
			s.Counter = v
		}
	}
	return s
}
