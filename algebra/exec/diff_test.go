package exec_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/ref"
)

// diffHistories is how many random histories the differential test uses:
// TQMON_DIFF_HISTORIES overrides it (make test-long runs thousands).
func diffHistories() int {
	if s := os.Getenv("TQMON_DIFF_HISTORIES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 50
	}
	return 300
}

// TestDifferential holds the incremental interpreter to the reference
// evaluator: every query of the corpus, over many random histories, must
// give exactly the same result relations.
func TestDifferential(t *testing.T) {
	root := repoRoot(t)
	cat := loadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	corpus := readCorpus(t, filepath.Join(root, "testdata/differential/queries.tq"))
	if len(corpus) < 20 {
		t.Fatalf("corpus has %d queries, want at least 20", len(corpus))
	}
	n := diffHistories()
	for _, q := range corpus {
		t.Run(q.Name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			stmts := compile(t, cat, q.Name, q.Text, cfg.Span)
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				want, err := ref.Eval(h, stmts)
				if err != nil {
					t.Fatalf("seed %d: reference: %v", seed, err)
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
