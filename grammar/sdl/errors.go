package sdl

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/sdl/gen"
	"github.com/tqmon/tqmon/grammar/source"
)

// The error reporting mirrors grammar/tquel/errors.go.

// maxErrors caps the diagnostics of one Parse; one more says "too many
// errors".
const maxErrors = 20

// diag collects the diagnostics of one Parse.
type diag struct {
	file string
	errs source.ErrorList
	// eofPos is where "unexpected end of input" points: just after the last
	// token (or 1:1 for an empty text).
	eofPos Pos
}

// tooManyErrors is panicked by add once the cap is passed, to stop the
// work on hopeless input; Parse recovers it.
type tooManyErrors struct{}

func (d *diag) add(pos Pos, format string, args ...any) {
	d.errs.Add(d.file, pos, format, args...)
	if len(d.errs) > maxErrors {
		panic(tooManyErrors{})
	}
}

// result sorts the diagnostics, caps them and returns them as an error
// (nil when there are none). Past the cap, the diagnostics are the first
// ones found (lexical errors of the whole text come first), then "too many
// errors".
func (d *diag) result() error {
	d.errs.Sort()
	if len(d.errs) > maxErrors {
		extra := d.errs[maxErrors]
		d.errs = append(d.errs[:maxErrors:maxErrors], source.Errorf(d.file, extra.Pos, "too many errors"))
	}
	return d.errs.Err()
}

// tokPos is the 1-based position of a token (ANTLR columns are 0-based
// rune offsets).
func tokPos(t antlr.Token) Pos {
	if t == nil {
		return Pos{}
	}
	return Pos{Line: t.GetLine(), Col: t.GetColumn() + 1}
}

// endPos is the position just after a token, on its line.
func endPos(t antlr.Token) Pos {
	p := tokPos(t)
	p.Col += utf8.RuneCountInString(t.GetText())
	return p
}

// errorListener turns ANTLR's syntax errors into diagnostics and keeps ANTLR
// from printing anything.
type errorListener struct {
	*antlr.DefaultErrorListener
	d *diag
}

func newErrorListener(d *diag) *errorListener {
	return &errorListener{DefaultErrorListener: antlr.NewDefaultErrorListener(), d: d}
}

func (l *errorListener) SyntaxError(rec antlr.Recognizer, offending any, line, column int, msg string, e antlr.RecognitionException) {
	tok, _ := offending.(antlr.Token)
	p, isParser := rec.(antlr.Parser)
	if !isParser || tok == nil {
		// The lexer never fails (ERROR_CHAR catches every character), but
		// keep whatever ANTLR says, positioned.
		l.d.add(Pos{Line: line, Col: column + 1}, "%s", msg)
		return
	}
	pos := tokPos(tok)
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
	text := "unexpected " + describeToken(tok)
	if s, ok := p.GetParserRuleContext().(*gen.SpecContext); ok && tok.GetTokenType() != antlr.TokenEOF {
		// Between statements: what could have continued the statement
		// before is more to the point than what may start the next one.
		text += ", expected " + afterStatement(s)
	} else if exp := describeExpected(expected, p.GetSymbolicNames(), isTypeRef(p.GetParserRuleContext())); exp != "" {
		text += ", expected " + exp
	}
	l.d.add(pos, "%s", text)
}

// isTypeRef reports whether the parser is at an attribute's type, where
// `enum` is not a name but the start of an enumeration.
func isTypeRef(ctx antlr.ParserRuleContext) bool {
	switch ctx.(type) {
	case gen.ITypeRefContext, gen.IAttrContext:
		return true
	}
	return false
}

// afterStatement says what may come after the statements parsed so far: the
// parser only notices a stray token once the statement before it is
// complete.
func afterStatement(s *gen.SpecContext) string {
	var last antlr.Tree
	for _, ch := range s.GetChildren() {
		if _, isErr := ch.(antlr.ErrorNode); !isErr {
			last = ch
		}
	}
	var rel gen.IRelationContext
	switch st := last.(type) {
	case *gen.EntityStmtContext:
		if st.TYPE() != nil {
			return "',' or a new statement"
		}
		rel = st.Relation()
	case *gen.RelationStmtContext:
		rel = st.Relation()
	}
	if rel != nil {
		if str := rel.Strategy(); str == nil {
			return "a strategy or a new statement"
		} else if str.COUNTER() == nil {
			return "'counter' or a new statement"
		}
	}
	return "a statement ('entity', 'event', 'interval' or 'clock')"
}

// errorStrategy is ANTLR's default recovery, except that it never drops a
// token to read the next one as a name: with keywords usable as names, a
// stray token before a statement keyword would otherwise turn that keyword
// into a name and lose track of the statements.
type errorStrategy struct {
	*antlr.DefaultErrorStrategy
}

func newErrorStrategy() *errorStrategy {
	return &errorStrategy{DefaultErrorStrategy: antlr.NewDefaultErrorStrategy()}
}

// keywordAsNameAhead reports whether single-token deletion would read the
// token after the current one as a keyword standing for a name.
func keywordAsNameAhead(p antlr.Parser) bool {
	if !nameKeywords[p.GetTokenStream().LA(2)] {
		return false
	}
	return hasToken(p.GetExpectedTokens(), gen.SDLLexerIDENT)
}

func hasToken(set *antlr.IntervalSet, tt int) bool {
	if set == nil {
		return false
	}
	for _, iv := range set.GetIntervals() {
		if tt >= iv.Start && tt < iv.Stop {
			return true
		}
	}
	return false
}

func (s *errorStrategy) Sync(p antlr.Parser) {
	if s.InErrorRecoveryMode(p) {
		return
	}
	within, ok := p.(interface {
		GetExpectedTokensWithinCurrentRule() *antlr.IntervalSet
	})
	if !ok {
		s.DefaultErrorStrategy.Sync(p)
		return
	}
	next := within.GetExpectedTokensWithinCurrentRule()
	if hasToken(next, antlr.TokenEpsilon) || hasToken(next, p.GetTokenStream().LA(1)) {
		return
	}
	if keywordAsNameAhead(p) {
		p.SetError(antlr.NewInputMisMatchException(p))
		return
	}
	s.DefaultErrorStrategy.Sync(p)
}

func (s *errorStrategy) RecoverInline(p antlr.Parser) antlr.Token {
	if !keywordAsNameAhead(p) {
		return s.DefaultErrorStrategy.RecoverInline(p)
	}
	if s.SingleTokenInsertion(p) {
		return s.GetMissingSymbol(p)
	}
	p.SetError(antlr.NewInputMisMatchException(p))
	return nil
}

// describeToken shows an offending token in a message.
func describeToken(t antlr.Token) string {
	if t.GetTokenType() == antlr.TokenEOF {
		return "end of input"
	}
	return "'" + shorten(t.GetText()) + "'"
}

// shorten cuts long token texts for messages.
func shorten(s string) string {
	const max = 24
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-3]) + "..."
}

// tokenDisplay is how a token type is named in "expected ..." lists.
var tokenDisplay = map[int]string{
	antlr.TokenEOF:       "end of input",
	gen.SDLLexerDURATION: "duration",
	gen.SDLLexerNUMBER:   "number",
	gen.SDLLexerIDENT:    "name",
	gen.SDLLexerLPAREN:   "'('",
	gen.SDLLexerRPAREN:   "')'",
	gen.SDLLexerCOMMA:    "','",
	gen.SDLLexerCOLON:    "':'",
	gen.SDLLexerSEMI:     "';'",
}

// displayToken names a token type: keywords as 'keyword', the rest from
// tokenDisplay.
func displayToken(tt int, symbolic []string) string {
	if s, ok := tokenDisplay[tt]; ok {
		return s
	}
	if tt > 0 && tt < len(symbolic) {
		return "'" + strings.ToLower(symbolic[tt]) + "'"
	}
	return "token " + strconv.Itoa(tt)
}

// nameKeywords are the keyword tokens that may also stand for a name.
var nameKeywords = tokenSet(
	gen.SDLLexerENTITY, gen.SDLLexerTYPE, gen.SDLLexerRELATION, gen.SDLLexerEVENT,
	gen.SDLLexerINTERVAL, gen.SDLLexerENUM, gen.SDLLexerPERFORMER,
	gen.SDLLexerINITIATOR, gen.SDLLexerTARGET, gen.SDLLexerTRACED,
	gen.SDLLexerSAMPLED, gen.SDLLexerTHEN, gen.SDLLexerDISABLED, gen.SDLLexerON,
	gen.SDLLexerCOUNTER, gen.SDLLexerCLOCK,
)

// statementStart are listed last: they are what may follow a complete
// statement, rarely what the user is missing.
var statementStart = []int{
	gen.SDLLexerENTITY, gen.SDLLexerEVENT, gen.SDLLexerINTERVAL, gen.SDLLexerCLOCK,
	gen.SDLLexerSEMI, antlr.TokenEOF,
}

func tokenSet(tts ...int) map[int]bool {
	m := make(map[int]bool, len(tts))
	for _, t := range tts {
		m[t] = true
	}
	return m
}

// maxExpected caps an "expected" list.
const maxExpected = 8

// describeExpected renders an expected-token set for a message: "')'",
// "one of: ...", or "" when there is nothing useful to say. typeRef: the
// set is for an attribute type, where 'enum' is listed.
func describeExpected(set *antlr.IntervalSet, symbolic []string, typeRef bool) string {
	if set == nil {
		return ""
	}
	have := map[int]bool{}
	for _, iv := range set.GetIntervals() {
		for t := iv.Start; t < iv.Stop; t++ { // Stop is exclusive
			if t != antlr.TokenEpsilon {
				have[t] = true
			}
		}
	}
	if len(have) == 0 {
		return ""
	}
	var items []string
	if have[gen.SDLLexerIDENT] {
		items = append(items, "name")
		enum := typeRef && have[gen.SDLLexerENUM]
		delete(have, gen.SDLLexerIDENT)
		for t := range nameKeywords {
			delete(have, t)
		}
		if enum {
			// A type: say that an enum may stand here too.
			items = append(items, "'enum'")
		}
	}
	last := map[int]bool{}
	for _, t := range statementStart {
		last[t] = true
	}
	rest := make([]int, 0, len(have))
	for t := range have {
		if !last[t] {
			rest = append(rest, t)
		}
	}
	sort.Ints(rest)
	for _, t := range rest {
		items = append(items, displayToken(t, symbolic))
	}
	for _, t := range statementStart {
		if have[t] {
			items = append(items, displayToken(t, symbolic))
		}
	}
	if len(items) > maxExpected {
		items = append(items[:maxExpected-1:maxExpected-1], "...")
	}
	if len(items) == 1 {
		return items[0]
	}
	return "one of: " + strings.Join(items, ", ")
}
