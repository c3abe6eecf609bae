package display

import (
	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/display/gen"
	"github.com/tqmon/tqmon/grammar/internal/front"
)

// What the display spec's syntax errors say and how the parser recovers
// from them; the machinery is grammar/internal/front's, shared with TQuel
// and SDL.

var syntax = front.Syntax{
	StartRule:      gen.DisplayParserRULE_spec,
	AfterStatement: afterStatement,
	Summarize:      summarize,
	Display: map[int]string{
		gen.DisplayLexerDURATION: "duration",
		gen.DisplayLexerNUMBER:   "number",
		gen.DisplayLexerSTRING:   "string",
		gen.DisplayLexerIDENT:    "name",
		gen.DisplayLexerLPAREN:   "'('",
		gen.DisplayLexerRPAREN:   "')'",
		gen.DisplayLexerCOMMA:    "','",
		gen.DisplayLexerEQ:       "'='",
		gen.DisplayLexerPERCENT:  "'%'",
		gen.DisplayLexerSEMI:     "';'",
	},
	// What may start a statement, listed last.
	Last: []int{
		gen.DisplayLexerDISPLAY, gen.DisplayLexerTIME, gen.DisplayLexerSHOW,
		gen.DisplayLexerSEMI, antlr.TokenEOF,
	},
	Kinds: map[int]string{
		gen.DisplayLexerSTRING: "string",
	},
}

// recovery never drops a token to read the next one as a name: with
// keywords usable as names, a stray token before a statement keyword would
// otherwise turn that keyword into a name and lose track of the statements.
var recovery = front.Recovery{
	NoInline: func(p antlr.Parser) bool {
		return front.KeywordAsNameAhead(p, nameKeywords, gen.DisplayLexerIDENT)
	},
	Insert: true,
}

// nameKeywords are the keyword tokens that may also stand for a name: all
// of them.
var nameKeywords = front.NewTokenSet(
	gen.DisplayLexerDISPLAY, gen.DisplayLexerAS, gen.DisplayLexerTIME, gen.DisplayLexerSHOW,
	gen.DisplayLexerANIMATION, gen.DisplayLexerANIMATIONTRACE, gen.DisplayLexerDECAY,
	gen.DisplayLexerCLOCK, gen.DisplayLexerTIMELINE, gen.DisplayLexerBOX, gen.DisplayLexerCIRCLE,
	gen.DisplayLexerOVAL, gen.DisplayLexerTEXT, gen.DisplayLexerPOINT, gen.DisplayLexerLINE,
	gen.DisplayLexerINSIDE, gen.DisplayLexerARROW, gen.DisplayLexerFLASH, gen.DisplayLexerBLINK,
	gen.DisplayLexerFROM, gen.DisplayLexerTO, gen.DisplayLexerLABEL, gen.DisplayLexerSHADE,
	gen.DisplayLexerCOLOUR, gen.DisplayLexerCOLOR, gen.DisplayLexerORDER, gen.DisplayLexerBY,
	gen.DisplayLexerASC, gen.DisplayLexerDESC, gen.DisplayLexerAT, gen.DisplayLexerLEFT,
	gen.DisplayLexerCENTER, gen.DisplayLexerRIGHT, gen.DisplayLexerFOR, gen.DisplayLexerPLOT,
)

var identToken = front.NewTokenSet(gen.DisplayLexerIDENT)

// summarize lists a name and the keywords that may stand for one as
// "name". Where a name is one choice among keywords (a mapping's colour
// after '='), the keywords are not listed one by one.
func summarize(e *front.Expected, _ antlr.ParserRuleContext) {
	if e.Has(gen.DisplayLexerIDENT) {
		e.Group("name", identToken, nameKeywords)
	}
}

// afterStatement says what may come after the statements parsed so far,
// the last being last.
func afterStatement(last antlr.Tree) string {
	switch st := last.(type) {
	case *gen.DisplayStmtContext:
		return "an aspect ('label', 'shade', 'colour', 'order', 'at', 'for') or a new statement"
	case *gen.TimeStmtContext:
		if st.DECAY() == nil {
			return "'decay' or a new statement"
		}
	}
	return "a statement ('display', 'time' or 'show')"
}
