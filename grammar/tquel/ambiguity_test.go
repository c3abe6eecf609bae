package tquel

import (
	"testing"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/fronttest"
	"github.com/tqmon/tqmon/grammar/tquel/gen"
)

// ambiguityCorpus is the fuzz seed corpus plus texts that use keywords as
// names in every place that allows them.
func ambiguityCorpus(t *testing.T) []string {
	texts := []string{
		"range of is is is; range of of is of; range of at is range; range of from is retrieve[1]",
		"retrieve count (count = count + max, min = min(max), any is any(any by any for each 1s))",
		"retrieve where (where = is.of, valid = into.unique, not = at.each, each = from.from, at.all)",
		"retrieve (x = of + is - into * unique / at % from + each - instant + ever)",
		"retrieve into range unique (p.range, p.of, p.is, p.retrieve, p.into, p.unique, p.valid, p.at)",
		"retrieve (p.from, p.to, p.where, p.when, p.as, p.and, p.or, p.not, p.precede, p.overlap)",
		"retrieve (p.equal, p.extend, p.begin, p.end, p.by, p.for, p.each, p.instant, p.ever, p.count)",
		"retrieve (x = - - not - begin of end of a)",
		"retrieve (x = a) valid from at to from where of = is when each precede instant as of ever",
	}
	return append(texts, fronttest.FuzzSeeds(t)...)
}

// The grammar is meant to give every text at most one parse.
func TestGrammarUnambiguous(t *testing.T) {
	for _, text := range ambiguityCorpus(t) {
		lexer := gen.NewTQuelLexer(antlr.NewInputStream(text))
		lexer.RemoveErrorListeners()
		p := gen.NewTQuelParser(antlr.NewCommonTokenStream(lexer, antlr.TokenDefaultChannel))
		fronttest.DetectAmbiguities(t, p, text)
		p.File()
	}
	// The keyword-as-name texts above are valid TQuel.
	for _, text := range ambiguityCorpus(t)[:9] {
		if _, err := Parse("t", text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}
