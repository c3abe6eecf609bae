package exec_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/internal/testkit"
)

var fuzzOnce struct {
	sync.Once
	cat   *algebra.Catalog
	hists []*algebra.History
}

// maxFuzzQuery is the longest text FuzzQuery runs; longer ones are
// skipped. Go's fuzzer minimizes every input that finds new coverage, in
// time quadratic in its length (here each try may run both evaluators), and
// fuzzes nothing meanwhile. Every query of the differential corpus fits.
const maxFuzzQuery = 256

// FuzzQuery feeds arbitrary TQuel through the parser and the checker and,
// when it checks, runs it through the incremental interpreter and the
// reference evaluator over a few random histories: nothing may panic, and
// the two evaluators must agree exactly. Seeds are the differential corpus,
// its queries without their comments and surrounding blank lines.
func FuzzQuery(f *testing.F) {
	root := testkit.Root(f)
	fuzzOnce.Do(func() {
		fuzzOnce.cat = testkit.LoadCatalog(f, filepath.Join(root, "testdata/differential/spec.sdl"))
		for seed := uint64(0); seed < 3; seed++ {
			cfg := histgen.DefaultConfig(seed)
			cfg.Tuples = 5
			fuzzOnce.hists = append(fuzzOnce.hists, histgen.Random(fuzzOnce.cat, cfg))
		}
	})
	for _, q := range testkit.ReadCorpus(f, filepath.Join(root, "testdata/differential/queries.tq")) {
		var lines []string
		for _, l := range strings.Split(q.Text, "\n") {
			if !strings.HasPrefix(l, "--") && strings.TrimSpace(l) != "" {
				lines = append(lines, l)
			}
		}
		if text := strings.Join(lines, "\n"); len(text) <= maxFuzzQuery {
			f.Add(text)
		} else {
			f.Fatalf("query %s is longer than %d bytes: raise maxFuzzQuery", q.Name, maxFuzzQuery)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > maxFuzzQuery {
			return
		}
		cat := fuzzOnce.cat
		file, err := tquel.Parse("q", text)
		if err != nil {
			return
		}
		stmts, err := check.NewSession(cat, check.Options{Now: 30, Params: map[string]string{"p": "P1"}}).Check(file)
		if err != nil || len(stmts) == 0 {
			return
		}
		// Keep runs small: the reference evaluator is exponential in the
		// number of variables.
		for _, s := range stmts {
			if totalVars(s) > 3 {
				return
			}
		}
		start := time.Now()
		for _, h := range fuzzOnce.hists {
			want, werr := ref.Eval(h, stmts)
			got, _, gerr := interpret(cat, h, stmts, exec.Options{SweepMin: 1})
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("reference error %v, interpreter error %v\n%s", werr, gerr, text)
			}
			if werr != nil {
				continue
			}
			for i := range want {
				if g, w := render(got[i]), render(want[i]); g != w {
					t.Fatalf("statement %d differs\n%s\n--- interpreter\n%s--- reference\n%s--- history\n%s", i+1, text, g, w, dumpHistory(h))
				}
			}
			if time.Since(start) > 5*time.Second {
				return
			}
		}
	})
}

// totalVars counts a retrieve's variables and its aggregates', nested.
func totalVars(r *check.Retrieve) int {
	n := len(r.Vars)
	for _, g := range r.Aggs {
		n += totalVars(g.Inner)
	}
	return n
}
