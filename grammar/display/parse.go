package display

import (
	"strconv"
	"strings"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/display/gen"
	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/source"
)

// Parse parses a display spec. name is the file name used in diagnostics.
//
// On failure Parse returns a nil File and a source.ErrorList holding every
// problem found (at most about twenty), sorted by position, each as
// "name:line:col: message" with 1-based lines and rune columns.
func Parse(name, text string) (*File, error) {
	return front.Parse(&language, name, text)
}

// language wires the generated lexer and parser, the error messages and
// the converter into the shared harness.
var language = front.Language[*gen.DisplayParser, File]{
	NewLexer:  func(in antlr.CharStream) antlr.Lexer { return gen.NewDisplayLexer(in) },
	NewParser: gen.NewDisplayParser,
	Literals: front.Literals{
		ErrorChar: gen.DisplayLexerERROR_CHAR,
		Number:    gen.DisplayLexerNUMBER,
		Duration:  gen.DisplayLexerDURATION,
		String:    gen.DisplayLexerSTRING,
	},
	// The grammar nests one level; the bound only keeps error recovery on
	// hostile input cheap.
	Nesting: front.Nesting{
		Open:  front.NewTokenSet(gen.DisplayLexerLPAREN),
		Close: front.NewTokenSet(gen.DisplayLexerRPAREN),
		What:  "parentheses",
	},
	Syntax:   syntax,
	Recovery: recovery,
	Convert: func(p *gen.DisplayParser, in *front.Input) *File {
		c := &converter{d: in.Diag, lits: in.Lits}
		return c.spec(in.Src, p.Spec())
	},
}

// ---------------------------------------------------------------- converter

// converter walks the ANTLR parse tree and builds the AST. It tolerates the
// partial trees that error recovery leaves (nil children, conjured tokens)
// and checks the values the grammar cannot: percentages, durations, and
// whether a mapping's values fit its aspect.
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

// names converts the two names of a relationship; ok is false unless both
// are there.
func (c *converter) names(ctxs []gen.INameContext) (from, to *Ident, ok bool) {
	if len(ctxs) != 2 {
		return nil, nil, false
	}
	from, to = c.name(ctxs[0]), c.name(ctxs[1])
	return from, to, from != nil && to != nil
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
	case *gen.DisplayStmtContext:
		kw := front.TermTok(s.DISPLAY())
		if front.Missing(kw) {
			return nil
		}
		st := &DisplayStmt{At: front.TokPos(kw), Rel: c.name(s.Name())}
		if st.Rel == nil {
			return nil
		}
		if st.Rep = c.rep(s.Rep()); st.Rep == nil {
			return nil
		}
		for _, a := range s.AllAspect() {
			asp := c.aspect(a)
			if asp == nil {
				return nil
			}
			st.Aspects = append(st.Aspects, asp)
		}
		return st
	case *gen.TimeStmtContext:
		kw, anim := front.TermTok(s.TIME()), front.OneToken(s.TimeMode())
		if front.Missing(kw) || front.Missing(anim) {
			return nil
		}
		st := &TimeStmt{At: front.TokPos(kw), Trace: anim.GetTokenType() == gen.DisplayLexerANIMATIONTRACE}
		if s.DECAY() != nil {
			if st.Decay = c.duration(s.DURATION(), "decay"); st.Decay == nil {
				return nil
			}
		}
		return st
	case *gen.ShowStmtContext:
		kw, what := front.TermTok(s.SHOW()), s.GetWhat()
		if front.Missing(kw) || front.Missing(what) {
			return nil
		}
		st := &ShowStmt{At: front.TokPos(kw), What: ShowClock}
		if what.GetTokenType() == gen.DisplayLexerTIMELINE {
			st.What = ShowTimeline
		}
		return st
	}
	return nil
}

// duration converts a duration token, which must be positive.
func (c *converter) duration(n antlr.TerminalNode, what string) *Duration {
	t := front.TermTok(n)
	if front.Missing(t) {
		return nil
	}
	d := &Duration{At: front.TokPos(t), Text: t.GetText()}
	l := c.lits[t.GetStart()]
	d.NS = l.NS
	if !l.Bad && l.NS <= 0 {
		c.d.Add(d.At, "%s must be positive", what)
	}
	return d
}

func (c *converter) rep(ctx gen.IRepContext) Rep {
	if ctx == nil {
		return nil
	}
	at := front.TokPos(ctx.GetStart())
	switch r := ctx.(type) {
	case *gen.IconRepContext:
		t := r.GetShape()
		if front.Missing(t) {
			return nil
		}
		shape := map[int]Shape{
			gen.DisplayLexerBOX: Box, gen.DisplayLexerCIRCLE: Circle, gen.DisplayLexerOVAL: Oval,
			gen.DisplayLexerTEXT: Text, gen.DisplayLexerPOINT: Point,
		}[t.GetTokenType()]
		if shape == 0 {
			return nil
		}
		return &IconRep{At: at, Shape: shape}
	case *gen.LineRepContext:
		if front.Missing(front.TermTok(r.LINE())) {
			return nil
		}
		if r.FROM() == nil {
			return &IconRep{At: at, Shape: Line}
		}
		from, to, ok := c.names(r.AllName())
		if !ok {
			return nil
		}
		return &LinkRep{At: at, Kind: Connector, From: from, To: to}
	case *gen.InsideRepContext:
		from, to, ok := c.names(r.AllName())
		if !ok || front.Missing(front.TermTok(r.RPAREN())) {
			return nil
		}
		return &LinkRep{At: at, Kind: Inside, From: from, To: to}
	case *gen.ArrowRepContext:
		from, to, ok := c.names(r.AllName())
		if !ok {
			return nil
		}
		return &LinkRep{At: at, Kind: Arrow, From: from, To: to}
	case *gen.FlashRepContext:
		how := r.GetHow()
		attr := c.name(r.Name())
		if front.Missing(how) || attr == nil {
			return nil
		}
		return &FlashRep{At: at, Blink: how.GetTokenType() == gen.DisplayLexerBLINK, Attr: attr}
	case *gen.PlotRepContext:
		if attr := c.name(r.Name()); attr != nil {
			return &PlotRep{At: at, Attr: attr}
		}
	}
	return nil
}

func (c *converter) aspect(ctx gen.IAspectContext) Aspect {
	if ctx == nil {
		return nil
	}
	at := front.TokPos(ctx.GetStart())
	switch a := ctx.(type) {
	case *gen.LabelAspectContext:
		if attr := c.name(a.Name()); attr != nil {
			return &LabelAspect{At: at, Attr: attr}
		}
	case *gen.ShadeAspectContext:
		attr := c.name(a.Name())
		if attr == nil {
			return nil
		}
		asp := &ShadeAspect{At: at, Attr: attr}
		if m := a.Mapping(); m != nil {
			for _, e := range m.AllEntry() {
				se := c.shadeEntry(e)
				if se == nil {
					return nil
				}
				asp.Map = append(asp.Map, se)
			}
			if len(asp.Map) == 0 || front.Missing(front.TermTok(m.RPAREN())) {
				return nil
			}
		}
		return asp
	case *gen.ColourAspectContext:
		attr := c.name(a.Name())
		if attr == nil {
			return nil
		}
		asp := &ColourAspect{At: at, Attr: attr}
		if m := a.Mapping(); m != nil {
			for _, e := range m.AllEntry() {
				ce := c.colourEntry(e)
				if ce == nil {
					return nil
				}
				asp.Map = append(asp.Map, ce)
			}
			if len(asp.Map) == 0 || front.Missing(front.TermTok(m.RPAREN())) {
				return nil
			}
		}
		return asp
	case *gen.OrderAspectContext:
		if attr := c.name(a.Name()); attr != nil {
			d := a.GetDir()
			return &OrderAspect{At: at, Attr: attr, Desc: d != nil && d.GetTokenType() == gen.DisplayLexerDESC}
		}
	case *gen.AtAspectContext:
		t := a.GetSide()
		if front.Missing(t) {
			return nil
		}
		side := map[int]Side{gen.DisplayLexerLEFT: Left, gen.DisplayLexerCENTER: Center, gen.DisplayLexerRIGHT: Right}[t.GetTokenType()]
		if side == 0 {
			return nil
		}
		return &AtAspect{At: at, Side: side, SidePos: front.TokPos(t)}
	case *gen.ForAspectContext:
		if d := c.duration(a.DURATION(), "a duration after for"); d != nil {
			return &ForAspect{At: at, Dur: d}
		}
	}
	return nil
}

func (c *converter) key(ctx gen.IKeyContext) *Key {
	if ctx == nil {
		return nil
	}
	t := front.OneToken(ctx)
	if front.Missing(t) {
		return nil
	}
	k := &Key{At: front.TokPos(t), Text: t.GetText()}
	switch t.GetTokenType() {
	case gen.DisplayLexerSTRING:
		k.Kind = KeyString
		k.Text = c.lits[t.GetStart()].Str
	case gen.DisplayLexerNUMBER:
		k.Kind = KeyNumber
	default:
		k.Kind = KeyName
	}
	return k
}

func (c *converter) shadeEntry(ctx gen.IEntryContext) *ShadeEntry {
	k := c.key(ctx.Key())
	if k == nil {
		return nil
	}
	if n := ctx.Name(); n != nil {
		if id := c.name(n); id != nil {
			c.d.Add(id.At, "a shade is a percentage such as 60%%, not '%s'", front.Shorten(id.Name))
		}
		return nil
	}
	t := front.TermTok(ctx.NUMBER())
	if front.Missing(t) || front.Missing(front.TermTok(ctx.PERCENT())) {
		return nil
	}
	e := &ShadeEntry{Key: k, PctPos: front.TokPos(t)}
	if c.lits[t.GetStart()].Bad {
		return e
	}
	text := t.GetText()
	v, err := strconv.Atoi(text)
	if err != nil || strings.ContainsAny(text, ".eE") || v > 100 {
		c.d.Add(e.PctPos, "a shade must be a whole percentage from 0%% to 100%%, not '%s%%'", front.Shorten(text))
		return e
	}
	e.Percent = v
	return e
}

func (c *converter) colourEntry(ctx gen.IEntryContext) *ColourEntry {
	k := c.key(ctx.Key())
	if k == nil {
		return nil
	}
	if ctx.PERCENT() != nil {
		if t := front.TermTok(ctx.NUMBER()); !front.Missing(t) {
			c.d.Add(front.TokPos(t), "a colour is a name such as green, not a percentage")
		}
		return nil
	}
	id := c.name(ctx.Name())
	if id == nil {
		return nil
	}
	return &ColourEntry{Key: k, Colour: id}
}
