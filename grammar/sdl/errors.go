package sdl

import (
	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// What SDL's syntax errors say and how the parser recovers from them; the
// machinery is grammar/internal/front's, shared with TQuel.

var syntax = front.Syntax{
	StartRule:      gen.SDLParserRULE_spec,
	AfterStatement: afterStatement,
	Summarize:      summarize,
	Display: map[int]string{
		gen.SDLLexerDURATION: "duration",
		gen.SDLLexerNUMBER:   "number",
		gen.SDLLexerIDENT:    "name",
		gen.SDLLexerLPAREN:   "'('",
		gen.SDLLexerRPAREN:   "')'",
		gen.SDLLexerCOMMA:    "','",
		gen.SDLLexerCOLON:    "':'",
		gen.SDLLexerSEMI:     "';'",
		gen.SDLLexerSTRING:   "string",
		gen.SDLLexerEQ:       "'='",
		gen.SDLLexerNE:       "'!='",
		gen.SDLLexerLT:       "'<'",
		gen.SDLLexerLE:       "'<='",
		gen.SDLLexerGT:       "'>'",
		gen.SDLLexerGE:       "'>='",
		gen.SDLLexerAMP:      "'&'",
		gen.SDLLexerDOT:      "'.'",
	},
	// What may start a statement, listed last.
	Last: []int{
		gen.SDLLexerENTITY, gen.SDLLexerEVENT, gen.SDLLexerINTERVAL, gen.SDLLexerCLOCK,
		gen.SDLLexerSENSOR, gen.SDLLexerSEMI, antlr.TokenEOF,
	},
}

// recovery never drops a token to read the next one as a name: with
// keywords usable as names, a stray token before a statement keyword would
// otherwise turn that keyword into a name and lose track of the statements.
var recovery = front.Recovery{
	NoInline: func(p antlr.Parser) bool {
		return front.KeywordAsNameAhead(p, nameKeywords, gen.SDLLexerIDENT)
	},
	Insert: true,
}

// nameKeywords are the keyword tokens that may also stand for a name.
var nameKeywords = front.NewTokenSet(
	gen.SDLLexerENTITY, gen.SDLLexerTYPE, gen.SDLLexerRELATION, gen.SDLLexerEVENT,
	gen.SDLLexerINTERVAL, gen.SDLLexerENUM, gen.SDLLexerPERFORMER,
	gen.SDLLexerINITIATOR, gen.SDLLexerTARGET, gen.SDLLexerTRACED,
	gen.SDLLexerSAMPLED, gen.SDLLexerTHEN, gen.SDLLexerDISABLED, gen.SDLLexerON,
	gen.SDLLexerCOUNTER, gen.SDLLexerCLOCK, gen.SDLLexerSENSOR, gen.SDLLexerAT,
	gen.SDLLexerFROM, gen.SDLLexerTO, gen.SDLLexerTRACEPOINT, gen.SDLLexerUPROBE,
	gen.SDLLexerURETPROBE, gen.SDLLexerKEY, gen.SDLLexerWHEN, gen.SDLLexerAND, gen.SDLLexerIN,
)

var identToken = front.NewTokenSet(gen.SDLLexerIDENT)

// summarize lists a name and the keywords that may stand for one as
// "name", followed by 'enum' at an attribute's type.
func summarize(e *front.Expected, ctx antlr.ParserRuleContext) {
	if !e.Has(gen.SDLLexerIDENT) {
		return
	}
	enum := isTypeRef(ctx) && e.Has(gen.SDLLexerENUM)
	e.Group("name", identToken, nameKeywords)
	if enum {
		// A type: say that an enum may stand here too.
		e.Add("'enum'")
	}
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

// afterStatement says what may come after the statements parsed so far,
// the last being last.
func afterStatement(last antlr.Tree) string {
	var rel gen.IRelationContext
	switch st := last.(type) {
	case *gen.EntityStmtContext:
		if st.TYPE() != nil {
			return "',' or a new statement"
		}
		rel = st.Relation()
	case *gen.RelationStmtContext:
		rel = st.Relation()
	case *gen.SensorStmtContext:
		cl := st.AllProbeClause()
		if len(cl) == 0 {
			break
		}
		last := cl[len(cl)-1]
		switch {
		case last.WHEN() != nil:
			return "'and' or a new statement"
		case last.KEY() != nil:
			return "'when' or a new statement"
		case st.FROM() != nil && st.TO() == nil:
			return "'to'"
		case last.Binds() == nil:
			return "'(' or a new statement"
		}
		return "'key', 'when' or a new statement"
	}
	if rel != nil {
		if str := rel.Strategy(); str == nil {
			return "a strategy or a new statement"
		} else if str.COUNTER() == nil {
			return "'counter' or a new statement"
		}
	}
	return "a statement ('entity', 'event', 'interval', 'clock' or 'sensor')"
}
