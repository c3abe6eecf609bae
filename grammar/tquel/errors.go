package tquel

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/source"
	"github.com/tqmon/tqmon/grammar/tquel/gen"
)

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
	if f, ok := p.GetParserRuleContext().(*gen.FileContext); ok && tok.GetTokenType() != antlr.TokenEOF {
		// Between statements: what could have continued the statement
		// before is more to the point than what may start the next one.
		text += ", expected " + afterStatement(f)
	} else if exp := describeExpected(expected, p.GetSymbolicNames()); exp != "" {
		text += ", expected " + exp
	}
	l.d.add(pos, "%s", text)
}

// afterStatement says what may come after the statements parsed so far: the
// parser only notices a stray token once the statement before it is
// complete.
func afterStatement(f *gen.FileContext) string {
	var last antlr.Tree
	for _, ch := range f.GetChildren() {
		if _, isErr := ch.(antlr.ErrorNode); !isErr {
			last = ch
		}
	}
	switch s := last.(type) {
	case *gen.RetrieveStmtContext:
		if len(s.AllClause()) > 0 {
			return "an operator, a clause or a new statement"
		}
		return "a clause or a new statement"
	case *gen.RangeStmtContext:
		if s.LBRACK() == nil {
			return "'[' or a new statement"
		}
	}
	return "'range' or 'retrieve'"
}

// errorStrategy is ANTLR's default recovery, except that it does not
// recover inline where keywords usable as names would be misread (see
// noInlineRecovery): `retrieve (p.) retrieve (...)` would otherwise take
// the second `retrieve` for an attribute and lose track of the statements.
// It then leaves the rule and resynchronises on what may follow it.
type errorStrategy struct {
	*antlr.DefaultErrorStrategy
}

func newErrorStrategy() *errorStrategy {
	return &errorStrategy{DefaultErrorStrategy: antlr.NewDefaultErrorStrategy()}
}

// noInlineRecovery reports whether recovering by deleting the current token
// or inserting a missing one would misread a keyword: never when the
// current token starts a statement (the statement before is incomplete,
// and the next one should be parsed as such), nor when deletion would read
// the next token as a keyword standing for a name.
func noInlineRecovery(p antlr.Parser) bool {
	ts := p.GetTokenStream()
	if la := ts.LA(1); la == gen.TQuelLexerRANGE || la == gen.TQuelLexerRETRIEVE {
		return true
	}
	if !nameKeywords[ts.LA(2)] {
		return false
	}
	return hasToken(p.GetExpectedTokens(), gen.TQuelLexerIDENT)
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
	if noInlineRecovery(p) {
		p.SetError(antlr.NewInputMisMatchException(p))
		return
	}
	s.DefaultErrorStrategy.Sync(p)
}

func (s *errorStrategy) RecoverInline(p antlr.Parser) antlr.Token {
	if !noInlineRecovery(p) {
		return s.DefaultErrorStrategy.RecoverInline(p)
	}
	p.SetError(antlr.NewInputMisMatchException(p))
	return nil
}

// describeToken shows an offending token in a message.
func describeToken(t antlr.Token) string {
	switch t.GetTokenType() {
	case antlr.TokenEOF:
		return "end of input"
	case gen.TQuelLexerSTRING:
		return "string " + shorten(t.GetText())
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
	antlr.TokenEOF:         "end of input",
	gen.TQuelLexerAGG:      "aggregate",
	gen.TQuelLexerDURATION: "duration",
	gen.TQuelLexerNUMBER:   "number",
	gen.TQuelLexerSTRING:   "string",
	gen.TQuelLexerPARAM:    "parameter",
	gen.TQuelLexerIDENT:    "name",
	gen.TQuelLexerEQ:       "'='",
	gen.TQuelLexerNE:       "'!='",
	gen.TQuelLexerLE:       "'<='",
	gen.TQuelLexerGE:       "'>='",
	gen.TQuelLexerLT:       "'<'",
	gen.TQuelLexerGT:       "'>'",
	gen.TQuelLexerPLUS:     "'+'",
	gen.TQuelLexerMINUS:    "'-'",
	gen.TQuelLexerSTAR:     "'*'",
	gen.TQuelLexerSLASH:    "'/'",
	gen.TQuelLexerPERCENT:  "'%'",
	gen.TQuelLexerLPAREN:   "'('",
	gen.TQuelLexerRPAREN:   "')'",
	gen.TQuelLexerLBRACK:   "'['",
	gen.TQuelLexerRBRACK:   "']'",
	gen.TQuelLexerCOMMA:    "','",
	gen.TQuelLexerDOT:      "'.'",
	gen.TQuelLexerSEMI:     "';'",
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

// nameKeywords are the keyword tokens that may also stand for a name: where
// a name is expected, "name" covers them in an "expected" list.
var nameKeywords = tokenSet(
	gen.TQuelLexerAGG, gen.TQuelLexerRANGE, gen.TQuelLexerOF, gen.TQuelLexerIS,
	gen.TQuelLexerRETRIEVE, gen.TQuelLexerINTO, gen.TQuelLexerUNIQUE,
	gen.TQuelLexerVALID, gen.TQuelLexerAT, gen.TQuelLexerFROM, gen.TQuelLexerTO,
	gen.TQuelLexerWHERE, gen.TQuelLexerWHEN, gen.TQuelLexerAS, gen.TQuelLexerAND,
	gen.TQuelLexerOR, gen.TQuelLexerNOT, gen.TQuelLexerPRECEDE,
	gen.TQuelLexerOVERLAP, gen.TQuelLexerEQUAL, gen.TQuelLexerEXTEND,
	gen.TQuelLexerBEGIN, gen.TQuelLexerEND, gen.TQuelLexerBY, gen.TQuelLexerFOR,
	gen.TQuelLexerEACH, gen.TQuelLexerINSTANT, gen.TQuelLexerEVER,
)

// operandStart are the tokens that can begin an expression.
var operandStart = tokenSet(
	gen.TQuelLexerIDENT, gen.TQuelLexerNUMBER, gen.TQuelLexerSTRING,
	gen.TQuelLexerDURATION, gen.TQuelLexerPARAM, gen.TQuelLexerLPAREN,
	gen.TQuelLexerMINUS, gen.TQuelLexerNOT, gen.TQuelLexerBEGIN,
	gen.TQuelLexerEND, gen.TQuelLexerAGG,
)

// binaryOps are the infix operators, listed as "an operator".
var binaryOps = tokenSet(
	gen.TQuelLexerEQ, gen.TQuelLexerNE, gen.TQuelLexerLT, gen.TQuelLexerLE,
	gen.TQuelLexerGT, gen.TQuelLexerGE, gen.TQuelLexerPLUS, gen.TQuelLexerMINUS,
	gen.TQuelLexerSTAR, gen.TQuelLexerSLASH, gen.TQuelLexerPERCENT,
	gen.TQuelLexerAND, gen.TQuelLexerOR, gen.TQuelLexerPRECEDE,
	gen.TQuelLexerOVERLAP, gen.TQuelLexerEQUAL, gen.TQuelLexerEXTEND,
)

// statementStart are listed last: they are what may follow a complete
// statement, rarely what the user is missing.
var statementStart = tokenSet(
	gen.TQuelLexerRANGE, gen.TQuelLexerRETRIEVE, gen.TQuelLexerSEMI, antlr.TokenEOF,
)

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
// "one of: ...", "an expression", ... or "" when there is nothing useful to
// say.
func describeExpected(set *antlr.IntervalSet, symbolic []string) string {
	if set == nil {
		return ""
	}
	have := map[int]bool{}
	for _, iv := range set.GetIntervals() {
		for t := iv.Start; t < iv.Stop; t++ { // Stop is exclusive
			if t == antlr.TokenEpsilon {
				continue
			}
			have[t] = true
		}
	}
	if len(have) == 0 {
		return ""
	}
	var items []string
	var tail []string
	// A place where an expression may start.
	if have[gen.TQuelLexerIDENT] && have[gen.TQuelLexerNUMBER] && have[gen.TQuelLexerSTRING] {
		items = append(items, "an expression")
		for t := range operandStart {
			delete(have, t)
		}
		for t := range nameKeywords {
			delete(have, t)
		}
	}
	if have[gen.TQuelLexerIDENT] {
		items = append(items, "name")
		delete(have, gen.TQuelLexerIDENT)
		for t := range nameKeywords {
			delete(have, t)
		}
	}
	nOps := 0
	for t := range binaryOps {
		if have[t] {
			nOps++
		}
	}
	if nOps >= 4 {
		items = append(items, "an operator")
		for t := range binaryOps {
			delete(have, t)
		}
	}
	rest := make([]int, 0, len(have))
	for t := range have {
		rest = append(rest, t)
	}
	sort.Ints(rest)
	for _, t := range rest {
		if statementStart[t] {
			continue
		}
		items = append(items, displayToken(t, symbolic))
	}
	for _, t := range []int{gen.TQuelLexerRANGE, gen.TQuelLexerRETRIEVE, gen.TQuelLexerSEMI, antlr.TokenEOF} {
		if have[t] {
			tail = append(tail, displayToken(t, symbolic))
		}
	}
	items = append(items, tail...)
	if len(items) > maxExpected {
		items = append(items[:maxExpected-1:maxExpected-1], "...")
	}
	if len(items) == 1 {
		return items[0]
	}
	return "one of: " + strings.Join(items, ", ")
}
