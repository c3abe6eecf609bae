package exec_test

import (
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestTableSource: a history played through TableSource and RunSource
// gives what RunHistory gives.
func TestTableSource(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	for _, q := range testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq"))[:12] {
		cfg := histgen.DefaultConfig(0)
		stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
		for seed := uint64(0); seed < 10; seed++ {
			cfg.Seed = seed
			h := histgen.Random(cat, cfg)
			want, _, err := interpret(cat, h, stmts, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			plans := make([]plan.Node, len(stmts))
			for i, s := range stmts {
				plans[i] = plan.Translate(s)
			}
			net, err := exec.Build(cat, stmts, plans, exec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			start, end, _ := h.Extent()
			if _, err := net.RunSource(stream.TableSource(h), &algebra.Window{From: start, To: end}); err != nil {
				t.Fatal(err)
			}
			for i, s := range net.Stmts {
				if g, w := render(s.Result.Table()), render(want[i]); g != w {
					t.Fatalf("%s seed %d: TableSource\n%s\nRunHistory\n%s", q.Name, seed, g, w)
				}
			}
		}
	}
}
