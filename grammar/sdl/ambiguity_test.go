package sdl

import (
	"testing"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
	"github.com/tqmon/tqmon/grammar/sdl/gen"
)

// The grammar is meant to give every text at most one parse.
func TestGrammarUnambiguous(t *testing.T) {
	texts := []string{
		"entity type entity, type, relation, event, interval, enum, performer, initiator, target, traced, sampled, then, disabled, on, counter, clock",
		"entity relation relation(relation: relation target) traced then disabled on target counter 2 entity type x",
		"event relation on(on: on performer, enum: enum(enum, then, clock) target, clock: clock initiator) sampled on performer clock 1s",
		"interval relation target(target: target target, performer: performer performer, t: initiator) traced on target",
		sensorExample,
		"sensor sensor from tracepoint to:from (at = key.when & 3) key to when and in (1) and in = 2 to tracepoint at:at key key",
	}
	texts = append(texts, fronttest.FuzzSeeds(t)...)
	for i, text := range texts {
		lexer := gen.NewSDLLexer(antlr.NewInputStream(text))
		lexer.RemoveErrorListeners()
		p := gen.NewSDLParser(antlr.NewCommonTokenStream(lexer, antlr.TokenDefaultChannel))
		fronttest.DetectAmbiguities(t, p, text)
		p.Spec()
		if i < 6 {
			if _, err := Parse("t", text); err != nil {
				t.Errorf("%q: %v", text, err)
			}
		}
	}
}
