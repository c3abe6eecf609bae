package sdl

import (
	"strconv"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// The converter's part for sensor bindings (`sensor Name at …`).

func (c *converter) sensor(s *gen.SensorStmtContext) Stmt {
	kw := front.TermTok(s.SENSOR())
	if front.Missing(kw) {
		return nil
	}
	d := &SensorDecl{At: front.TokPos(kw), Name: c.name(s.Name())}
	if d.Name == nil {
		return nil
	}
	clauses := s.AllProbeClause()
	switch {
	case s.AT() != nil && len(clauses) == 1:
		d.From = c.probeClause(clauses[0])
	case s.FROM() != nil && s.TO() != nil && len(clauses) == 2:
		d.From = c.probeClause(clauses[0])
		d.To = c.probeClause(clauses[1])
		if d.To == nil {
			return nil
		}
	default:
		return nil
	}
	if d.From == nil {
		return nil
	}
	return d
}

func (c *converter) probeClause(ctx gen.IProbeClauseContext) *ProbeClause {
	if ctx == nil {
		return nil
	}
	pc := &ProbeClause{Probe: c.probe(ctx.Probe())}
	if pc.Probe == nil {
		return nil
	}
	if b := ctx.Binds(); b != nil {
		for _, x := range b.AllBind() {
			bind := &Bind{Name: c.name(x.Name()), Value: c.bexpr(x.Bexpr())}
			if bind.Name == nil || bind.Value == nil {
				return nil
			}
			pc.Binds = append(pc.Binds, bind)
		}
		if len(pc.Binds) == 0 {
			return nil
		}
	}
	if k := ctx.KEY(); k != nil {
		pc.KeyPos = front.TokPos(front.TermTok(k))
		if pc.Key = c.bexpr(ctx.Bexpr()); pc.Key == nil {
			return nil
		}
	}
	if ctx.WHEN() != nil {
		for _, t := range ctx.AllTest() {
			cond := c.test(t)
			if cond == nil {
				return nil
			}
			pc.Conds = append(pc.Conds, cond)
		}
		if len(pc.Conds) == 0 {
			return nil
		}
	}
	return pc
}

func (c *converter) probe(ctx gen.IProbeContext) *Probe {
	switch p := ctx.(type) {
	case *gen.TracepointProbeContext:
		names := p.AllName()
		if len(names) != 2 {
			return nil
		}
		pr := &Probe{At: front.TokPos(front.TermTok(p.TRACEPOINT())), Kind: ProbeTracepoint,
			Group: c.name(names[0]), Event: c.name(names[1])}
		if pr.Group == nil || pr.Event == nil {
			return nil
		}
		return pr
	case *gen.UprobeProbeContext:
		kw := p.GetKind()
		strs := p.AllSTRING()
		if front.Missing(kw) || len(strs) != 2 {
			return nil
		}
		pr := &Probe{At: front.TokPos(kw), Kind: ProbeUprobe}
		if kw.GetTokenType() == gen.SDLLexerURETPROBE {
			pr.Kind = ProbeUretprobe
		}
		for i, st := range strs {
			t := front.TermTok(st)
			if front.Missing(t) {
				return nil
			}
			l := c.lits[t.GetStart()]
			at := front.TokPos(t)
			if !l.Bad && l.Str == "" {
				c.d.Add(at, "empty string: want a %s", [...]string{"path", "symbol"}[i])
			}
			if i == 0 {
				pr.Path, pr.PathPos = l.Str, at
			} else {
				pr.Symbol, pr.SymbolPos = l.Str, at
			}
		}
		return pr
	}
	return nil
}

func (c *converter) test(ctx gen.ITestContext) *Cond {
	switch t := ctx.(type) {
	case *gen.CompareTestContext:
		op := t.GetOp()
		if front.Missing(op) {
			return nil
		}
		cond := &Cond{X: c.bexpr(t.Bexpr()), OpPos: front.TokPos(op)}
		switch op.GetTokenType() {
		case gen.SDLLexerEQ:
			cond.Op = CondEq
		case gen.SDLLexerNE:
			cond.Op = CondNe
		case gen.SDLLexerLT:
			cond.Op = CondLt
		case gen.SDLLexerLE:
			cond.Op = CondLe
		case gen.SDLLexerGT:
			cond.Op = CondGt
		case gen.SDLLexerGE:
			cond.Op = CondGe
		default:
			return nil
		}
		n := c.num(t.NUMBER())
		if cond.X == nil || n == nil {
			return nil
		}
		cond.Values = []*BNum{n}
		return cond
	case *gen.InTestContext:
		cond := &Cond{X: c.bexpr(t.Bexpr()), Op: CondIn, OpPos: front.TokPos(front.TermTok(t.IN()))}
		if cond.X == nil {
			return nil
		}
		for _, x := range t.AllNUMBER() {
			n := c.num(x)
			if n == nil {
				return nil
			}
			cond.Values = append(cond.Values, n)
		}
		if len(cond.Values) == 0 {
			return nil
		}
		return cond
	}
	return nil
}

func (c *converter) bexpr(ctx gen.IBexprContext) BExpr {
	if ctx == nil {
		return nil
	}
	x := c.bterm(ctx.Bterm())
	if x == nil {
		return nil
	}
	if ctx.AMP() != nil {
		n := c.num(ctx.NUMBER())
		if n == nil {
			return nil
		}
		return &BMask{X: x, Mask: n}
	}
	return x
}

func (c *converter) bterm(ctx gen.IBtermContext) BExpr {
	switch t := ctx.(type) {
	case *gen.RefTermContext:
		names := t.AllName()
		if len(names) == 0 {
			return nil
		}
		if t.LPAREN() != nil {
			call := &BCall{Func: c.name(names[0]), Arg: c.bexpr(t.Bexpr())}
			if call.Func == nil || call.Arg == nil || t.RPAREN() == nil || front.Missing(front.TermTok(t.RPAREN())) {
				return nil
			}
			return call
		}
		ref := &BRef{}
		for _, n := range names {
			id := c.name(n)
			if id == nil {
				return nil
			}
			ref.Path = append(ref.Path, id)
		}
		return ref
	case *gen.NumTermContext:
		if n := c.num(t.NUMBER()); n != nil {
			return n
		}
	}
	return nil
}

// num reads an integer constant; a malformed one is reported and read as
// 0 (the tree stays complete).
func (c *converter) num(node antlr.TerminalNode) *BNum {
	t := front.TermTok(node)
	if front.Missing(t) {
		return nil
	}
	n := &BNum{At: front.TokPos(t), Text: t.GetText()}
	if c.lits[t.GetStart()].Bad {
		return n
	}
	v, err := strconv.ParseUint(n.Text, 10, 64)
	switch {
	case err == nil:
		n.Value = v
	case isDecimalDigits(n.Text):
		c.d.Add(n.At, "number '%s' is out of range", front.Shorten(n.Text))
	default:
		c.d.Add(n.At, "want an integer, not '%s'", front.Shorten(n.Text))
	}
	return n
}

func isDecimalDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
