package tquel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/tquel/gen"
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
		l.t.Errorf("ambiguity in rule %s over %q (alternatives %s) in %q",
			p.GetRuleNames()[p.GetParserRuleContext().GetRuleIndex()],
			toks.GetTextFromInterval(antlr.NewInterval(start, stop)), alts, l.text)
	}
}

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
	return texts
}

func TestGrammarUnambiguous(t *testing.T) {
	for _, text := range ambiguityCorpus(t) {
		lexer := gen.NewTQuelLexer(antlr.NewInputStream(text))
		lexer.RemoveErrorListeners()
		p := gen.NewTQuelParser(antlr.NewCommonTokenStream(lexer, antlr.TokenDefaultChannel))
		p.RemoveErrorListeners()
		p.AddErrorListener(&ambiguityListener{DefaultErrorListener: antlr.NewDefaultErrorListener(), t: t, text: text})
		p.GetInterpreter().SetPredictionMode(antlr.PredictionModeLLExactAmbigDetection)
		p.File()
	}
	// The keyword-as-name texts above are valid TQuel.
	for _, text := range ambiguityCorpus(t)[:9] {
		if _, err := Parse("t", text); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
}
