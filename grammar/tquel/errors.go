package tquel

import (
	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/tquel/gen"
)

// What TQuel's syntax errors say and how the parser recovers from them; the
// machinery is grammar/internal/front's, shared with SDL.

var syntax = front.Syntax{
	StartRule:      gen.TQuelParserRULE_file,
	AfterStatement: afterStatement,
	Summarize:      summarize,
	Display: map[int]string{
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
	},
	// What may start a statement, listed last.
	Last: []int{gen.TQuelLexerRANGE, gen.TQuelLexerRETRIEVE, gen.TQuelLexerSEMI, antlr.TokenEOF},
	Kinds: map[int]string{
		gen.TQuelLexerSTRING: "string",
	},
}

// recovery does not recover inline where keywords usable as names would be
// misread (see noInlineRecovery): `retrieve (p.) retrieve (...)` would
// otherwise take the second `retrieve` for an attribute and lose track of
// the statements.
var recovery = front.Recovery{NoInline: noInlineRecovery}

// noInlineRecovery reports whether recovering by deleting the current token
// or inserting a missing one would misread a keyword: never when the
// current token starts a statement (the statement before is incomplete,
// and the next one should be parsed as such), nor when deletion would read
// the next token as a keyword standing for a name.
func noInlineRecovery(p antlr.Parser) bool {
	if la := p.GetTokenStream().LA(1); la == gen.TQuelLexerRANGE || la == gen.TQuelLexerRETRIEVE {
		return true
	}
	return front.KeywordAsNameAhead(p, nameKeywords, gen.TQuelLexerIDENT)
}

// afterStatement says what may come after the statements parsed so far,
// the last being last.
func afterStatement(last antlr.Tree) string {
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

// nameKeywords are the keyword tokens that may also stand for a name: where
// a name is expected, "name" covers them in an "expected" list.
var nameKeywords = front.NewTokenSet(
	gen.TQuelLexerAGG, gen.TQuelLexerRANGE, gen.TQuelLexerOF, gen.TQuelLexerIS,
	gen.TQuelLexerRETRIEVE, gen.TQuelLexerINTO, gen.TQuelLexerUNIQUE,
	gen.TQuelLexerVALID, gen.TQuelLexerAT, gen.TQuelLexerFROM, gen.TQuelLexerTO,
	gen.TQuelLexerWHERE, gen.TQuelLexerWHEN, gen.TQuelLexerAS, gen.TQuelLexerAND,
	gen.TQuelLexerOR, gen.TQuelLexerNOT, gen.TQuelLexerPRECEDE,
	gen.TQuelLexerOVERLAP, gen.TQuelLexerEQUAL, gen.TQuelLexerEXTEND,
	gen.TQuelLexerBEGIN, gen.TQuelLexerEND, gen.TQuelLexerBY, gen.TQuelLexerFOR,
	gen.TQuelLexerEACH, gen.TQuelLexerINSTANT, gen.TQuelLexerEVER,
)

var identToken = front.NewTokenSet(gen.TQuelLexerIDENT)

// operandStart are the tokens that can begin an expression.
var operandStart = front.NewTokenSet(
	gen.TQuelLexerIDENT, gen.TQuelLexerNUMBER, gen.TQuelLexerSTRING,
	gen.TQuelLexerDURATION, gen.TQuelLexerPARAM, gen.TQuelLexerLPAREN,
	gen.TQuelLexerMINUS, gen.TQuelLexerNOT, gen.TQuelLexerBEGIN,
	gen.TQuelLexerEND, gen.TQuelLexerAGG,
)

// binaryOps are the infix operators, listed as "an operator".
var binaryOps = front.NewTokenSet(
	gen.TQuelLexerEQ, gen.TQuelLexerNE, gen.TQuelLexerLT, gen.TQuelLexerLE,
	gen.TQuelLexerGT, gen.TQuelLexerGE, gen.TQuelLexerPLUS, gen.TQuelLexerMINUS,
	gen.TQuelLexerSTAR, gen.TQuelLexerSLASH, gen.TQuelLexerPERCENT,
	gen.TQuelLexerAND, gen.TQuelLexerOR, gen.TQuelLexerPRECEDE,
	gen.TQuelLexerOVERLAP, gen.TQuelLexerEQUAL, gen.TQuelLexerEXTEND,
)

// summarize lists the start of an expression as "an expression", a name
// (and the keywords that may stand for one) as "name", and most binary
// operators as "an operator".
func summarize(e *front.Expected, _ antlr.ParserRuleContext) {
	if e.Has(gen.TQuelLexerIDENT) && e.Has(gen.TQuelLexerNUMBER) && e.Has(gen.TQuelLexerSTRING) {
		e.Group("an expression", operandStart, nameKeywords)
	}
	if e.Has(gen.TQuelLexerIDENT) {
		e.Group("name", identToken, nameKeywords)
	}
	if e.Count(binaryOps) >= 4 {
		e.Group("an operator", binaryOps)
	}
}
