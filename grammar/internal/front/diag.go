package front

import (
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/source"
)

// MaxErrors caps the diagnostics of one Parse; one more says "too many
// errors".
const MaxErrors = 20

// Diag collects the diagnostics of one Parse.
type Diag struct {
	src  *source.File
	errs source.ErrorList
	// eofPos is where "unexpected end of input" points: just after the last
	// token (or 1:1 for an empty text).
	eofPos source.Pos
}

// tooManyErrors is panicked by Add once the cap is passed, to stop the
// work on hopeless input; Parse recovers it.
type tooManyErrors struct{}

// Add reports a diagnostic. Past the cap it stops the parse (by a panic
// that Parse recovers).
func (d *Diag) Add(pos source.Pos, format string, args ...any) {
	d.errs = append(d.errs, d.src.Errorf(pos, format, args...))
	if len(d.errs) > MaxErrors {
		panic(tooManyErrors{})
	}
}

// result sorts the diagnostics, caps them and returns them as an error
// (nil when there are none). Past the cap, the diagnostics are the first
// ones found (lexical errors of the whole text come first), then "too many
// errors".
func (d *Diag) result() error {
	d.errs.Sort()
	if len(d.errs) > MaxErrors {
		extra := d.errs[MaxErrors]
		d.errs = append(d.errs[:MaxErrors:MaxErrors], d.src.Errorf(extra.Pos, "too many errors"))
	}
	return d.errs.Err()
}

// TokPos is the 1-based position of a token (ANTLR columns are 0-based
// rune offsets).
func TokPos(t antlr.Token) source.Pos {
	if t == nil {
		return source.Pos{}
	}
	return source.Pos{Line: t.GetLine(), Col: t.GetColumn() + 1}
}

// endPos is the position just after a token, on its line.
func endPos(t antlr.Token) source.Pos {
	p := TokPos(t)
	p.Col += utf8.RuneCountInString(t.GetText())
	return p
}

// invalidUTF8Pos is the place of the first byte of text that is not UTF-8.
func invalidUTF8Pos(text string) source.Pos {
	p := source.Pos{Line: 1, Col: 1}
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

// Shorten cuts long token texts for messages.
func Shorten(s string) string {
	const max = 24
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-3]) + "..."
}

// OneToken is the single token of a one-token rule context (a name, a
// literal), or nil when ctx is absent or spans more or fewer tokens.
func OneToken(ctx antlr.ParserRuleContext) antlr.Token {
	if ctx == nil {
		return nil
	}
	t := ctx.GetStart()
	if ctx.GetStop() != t {
		return nil
	}
	return t
}

// Missing reports whether t is absent or conjured by error recovery.
func Missing(t antlr.Token) bool {
	return t == nil || t.GetStart() < 0 || t.GetTokenType() == antlr.TokenEOF
}

// TermTok is the token of a terminal node, or nil.
func TermTok(n antlr.TerminalNode) antlr.Token {
	if n == nil {
		return nil
	}
	return n.GetSymbol()
}
