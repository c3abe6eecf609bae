package exec_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestDifferential holds the incremental interpreter to the reference
// evaluator: every query of the corpus, over many random histories, must
// give exactly the same result relations.
func TestDifferential(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	corpus := testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq"))
	if len(corpus) < 20 {
		t.Fatalf("corpus has %d queries, want at least 20", len(corpus))
	}
	n := testkit.Histories()
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Edges = true // histories across the epoch and at the ends of time too
			stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				want, err := ref.Eval(h, stmts)
				if err != nil {
					// A runtime error (an overflow at the ends of time) is a
					// result too: the interpreter must stop with the same one.
					for _, sweep := range []int{0, 1} {
						if _, _, ierr := interpret(cat, h, stmts, exec.Options{SweepMin: sweep}); ierr == nil || ierr.Error() != err.Error() {
							t.Fatalf("seed %d (sweep %d): reference fails with %v, interpreter with %v\n--- history\n%s", seed, sweep, err, ierr, dumpHistory(h))
						}
					}
					continue
				}
				for i := range want {
					if len(want[i].Rows) > 0 {
						nonEmpty++
					}
				}
				// Once with the default purge policy, once sweeping stored
				// tuples at every step so purging is exercised on small
				// histories too.
				for _, sweep := range []int{0, 1} {
					got, _, err := interpret(cat, h, stmts, exec.Options{SweepMin: sweep})
					if err != nil {
						t.Fatalf("seed %d: interpreter: %v", seed, err)
					}
					for i := range want {
						if g, w := render(got[i]), render(want[i]); g != w {
							t.Fatalf("seed %d, statement %d (sweep %d): interpreter and reference differ\n--- interpreter\n%s--- reference\n%s--- history\n%s",
								seed, i+1, sweep, g, w, dumpHistory(h))
						}
					}
				}
			}
			if nonEmpty == 0 {
				t.Errorf("every result was empty over %d histories: the query tests nothing", n)
			}
		})
	}
}
