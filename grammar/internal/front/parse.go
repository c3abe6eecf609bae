package front

import (
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/source"
)

// MaxNesting bounds how deeply parentheses (and prefix operators) may
// nest, so that hostile input can neither exhaust the stack of the
// recursive parser nor make error recovery expensive.
const MaxNesting = 500

// Language describes one front end to Parse. P is its generated parser,
// F its syntax tree's root (the parsed file).
type Language[P antlr.Parser, F any] struct {
	// NewLexer and NewParser make the generated lexer and parser.
	NewLexer  func(antlr.CharStream) antlr.Lexer
	NewParser func(antlr.TokenStream) P
	// Literals are the lexer's token types the token filter checks.
	Literals Literals
	// Nesting are the tokens the nesting bound counts.
	Nesting Nesting
	// Syntax and Recovery drive the syntax error messages and recovery.
	Syntax   Syntax
	Recovery Recovery
	// Convert runs the start rule on p and turns the parse tree into the
	// syntax tree, reporting what the grammar leaves to it to in.Diag.
	Convert func(p P, in *Input) *F
}

// Nesting says what the nesting bound counts: Open and Close nest, a run
// of Prefix tokens nests one level per token.
type Nesting struct {
	Open, Close, Prefix TokenSet
	// What is reported: "<What> nested too deeply (more than N levels)".
	What string
}

// Input is what Convert works from.
type Input struct {
	// Src is the text, named as diagnostics name it; the syntax tree
	// keeps it so that positions resolve through it.
	Src  *source.File
	Diag *Diag
	// Lits holds what the lexical checks learned about literal tokens,
	// by the token's start offset.
	Lits map[int]Lit
}

// Parse parses text (named name in diagnostics) as lang.
//
// On failure Parse returns a nil tree and a source.ErrorList holding every
// problem found (at most about MaxErrors), sorted by position, each as
// "name:line:col: message" with 1-based lines and rune columns.
func Parse[P antlr.Parser, F any](lang *Language[P, F], name, text string) (file *F, err error) {
	d := &Diag{src: source.NewFile(name, text), eofPos: source.Pos{Line: 1, Col: 1}}
	var parser antlr.Parser
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(tooManyErrors); ok {
				file, err = nil, d.result()
				return
			}
			pos := d.eofPos
			if parser != nil {
				if t := parser.GetCurrentToken(); t != nil && t.GetTokenType() != antlr.TokenEOF {
					pos = TokPos(t)
				}
			}
			d.errs = append(d.errs, d.src.Errorf(pos, "internal parser error: %v", r))
			file, err = nil, d.result()
		}
	}()

	badUTF8 := !utf8.ValidString(text)
	if badUTF8 {
		d.Add(invalidUTF8Pos(text), "invalid UTF-8 encoding")
	}

	lexer := lang.NewLexer(antlr.NewInputStream(text))
	lexer.RemoveErrorListeners()
	lexer.AddErrorListener(newErrorListener(d, &lang.Syntax))
	filter := &tokenFilter{Lexer: lexer, types: lang.Literals, d: d, lits: map[int]Lit{}, badUTF8: badUTF8}
	tokens := antlr.NewCommonTokenStream(filter, antlr.TokenDefaultChannel)
	tokens.Fill()

	all := tokens.GetAllTokens()
	if n := len(all); n >= 2 {
		d.eofPos = endPos(all[n-2])
	} else if n == 1 {
		d.eofPos = TokPos(all[0])
	}
	if t := lang.Nesting.tooDeep(all); t != nil {
		d.Add(TokPos(t), "%s nested too deeply (more than %d levels)", lang.Nesting.What, MaxNesting)
		return nil, d.result()
	}

	p := lang.NewParser(tokens)
	parser = p
	p.RemoveErrorListeners()
	p.AddErrorListener(newErrorListener(d, &lang.Syntax))
	p.SetErrorHandler(newErrorStrategy(lang.Recovery))

	f := lang.Convert(p, &Input{Src: d.src, Diag: d, Lits: filter.lits})
	if err := d.result(); err != nil {
		return nil, err
	}
	return f, nil
}

// tooDeep returns the token at which nesting passes MaxNesting levels, or
// nil.
func (n *Nesting) tooDeep(toks []antlr.Token) antlr.Token {
	depth, prefix := 0, 0
	for _, t := range toks {
		switch tt := t.GetTokenType(); {
		case n.Open[tt]:
			depth++
			prefix = 0
		case n.Close[tt]:
			if depth > 0 {
				depth--
			}
			prefix = 0
		case n.Prefix[tt]:
			prefix++
		default:
			prefix = 0
		}
		if depth+prefix > MaxNesting {
			return t
		}
	}
	return nil
}
