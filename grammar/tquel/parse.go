package tquel

import (
	"strconv"
	"strings"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel/gen"
)

// Parse parses a TQuel text: a sequence of range and retrieve statements.
// name is the file name used in diagnostics ("-e" for command-line text).
//
// On failure Parse returns a nil File and a source.ErrorList holding every
// problem found (at most about twenty), sorted by position, each as
// "name:line:col: message" with 1-based lines and rune columns.
func Parse(name, text string) (*File, error) {
	return front.Parse(&language, name, text)
}

// language wires TQuel's generated lexer and parser, its error messages
// and its converter into the shared harness.
var language = front.Language[*gen.TQuelParser, File]{
	NewLexer:  func(in antlr.CharStream) antlr.Lexer { return gen.NewTQuelLexer(in) },
	NewParser: gen.NewTQuelParser,
	Literals: front.Literals{
		ErrorChar: gen.TQuelLexerERROR_CHAR,
		Number:    gen.TQuelLexerNUMBER,
		Duration:  gen.TQuelLexerDURATION,
		String:    gen.TQuelLexerSTRING,
	},
	// Parentheses, brackets and runs of prefix operators, so that hostile
	// input cannot exhaust the stack of the recursive parser.
	Nesting: front.Nesting{
		Open:   front.NewTokenSet(gen.TQuelLexerLPAREN, gen.TQuelLexerLBRACK),
		Close:  front.NewTokenSet(gen.TQuelLexerRPAREN, gen.TQuelLexerRBRACK),
		Prefix: front.NewTokenSet(gen.TQuelLexerNOT, gen.TQuelLexerMINUS, gen.TQuelLexerBEGIN, gen.TQuelLexerEND, gen.TQuelLexerOF),
		What:   "expression",
	},
	Syntax:   syntax,
	Recovery: recovery,
	Convert: func(p *gen.TQuelParser, in *front.Input) *File {
		c := &converter{d: in.Diag, lits: in.Lits, text: []rune(in.Src.Text())}
		return c.file(in.Src, p.File())
	},
}

// ---------------------------------------------------------------- converter

// converter walks the ANTLR parse tree and builds the AST. It tolerates the
// partial trees that error recovery leaves (nil children, conjured tokens)
// and reports the rules the grammar leaves to it: clause multiplicity, value
// versus temporal context, non-associative comparisons, integer indexes.
type converter struct {
	d    *front.Diag
	lits map[int]front.Lit
	text []rune
}

// mode is the context an expression is converted in.
type mode uint8

const (
	valueMode    mode = iota // target list, where, aggregate argument/by/where
	temporalMode             // when, valid, as of, aggregate when
)

// snippet is the source text of a subtree, whitespace collapsed and cut to a
// readable length, for messages.
func (c *converter) snippet(ctx antlr.ParserRuleContext) string {
	start, stop := ctx.GetStart(), ctx.GetStop()
	if front.Missing(start) || stop == nil || stop.GetStop() < start.GetStart() {
		return "expression"
	}
	a, b := start.GetStart(), stop.GetStop()+1
	if a < 0 || b > len(c.text) {
		return "expression"
	}
	s := strings.Join(strings.Fields(string(c.text[a:b])), " ")
	const max = 40
	if r := []rune(s); len(r) > max {
		s = string(r[:max-3]) + "..."
	}
	return "'" + s + "'"
}

func (c *converter) ident(t antlr.Token) *Ident {
	if front.Missing(t) {
		return nil
	}
	return &Ident{At: front.TokPos(t), Name: t.GetText()}
}

// nameTok is the single token of a name-like rule context.
func nameTok(ctx antlr.ParserRuleContext) antlr.Token {
	if ctx == nil || ctx.GetChildCount() != 1 {
		return nil
	}
	return ctx.GetStart()
}

func (c *converter) name(ctx gen.INameContext) *Ident {
	if ctx == nil {
		return nil
	}
	return c.ident(nameTok(ctx))
}

func (c *converter) file(src *source.File, ctx gen.IFileContext) *File {
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
	case *gen.RangeStmtContext:
		return c.rangeStmt(s)
	case *gen.RetrieveStmtContext:
		return c.retrieveStmt(s)
	}
	return nil
}

func (c *converter) rangeStmt(ctx *gen.RangeStmtContext) Stmt {
	s := &RangeStmt{At: front.TokPos(front.TermTok(ctx.RANGE()))}
	if s.Var = c.ident(nameTok(ctx.ExprName())); s.Var == nil {
		return nil // a syntax error was reported
	}
	if s.Rel = c.name(ctx.Name()); s.Rel == nil {
		return nil
	}
	if ctx.LBRACK() != nil {
		if t := front.TermTok(ctx.NUMBER()); !front.Missing(t) {
			s.Index = c.intLit(t, "index")
		}
	}
	return s
}

// intLit converts a NUMBER token that must be a non-negative integer.
func (c *converter) intLit(t antlr.Token, what string) *IntLit {
	l := &IntLit{At: front.TokPos(t)}
	if c.lits[t.GetStart()].Bad {
		return l
	}
	text := t.GetText()
	if strings.ContainsAny(text, ".eE") {
		c.d.Add(l.At, "%s must be an integer, not '%s'", what, front.Shorten(text))
		return l
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		c.d.Add(l.At, "%s '%s' is out of range", what, front.Shorten(text))
		return l
	}
	l.Value = v
	return l
}

func (c *converter) retrieveStmt(ctx *gen.RetrieveStmtContext) Stmt {
	s := &RetrieveStmt{
		At:     front.TokPos(front.TermTok(ctx.RETRIEVE())),
		Into:   ctx.INTO() != nil,
		Unique: ctx.UNIQUE() != nil,
	}
	if rn := ctx.ResultName(); rn != nil {
		s.Name = c.ident(nameTok(rn))
	} else if s.Into {
		c.d.Add(front.TokPos(front.TermTok(ctx.INTO())), "missing result name after 'into'")
	}
	for _, t := range ctx.AllTarget() {
		if tg := c.target(t); tg != nil {
			s.Targets = append(s.Targets, tg)
		}
	}
	first := map[string]Pos{}
	seen := func(kind string, kw antlr.Token) bool {
		p := front.TokPos(kw)
		if f, dup := first[kind]; dup {
			c.d.Add(p, "duplicate %s clause (first at %s)", kind, f)
			return true
		}
		first[kind] = p
		return false
	}
	for _, cl := range ctx.AllClause() {
		switch x := cl.(type) {
		case *gen.ValidClauseContext:
			kw := front.TermTok(x.VALID())
			if !seen("valid", kw) {
				v := &ValidClause{Kw: front.TokPos(kw)}
				if x.AT() != nil {
					v.At = c.expr(x.Expr(0), temporalMode)
				} else {
					v.From, v.To = c.expr(x.Expr(0), temporalMode), c.expr(x.Expr(1), temporalMode)
				}
				s.Valid = v
			}
		case *gen.WhereClauseContext:
			if !seen("where", front.TermTok(x.WHERE())) {
				s.Where = c.expr(x.Expr(), valueMode)
			}
		case *gen.WhenClauseContext:
			if !seen("when", front.TermTok(x.WHEN())) {
				s.When = c.expr(x.Expr(), temporalMode)
			}
		case *gen.AsOfClauseContext:
			kw := front.TermTok(x.AS())
			if !seen("as of", kw) {
				s.AsOf = &AsOfClause{Kw: front.TokPos(kw), At: c.expr(x.Expr(), temporalMode)}
			}
		}
	}
	return s
}

func (c *converter) target(ctx gen.ITargetContext) *Target {
	if ctx == nil {
		return nil
	}
	names := ctx.AllName()
	if len(names) == 0 {
		return nil
	}
	n := c.name(names[0])
	if n == nil {
		return nil
	}
	switch {
	case ctx.EQ() != nil || ctx.IS() != nil:
		e := c.expr(ctx.Expr(), valueMode)
		if e == nil {
			return nil
		}
		return &Target{At: n.At, Name: n, Expr: e}
	case ctx.ALL() != nil:
		return &Target{At: n.At, Expr: &AttrRef{Var: n, All: true}}
	case len(names) == 2:
		attr := c.name(names[1])
		if attr == nil {
			return nil
		}
		return &Target{At: n.At, Expr: &AttrRef{Var: n, Attr: attr}}
	}
	return nil
}

// tokenOps maps operator tokens to AST operators.
var tokenOps = map[int]Op{
	gen.TQuelLexerPLUS: OpAdd, gen.TQuelLexerMINUS: OpSub, gen.TQuelLexerSTAR: OpMul,
	gen.TQuelLexerSLASH: OpDiv, gen.TQuelLexerPERCENT: OpMod,
	gen.TQuelLexerEQ: OpEq, gen.TQuelLexerNE: OpNe, gen.TQuelLexerLT: OpLt,
	gen.TQuelLexerLE: OpLe, gen.TQuelLexerGT: OpGt, gen.TQuelLexerGE: OpGe,
	gen.TQuelLexerAND: OpAnd, gen.TQuelLexerOR: OpOr,
	gen.TQuelLexerPRECEDE: OpPrecede, gen.TQuelLexerOVERLAP: OpOverlap,
	gen.TQuelLexerEQUAL: OpEqual, gen.TQuelLexerEXTEND: OpExtend,
	gen.TQuelLexerBEGIN: OpBeginOf, gen.TQuelLexerEND: OpEndOf,
}

// opText is an operator as written, lower-cased, for messages.
func opText(t antlr.Token) string { return strings.ToLower(t.GetText()) }

const temporalHint = "; use a range variable, a quoted time, begin of or end of"

// expr converts an expression in the given context. It returns nil after
// reporting an error (or when error recovery left the subtree incomplete).
func (c *converter) expr(ctx gen.IExprContext, m mode) Expr {
	switch x := ctx.(type) {
	case *gen.PrimaryExprContext:
		return c.primary(x.Primary(), m)

	case *gen.TimeOfExprContext:
		op := x.GetOp()
		if front.Missing(op) {
			return nil
		}
		operand := c.expr(x.Expr(), temporalMode)
		if operand == nil {
			return nil
		}
		if m == valueMode {
			return &TimeOf{At: front.TokPos(op), Op: tokenOps[op.GetTokenType()], X: operand}
		}
		return &TemporalUnary{At: front.TokPos(op), Op: tokenOps[op.GetTokenType()], X: operand}

	case *gen.NegExprContext:
		op := front.TermTok(x.MINUS())
		if m == temporalMode {
			c.d.Add(front.TokPos(op), "operator '-' is not allowed in a temporal expression")
			return nil
		}
		operand := c.expr(x.Expr(), m)
		if operand == nil {
			return nil
		}
		return &Unary{At: front.TokPos(op), Op: OpNeg, X: operand}

	case *gen.NotExprContext:
		operand := c.expr(x.Expr(), m)
		if operand == nil {
			return nil
		}
		return &Not{At: front.TokPos(front.TermTok(x.NOT())), X: operand}

	case *gen.MulExprContext:
		return c.binary(x.GetOp(), x.Expr(0), x.Expr(1), m)
	case *gen.AddExprContext:
		return c.binary(x.GetOp(), x.Expr(0), x.Expr(1), m)
	case *gen.OverlapExprContext:
		return c.binary(x.GetOp(), x.Expr(0), x.Expr(1), m)
	case *gen.CmpExprContext:
		op := x.GetOp()
		if l, ok := x.Expr(0).(*gen.CmpExprContext); ok && !front.Missing(op) && !front.Missing(l.GetOp()) {
			c.d.Add(front.TokPos(op), "cannot chain '%s' after '%s'; use 'and' or parentheses", opText(op), opText(l.GetOp()))
			return nil
		}
		return c.binary(op, x.Expr(0), x.Expr(1), m)
	case *gen.AndExprContext:
		return c.binary(front.TermTok(x.AND()), x.Expr(0), x.Expr(1), m)
	case *gen.OrExprContext:
		return c.binary(front.TermTok(x.OR()), x.Expr(0), x.Expr(1), m)
	}
	return nil
}

// binary converts an infix operation; whether the operator is allowed
// depends on the context.
func (c *converter) binary(opTok antlr.Token, l, r gen.IExprContext, m mode) Expr {
	if front.Missing(opTok) {
		return nil
	}
	op := tokenOps[opTok.GetTokenType()]
	pos := front.TokPos(opTok)
	temporal := op >= OpPrecede && op <= OpExtend
	logical := op == OpAnd || op == OpOr
	switch {
	case m == valueMode && temporal:
		c.d.Add(pos, "temporal operator '%s' is not allowed in a value expression", opText(opTok))
		return nil
	case m == temporalMode && !temporal && !logical:
		c.d.Add(pos, "operator '%s' is not allowed in a temporal expression", opText(opTok))
		return nil
	}
	x, y := c.expr(l, m), c.expr(r, m)
	if x == nil || y == nil {
		return nil
	}
	if temporal {
		return &TemporalBinary{Op: op, OpPos: pos, X: x, Y: y}
	}
	return &Binary{Op: op, OpPos: pos, X: x, Y: y}
}

func (c *converter) primary(ctx gen.IPrimaryContext, m mode) Expr {
	notTemporal := func(p antlr.ParserRuleContext) Expr {
		c.d.Add(front.TokPos(p.GetStart()), "%s is not allowed in a temporal expression%s", c.snippet(p), temporalHint)
		return nil
	}
	switch x := ctx.(type) {
	case *gen.AggregateContext:
		if m == temporalMode {
			return notTemporal(x)
		}
		return c.aggregate(x)

	case *gen.NameRefContext:
		v := c.ident(nameTok(x.ExprName()))
		if v == nil {
			return nil
		}
		if x.DOT() == nil {
			return v
		}
		if x.ALL() != nil {
			c.d.Add(v.At, "%s is only allowed as a whole target", c.snippet(x))
			return nil
		}
		attr := c.name(x.Name())
		if attr == nil {
			return nil
		}
		if m == temporalMode {
			return notTemporal(x)
		}
		return &AttrRef{Var: v, Attr: attr}

	case *gen.NumberLitContext:
		t := front.TermTok(x.NUMBER())
		if front.Missing(t) {
			return nil
		}
		if m == temporalMode {
			return notTemporal(x)
		}
		text := t.GetText()
		return &NumberLit{At: front.TokPos(t), Text: text, Float: strings.ContainsAny(text, ".eE")}

	case *gen.DurationLitContext:
		t := front.TermTok(x.DURATION())
		if front.Missing(t) {
			return nil
		}
		if m == temporalMode {
			return notTemporal(x)
		}
		return &DurationLit{At: front.TokPos(t), Text: t.GetText(), NS: c.lits[t.GetStart()].NS}

	case *gen.StringLitContext:
		t := front.TermTok(x.STRING())
		if front.Missing(t) {
			return nil
		}
		return &StringLit{At: front.TokPos(t), Value: c.lits[t.GetStart()].Str}

	case *gen.ParamRefContext:
		t := front.TermTok(x.PARAM())
		if front.Missing(t) {
			return nil
		}
		return &ParamRef{At: front.TokPos(t), Name: t.GetText()[1:]}

	case *gen.ParenExprContext:
		inner := c.expr(x.Expr(), m)
		if inner == nil {
			return nil
		}
		return &Paren{At: front.TokPos(front.TermTok(x.LPAREN())), X: inner}
	}
	return nil
}

// aggFuncs maps lower-cased aggregate names to functions.
var aggFuncs = map[string]AggFunc{
	"count": AggCount, "countu": AggCountU, "sum": AggSum, "sumu": AggSumU,
	"avg": AggAvg, "avgu": AggAvgU, "min": AggMin, "max": AggMax, "any": AggAny,
	"stddev": AggStddev, "percentile": AggPercentile, "histogram": AggHistogram,
}

func (c *converter) aggregate(ctx *gen.AggregateContext) Expr {
	fn := front.TermTok(ctx.AGG())
	if front.Missing(fn) {
		return nil
	}
	a := &Aggregate{At: front.TokPos(fn), Func: aggFuncs[strings.ToLower(fn.GetText())]}
	exprs := ctx.AllExpr()
	if len(exprs) == 0 {
		return nil
	}
	ok := true
	if a.Arg = c.expr(exprs[0], valueMode); a.Arg == nil {
		ok = false
	}
	if p := ctx.AggParam(); p != nil {
		if a.Param = c.expr(p.Expr(), valueMode); a.Param == nil {
			ok = false
		}
	}
	for _, b := range exprs[1:] {
		e := c.expr(b, valueMode)
		if e == nil {
			ok = false
		}
		a.By = append(a.By, e)
	}
	first := map[string]Pos{}
	seen := func(kind string, kw antlr.Token) bool {
		p := front.TokPos(kw)
		if f, dup := first[kind]; dup {
			c.d.Add(p, "duplicate %s clause (first at %s)", kind, f)
			return true
		}
		first[kind] = p
		return false
	}
	for _, cl := range ctx.AllAggClause() {
		switch x := cl.(type) {
		case *gen.WindowClauseContext:
			kw := front.TermTok(x.FOR())
			if seen("for", kw) {
				continue
			}
			w := Window{At: front.TokPos(kw)}
			switch {
			case x.EVER() != nil:
				w.Kind = WindowEver
			case x.INSTANT() != nil:
				w.Kind = WindowInstant
			case !front.Missing(front.TermTok(x.DURATION())):
				t := front.TermTok(x.DURATION())
				w.Kind = WindowMoving
				w.Size = &DurationLit{At: front.TokPos(t), Text: t.GetText(), NS: c.lits[t.GetStart()].NS}
			default:
				ok = false
				continue
			}
			a.Window = w
		case *gen.AggWhereContext:
			if !seen("where", front.TermTok(x.WHERE())) {
				if a.Where = c.expr(x.Expr(), valueMode); a.Where == nil {
					ok = false
				}
			}
		case *gen.AggWhenContext:
			if !seen("when", front.TermTok(x.WHEN())) {
				if a.When = c.expr(x.Expr(), temporalMode); a.When == nil {
					ok = false
				}
			}
		}
	}
	if !ok {
		return nil
	}
	return a
}
