// Package fronttest holds the test helpers that the front ends
// grammar/tquel, grammar/sdl and grammar/display share: parsing that must
// succeed or fail with given diagnostics, the round trip through the
// canonical text, the fuzzing property of Parse, the fuzz seed corpus and
// the ambiguity check of a generated parser.
package fronttest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/antlr4-go/antlr/v4"

	"github.com/tqmon/tqmon/grammar/internal/front"
	"github.com/tqmon/tqmon/grammar/source"
)

// Front is a front end under test: F is its parsed file, S a statement.
type Front[F, S any] struct {
	// Name is the file name the tests parse under (diagnostics start with
	// it).
	Name   string
	Parse  func(name, text string) (*F, error)
	Stmts  func(*F) []S
	Format func(S) string
	// CheckTree reports the first nil where the tree promises a node, or "".
	CheckTree func(*F) string
	// Dump renders a statement's tree; nil: round trips compare the
	// canonical text only.
	Dump func(S) string
}

// ParseOK parses text, failing the test on an error or an incomplete tree.
func (fe *Front[F, S]) ParseOK(t *testing.T, text string) *F {
	t.Helper()
	f, err := fe.Parse(fe.Name, text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	if msg := fe.CheckTree(f); msg != "" {
		t.Fatalf("Parse(%q): incomplete tree: %s", text, msg)
	}
	return f
}

// RoundTrip checks that the canonical text of every statement of f parses
// back to the same text (and, with Dump, the same tree up to positions).
func (fe *Front[F, S]) RoundTrip(t *testing.T, f *F) {
	t.Helper()
	for _, s := range fe.Stmts(f) {
		text := fe.Format(s)
		g, err := fe.Parse("fmt", text)
		if err != nil {
			t.Errorf("formatted statement does not parse: %q: %v", text, err)
			continue
		}
		gs := fe.Stmts(g)
		if len(gs) != 1 {
			t.Errorf("formatted statement %q parses to %d statements", text, len(gs))
			continue
		}
		if fe.Dump != nil {
			if got, want := fe.Dump(gs[0]), fe.Dump(s); got != want {
				t.Errorf("round trip of %q changed the tree:\n got %s\nwant %s", text, got, want)
			}
		}
		if again := fe.Format(gs[0]); again != text {
			t.Errorf("format not stable:\n first %s\nsecond %s", text, again)
		}
	}
}

// CheckErrors checks that text fails to parse with exactly the diagnostics
// want, as a source.ErrorList and without a File.
func (fe *Front[F, S]) CheckErrors(t *testing.T, text string, want []string) {
	t.Helper()
	f, err := fe.Parse(fe.Name, text)
	if err == nil {
		var b strings.Builder
		for _, s := range fe.Stmts(f) {
			b.WriteString(fe.Format(s) + "\n")
		}
		t.Fatalf("no error; parsed as:\n%s", b.String())
	}
	if f != nil {
		t.Errorf("a File with the error")
	}
	var list source.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is %T, not a source.ErrorList", err)
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.ReplaceAll(got, "\n", "\n\t"), strings.Join(want, "\n\t"))
	}
}

// MaxFuzzLen is the longest text Fuzz parses; longer ones are skipped. Go's
// fuzzer minimizes every input that finds new coverage, in time quadratic in
// its length, and fuzzes nothing meanwhile: texts of a few kilobytes stalled
// it for minutes. Every construct of the three grammars fits in a statement
// of a few hundred bytes (as every seed does).
const MaxFuzzLen = 256

// Fuzz is the fuzzing property of Parse: it never panics; failures are
// positioned diagnostics inside the text (see CheckDiagnostics); successes
// give complete trees that survive RoundTrip. Texts longer than MaxFuzzLen
// are not parsed.
func (fe *Front[F, S]) Fuzz(t *testing.T, text string) {
	if len(text) > MaxFuzzLen {
		return
	}
	file, err := fe.Parse("fuzz", text)
	if err != nil {
		if file != nil {
			t.Fatal("File returned with an error")
		}
		CheckDiagnostics(t, text, err)
		return
	}
	if msg := fe.CheckTree(file); msg != "" {
		t.Fatalf("incomplete tree: %s", msg)
	}
	fe.RoundTrip(t, file)
}

// AddSeeds adds texts to f's seed corpus, each cut into pieces of whole
// statements (a statement starts on a line that does not begin with a
// space or a tab) no longer than MaxFuzzLen.
func AddSeeds(f *testing.F, texts ...string) {
	for _, text := range texts {
		for _, piece := range SplitSeed(text) {
			f.Add(piece)
		}
	}
}

// SplitSeed cuts text into pieces of whole statements, each as long as it
// can be without passing MaxFuzzLen (a longer statement is a piece alone).
func SplitSeed(text string) []string {
	var stmts []string
	for _, line := range strings.SplitAfter(text, "\n") {
		if n := len(stmts); n > 0 && (line == "" || line[0] == ' ' || line[0] == '\t') {
			stmts[n-1] += line
		} else {
			stmts = append(stmts, line)
		}
	}
	var pieces []string
	for _, s := range stmts {
		if n := len(pieces); n > 0 && len(pieces[n-1])+len(s) <= MaxFuzzLen {
			pieces[n-1] += s
		} else {
			pieces = append(pieces, s)
		}
	}
	return pieces
}

// CheckDiagnostics: every diagnostic of err names the file "fuzz", points
// into the text (or just past its end) and says something.
func CheckDiagnostics(t *testing.T, text string, err error) {
	t.Helper()
	list := source.Diagnostics(err)
	if len(list) == 0 || len(list) > front.MaxErrors+1 {
		t.Fatalf("%d diagnostics: %v", len(list), err)
	}
	lines := strings.Split(text, "\n")
	for _, d := range list {
		if d.File != "fuzz" || d.Msg == "" || !d.Pos.IsValid() {
			t.Fatalf("bad diagnostic %#v", d)
		}
		if d.Pos.Line > len(lines) || d.Pos.Col > utf8.RuneCountInString(lines[d.Pos.Line-1])+1 {
			t.Fatalf("diagnostic outside the text: %v", d)
		}
		if strings.HasPrefix(d.Msg, "internal parser error") {
			t.Fatalf("panic: %v", d)
		}
	}
}

// FuzzSeeds are the texts of the package's FuzzParse seed corpus
// (testdata/fuzz/FuzzParse).
func FuzzSeeds(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/fuzz/FuzzParse/*")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
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

// DetectAmbiguities makes p, a generated parser about to parse text, fail
// the test on every exact ambiguity ANTLR finds: the grammars are meant to
// give every text at most one parse.
func DetectAmbiguities(t *testing.T, p antlr.Parser, text string) {
	p.RemoveErrorListeners()
	p.AddErrorListener(&ambiguityListener{DefaultErrorListener: antlr.NewDefaultErrorListener(), t: t, text: text})
	p.GetInterpreter().SetPredictionMode(antlr.PredictionModeLLExactAmbigDetection)
}

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
