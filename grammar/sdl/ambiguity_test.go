package sdl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// ambiguityListener fails the test on every exact ambiguity ANTLR finds:
// the grammar is meant to give every text at most one parse.
type ambiguityListener struct {
	*antlr.DefaultErrorListener
	t    *testing.T
	text string
}

func (l *ambiguityListener) ReportAmbiguity(p antlr.Parser, _ *antlr.DFA, start, stop int, exact bool, alts *antlr.BitSet, _ *antlr.ATNConfigSet) {
	if exact {
		toks := p.GetTokenStream().(*antlr.CommonTokenStream)
		l.t.Errorf("ambiguity over %q (alternatives %s) in %q",
			toks.GetTextFromInterval(antlr.NewInterval(start, stop)), alts, l.text)
	}
}

func TestGrammarUnambiguous(t *testing.T) {
	texts := []string{
		"entity type entity, type, relation, event, interval, enum, performer, initiator, target, traced, sampled, then, disabled, on, counter, clock",
		"entity relation relation(relation: relation target) traced then disabled on target counter 2 entity type x",
		"event relation on(on: on performer, enum: enum(enum, then, clock) target, clock: clock initiator) sampled on performer clock 1s",
		"interval relation target(target: target target, performer: performer performer, t: initiator) traced on target",
	}
	files, err := filepath.Glob("testdata/fuzz/FuzzParse/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, lit, _ := strings.Cut(string(data), "\n")
		lit = strings.TrimSpace(lit)
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lit, "string("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		texts = append(texts, s)
	}
	for i, text := range texts {
		lexer := gen.NewSDLLexer(antlr.NewInputStream(text))
		lexer.RemoveErrorListeners()
		p := gen.NewSDLParser(antlr.NewCommonTokenStream(lexer, antlr.TokenDefaultChannel))
		p.RemoveErrorListeners()
		p.AddErrorListener(&ambiguityListener{DefaultErrorListener: antlr.NewDefaultErrorListener(), t: t, text: text})
		p.GetInterpreter().SetPredictionMode(antlr.PredictionModeLLExactAmbigDetection)
		p.Spec()
		if i < 4 {
			if _, err := Parse("t", text); err != nil {
				t.Errorf("%q: %v", text, err)
			}
		}
	}
}
