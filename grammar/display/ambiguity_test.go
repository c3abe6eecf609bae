package display

import (
	"testing"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/display/gen"
	"github.com/tqmon/tqmon/grammar/internal/fronttest"
)

// The grammar is meant to give every text at most one parse, keywords as
// names included.
func TestGrammarUnambiguous(t *testing.T) {
	texts := []string{
		"display display as box label label shade shade (shade = 1%) colour colour (colour = colour) order by order desc at left for 1s",
		"display as as line from from to to label line display line as line",
		"display time as flash time for 1s time animation decay 1s show clock show timeline",
		"display at as inside (at, for) at center display for as point",
		"display plot as plot plot label plot colour plot for 1s display p as plot as",
	}
	texts = append(texts, fronttest.FuzzSeeds(t)...)
	for i, text := range texts {
		lexer := gen.NewDisplayLexer(antlr.NewInputStream(text))
		lexer.RemoveErrorListeners()
		p := gen.NewDisplayParser(antlr.NewCommonTokenStream(lexer, antlr.TokenDefaultChannel))
		fronttest.DetectAmbiguities(t, p, text)
		p.Spec()
		if i < 5 {
			if _, err := Parse("t", text); err != nil {
				t.Errorf("%q: %v", text, err)
			}
		}
	}
}
