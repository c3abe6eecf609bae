package front

import (
	"sort"
	"strconv"
	"strings"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/source"
)

// Syntax is what the error listener needs to know of a language to turn
// ANTLR's syntax errors into "unexpected X, expected Y" messages.
type Syntax struct {
	// StartRule is the parser's rule index of the start rule, the list of
	// statements: an error there is a stray token between statements.
	StartRule int
	// AfterStatement says what may come after the statements parsed so
	// far, given the last child of the start rule that is not an error
	// node (nil when there is none): the parser only notices a stray token
	// once the statement before it is complete, and what could have
	// continued that statement is more to the point than what may start
	// the next one.
	AfterStatement func(last antlr.Tree) string
	// Summarize may name groups of the expected tokens ("name", "an
	// expression") before the rest are listed one by one; ctx is the rule
	// the parser is in. Nil: no groups.
	Summarize func(e *Expected, ctx antlr.ParserRuleContext)
	// Display names token types in "expected" lists. Other token types
	// are keywords, shown as 'keyword' (their symbolic name in lower
	// case); end of input needs no entry.
	Display map[int]string
	// Last are the token types listed last, in this order: what may
	// follow a complete statement, rarely what the user is missing.
	Last []int
	// Kinds shows offending tokens of these types as "kind text" (for
	// example `string "abc"`) rather than as 'text'.
	Kinds map[int]string
}

// maxExpected caps an "expected" list.
const maxExpected = 8

// TokenSet is a set of token types.
type TokenSet map[int]bool

// NewTokenSet is the set of the given token types.
func NewTokenSet(tts ...int) TokenSet {
	m := make(TokenSet, len(tts))
	for _, t := range tts {
		m[t] = true
	}
	return m
}

// Expected is an expected-token set being put into words: Summarize names
// groups of it, and the tokens no group covers are then listed one by one.
type Expected struct {
	have  map[int]bool
	items []string
}

// Has reports whether token type tt is expected and not yet covered by a
// group.
func (e *Expected) Has(tt int) bool { return e.have[tt] }

// Count is how many of the tokens of s are expected and not yet covered.
func (e *Expected) Count(s TokenSet) int {
	n := 0
	for t := range s {
		if e.have[t] {
			n++
		}
	}
	return n
}

// Group lists item and takes the tokens of the sets off the list.
func (e *Expected) Group(item string, sets ...TokenSet) {
	e.items = append(e.items, item)
	for _, s := range sets {
		for t := range s {
			delete(e.have, t)
		}
	}
}

// Add lists item.
func (e *Expected) Add(item string) { e.items = append(e.items, item) }

// describeExpected renders an expected-token set for a message: "')'",
// "one of: ...", a group such as "an expression", or "" when there is
// nothing useful to say.
func (s *Syntax) describeExpected(set *antlr.IntervalSet, p antlr.Parser) string {
	if set == nil {
		return ""
	}
	e := &Expected{have: map[int]bool{}}
	for _, iv := range set.GetIntervals() {
		for t := iv.Start; t < iv.Stop; t++ { // Stop is exclusive
			if t != antlr.TokenEpsilon {
				e.have[t] = true
			}
		}
	}
	if len(e.have) == 0 {
		return ""
	}
	if s.Summarize != nil {
		s.Summarize(e, p.GetParserRuleContext())
	}
	symbolic := p.GetSymbolicNames()
	last := NewTokenSet(s.Last...)
	rest := make([]int, 0, len(e.have))
	for t := range e.have {
		if !last[t] {
			rest = append(rest, t)
		}
	}
	sort.Ints(rest)
	for _, t := range rest {
		e.Add(s.displayToken(t, symbolic))
	}
	for _, t := range s.Last {
		if e.have[t] {
			e.Add(s.displayToken(t, symbolic))
		}
	}
	items := e.items
	if len(items) > maxExpected {
		items = append(items[:maxExpected-1:maxExpected-1], "...")
	}
	if len(items) == 1 {
		return items[0]
	}
	return "one of: " + strings.Join(items, ", ")
}

// displayToken names a token type: end of input, the types of Display,
// keywords as 'keyword'.
func (s *Syntax) displayToken(tt int, symbolic []string) string {
	if tt == antlr.TokenEOF {
		return "end of input"
	}
	if d, ok := s.Display[tt]; ok {
		return d
	}
	if tt > 0 && tt < len(symbolic) {
		return "'" + strings.ToLower(symbolic[tt]) + "'"
	}
	return "token " + strconv.Itoa(tt)
}

// describeToken shows an offending token in a message.
func (s *Syntax) describeToken(t antlr.Token) string {
	tt := t.GetTokenType()
	if tt == antlr.TokenEOF {
		return "end of input"
	}
	if kind, ok := s.Kinds[tt]; ok {
		return kind + " " + Shorten(t.GetText())
	}
	return "'" + Shorten(t.GetText()) + "'"
}

// lastStatement is the last child of the start rule's context that is not
// an error node, or nil.
func lastStatement(ctx antlr.ParserRuleContext) antlr.Tree {
	var last antlr.Tree
	for _, ch := range ctx.GetChildren() {
		if _, isErr := ch.(antlr.ErrorNode); !isErr {
			last = ch
		}
	}
	return last
}

// errorListener turns ANTLR's syntax errors into diagnostics and keeps ANTLR
// from printing anything.
type errorListener struct {
	*antlr.DefaultErrorListener
	d      *Diag
	syntax *Syntax
}

func newErrorListener(d *Diag, syntax *Syntax) *errorListener {
	return &errorListener{DefaultErrorListener: antlr.NewDefaultErrorListener(), d: d, syntax: syntax}
}

func (l *errorListener) SyntaxError(rec antlr.Recognizer, offending any, line, column int, msg string, e antlr.RecognitionException) {
	tok, _ := offending.(antlr.Token)
	p, isParser := rec.(antlr.Parser)
	if !isParser || tok == nil {
		// The lexer never fails (ERROR_CHAR catches every character), but
		// keep whatever ANTLR says, positioned.
		l.d.Add(source.Pos{Line: line, Col: column + 1}, "%s", msg)
		return
	}
	pos := TokPos(tok)
	if tok.GetTokenType() == antlr.TokenEOF {
		pos = l.d.eofPos
	}
	var expected *antlr.IntervalSet
	switch e.(type) {
	case nil: // extraneous or missing token, found by inline recovery
		expected = p.GetExpectedTokens()
	case *antlr.InputMisMatchException:
		expected = p.GetExpectedTokens()
	case *antlr.NoViableAltException:
		// The parser stands at the start of the failed decision. Its
		// expected set only describes the offending token when prediction
		// failed on that very token.
		if cur := p.GetCurrentToken(); cur != nil && cur.GetTokenIndex() == tok.GetTokenIndex() {
			expected = p.GetExpectedTokens()
		}
	}
	text := "unexpected " + l.syntax.describeToken(tok)
	ctx := p.GetParserRuleContext()
	if ctx != nil && ctx.GetRuleIndex() == l.syntax.StartRule && tok.GetTokenType() != antlr.TokenEOF {
		// Between statements.
		text += ", expected " + l.syntax.AfterStatement(lastStatement(ctx))
	} else if exp := l.syntax.describeExpected(expected, p); exp != "" {
		text += ", expected " + exp
	}
	l.d.Add(pos, "%s", text)
}
