package exec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/store/history"
)

// TestWorkedExamples runs docs/tquel.md's worked examples (testdata/tquel) through
// the interpreter and the reference evaluator; both must give the result the
// language reference states.
func TestWorkedExamples(t *testing.T) {
	dir := filepath.Join(testkit.Root(t), "testdata/tquel")
	h, err := history.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.tq"))
	if len(files) < 9 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".tq")
		t.Run(name, func(t *testing.T) {
			text, _ := os.ReadFile(f)
			want, err := os.ReadFile(strings.TrimSuffix(f, ".tq") + ".expected.csv")
			if err != nil {
				t.Fatal(err)
			}
			stmts := testkit.Compile(t, h.Catalog, f, string(text), 0)
			got, _, err := interpret(h.Catalog, h, stmts, exec.Options{SweepMin: 1})
			if err != nil {
				t.Fatal(err)
			}
			if g := render(got[len(got)-1]); g != string(want) {
				t.Errorf("interpreter:\n%s\nwant:\n%s", g, want)
			}
			refd, err := ref.Eval(h, stmts)
			if err != nil {
				t.Fatal(err)
			}
			if g := render(refd[len(refd)-1]); g != string(want) {
				t.Errorf("reference:\n%s\nwant:\n%s", g, want)
			}
		})
	}
}
