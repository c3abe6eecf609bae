package sdl

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// maxNesting bounds parenthesis nesting. The grammar itself nests at most
// two levels; the bound only keeps error recovery on hostile input cheap.
const maxNesting = 500

// Parse parses a sensor-description text. name is the file name used in
// diagnostics.
//
// On failure Parse returns a nil File and a source.ErrorList holding every
// problem found (at most about twenty), sorted by position, each as
// "name:line:col: message" with 1-based lines and rune columns.
func Parse(name, text string) (file *File, err error) {
	d := &diag{file: name, eofPos: Pos{Line: 1, Col: 1}}
	var parser *gen.SDLParser
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(tooManyErrors); ok {
				file, err = nil, d.result()
				return
			}
			pos := d.eofPos
			if parser != nil {
				if t := parser.GetCurrentToken(); t != nil && t.GetTokenType() != antlr.TokenEOF {
					pos = tokPos(t)
				}
			}
			d.errs.Add(d.file, pos, "internal parser error: %v", r)
			file, err = nil, d.result()
		}
	}()

	badUTF8 := !utf8.ValidString(text)
	if badUTF8 {
		d.add(invalidUTF8Pos(text), "invalid UTF-8 encoding")
	}

	lexer := gen.NewSDLLexer(antlr.NewInputStream(text))
	lexer.RemoveErrorListeners()
	lexer.AddErrorListener(newErrorListener(d))
	filter := &tokenFilter{SDLLexer: lexer, d: d, lits: map[int]lit{}, badUTF8: badUTF8}
	tokens := antlr.NewCommonTokenStream(filter, antlr.TokenDefaultChannel)
	tokens.Fill()

	all := tokens.GetAllTokens()
	if n := len(all); n >= 2 {
		d.eofPos = endPos(all[n-2])
	} else if n == 1 {
		d.eofPos = tokPos(all[0])
	}
	depth := 0
	for _, t := range all {
		switch t.GetTokenType() {
		case gen.SDLLexerLPAREN:
			if depth++; depth > maxNesting {
				d.add(tokPos(t), "parentheses nested too deeply (more than %d levels)", maxNesting)
				return nil, d.result()
			}
		case gen.SDLLexerRPAREN:
			if depth > 0 {
				depth--
			}
		}
	}

	parser = gen.NewSDLParser(tokens)
	parser.RemoveErrorListeners()
	parser.AddErrorListener(newErrorListener(d))
	parser.SetErrorHandler(newErrorStrategy())
	tree := parser.Spec()

	c := &converter{d: d, lits: filter.lits}
	f := c.spec(name, tree)
	if err := d.result(); err != nil {
		return nil, err
	}
	return f, nil
}

// invalidUTF8Pos is the place of the first byte of text that is not UTF-8.
func invalidUTF8Pos(text string) Pos {
	p := Pos{Line: 1, Col: 1}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 {
			return p
		}
		if r == '\n' {
			p.Line++
			p.Col = 1
		} else {
			p.Col++
		}
		i += size
	}
	return p
}

// ---------------------------------------------------------------- converter

// converter walks the ANTLR parse tree and builds the AST. It tolerates the
// partial trees that error recovery leaves (nil children, conjured tokens)
// and checks the values the grammar cannot: counters and clock periods.
type converter struct {
	d    *diag
	lits map[int]lit
}

// missing reports whether t is absent or conjured by error recovery.
func missing(t antlr.Token) bool {
	return t == nil || t.GetStart() < 0 || t.GetTokenType() == antlr.TokenEOF
}

func termTok(n antlr.TerminalNode) antlr.Token {
	if n == nil {
		return nil
	}
	return n.GetSymbol()
}

// nameTok is the single token of a name-like rule context.
func nameTok(ctx antlr.ParserRuleContext) antlr.Token {
	if ctx == nil {
		return nil
	}
	t := ctx.GetStart()
	if ctx.GetStop() != t {
		return nil
	}
	return t
}

func (c *converter) name(ctx gen.INameContext) *Ident {
	if ctx == nil {
		return nil
	}
	t := nameTok(ctx)
	if missing(t) {
		return nil
	}
	return &Ident{At: tokPos(t), Name: t.GetText()}
}

func (c *converter) spec(name string, ctx gen.ISpecContext) *File {
	f := &File{Name: name}
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
		kw := termTok(s.ENTITY())
		if s.TYPE() == nil {
			return c.relation(kw, ClassEntity, s.Relation())
		}
		decl := &EntityTypeDecl{At: tokPos(kw)}
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
		if missing(kw) {
			return nil
		}
		class := ClassEvent
		if kw.GetTokenType() == gen.SDLLexerINTERVAL {
			class = ClassInterval
		}
		return c.relation(kw, class, s.Relation())
	case *gen.ClockStmtContext:
		t := termTok(s.DURATION())
		if missing(t) {
			return nil
		}
		decl := &ClockDecl{At: tokPos(termTok(s.CLOCK())), Text: t.GetText(), ValPos: tokPos(t)}
		l := c.lits[t.GetStart()]
		decl.Period = l.ns
		if !l.bad && l.ns <= 0 {
			c.d.add(decl.ValPos, "clock period must be positive")
		}
		return decl
	}
	return nil
}

func (c *converter) relation(kw antlr.Token, class Class, ctx gen.IRelationContext) Stmt {
	if ctx == nil || missing(kw) {
		return nil
	}
	decl := &RelationDecl{At: tokPos(kw), Class: class, Name: c.name(ctx.Name())}
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
		a.Type = &TypeRef{At: tokPos(termTok(t.ENUM())), Name: "enum"}
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
		tok := nameTok(t.TypeName())
		if missing(tok) {
			return nil
		}
		a.Type = &TypeRef{At: tokPos(tok), Name: tok.GetText()}
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
	t := nameTok(ctx)
	if missing(t) {
		return RoleNone, Pos{}
	}
	switch t.GetTokenType() {
	case gen.SDLLexerPERFORMER:
		return RolePerformer, tokPos(t)
	case gen.SDLLexerINITIATOR:
		return RoleInitiator, tokPos(t)
	case gen.SDLLexerTARGET:
		return RoleTarget, tokPos(t)
	}
	return RoleNone, Pos{}
}

func (c *converter) strategy(ctx gen.IStrategyContext) *Strategy {
	s := &Strategy{At: tokPos(ctx.GetStart())}
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
		t := termTok(ctx.NUMBER())
		if missing(t) {
			return nil
		}
		s.CounterPos = tokPos(t)
		if c.lits[t.GetStart()].bad {
			return s
		}
		text := t.GetText()
		v, err := strconv.ParseInt(text, 10, 64)
		switch {
		case strings.ContainsAny(text, ".eE") || (err == nil && v <= 0):
			c.d.add(s.CounterPos, "counter must be a positive integer, not '%s'", shorten(text))
		case err != nil:
			c.d.add(s.CounterPos, "counter '%s' is out of range", shorten(text))
		default:
			s.Counter = v
		}
	}
	return s
}
