package sdl

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tqmon/tqmon/grammar/source"
)

// FuzzParse: Parse never panics; failures are positioned diagnostics inside
// the text; successes give complete trees whose canonical text parses back
// to the same text.
func FuzzParse(f *testing.F) {
	f.Add(sdlExample)
	f.Fuzz(func(t *testing.T, text string) {
		file, err := Parse("fuzz", text)
		if err != nil {
			if file != nil {
				t.Fatal("File returned with an error")
			}
			checkDiagnostics(t, text, err)
			return
		}
		if msg := checkTree(file); msg != "" {
			t.Fatalf("incomplete tree: %s", msg)
		}
		for _, s := range file.Stmts {
			text1 := FormatStmt(s)
			g, err := Parse("fmt", text1)
			if err != nil {
				t.Fatalf("canonical text does not parse:\n%s\n%v", text1, err)
			}
			if len(g.Stmts) != 1 {
				t.Fatalf("canonical text %q gives %d statements", text1, len(g.Stmts))
			}
			if text2 := FormatStmt(g.Stmts[0]); text2 != text1 {
				t.Fatalf("format not stable:\n%s\n%s", text1, text2)
			}
		}
	})
}

// checkDiagnostics: every diagnostic names the file, points into the text
// (or just past its end) and says something.
func checkDiagnostics(t *testing.T, text string, err error) {
	t.Helper()
	list := source.Diagnostics(err)
	if len(list) == 0 || len(list) > maxErrors+1 {
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
