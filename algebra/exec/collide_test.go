package exec

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/internal/testkit"
)

// TestHashCollisionsToldApart: Coalesce groups and join indexes are keyed
// by a 64-bit hash and must tell apart keys whose hashes collide. Under a
// hash with two values (Options.collide) — every group and index list a
// chain of unequal keys — every query of the differential corpus still
// gives the reference evaluator's results.
func TestHashCollisionsToldApart(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	corpus := testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq"))
	n := max(testkit.Histories()/10, 5)
	for _, q := range corpus {
		cfg := histgen.DefaultConfig(0)
		cfg.Edges = true
		stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
		plans := make([]plan.Node, len(stmts))
		for i, s := range stmts {
			plans[i] = plan.Translate(s)
		}
		for seed := 0; seed < n; seed++ {
			cfg.Seed = uint64(seed)
			h := histgen.Random(cat, cfg)
			want, err := ref.Eval(h, stmts)
			if err != nil {
				continue // runtime errors are the differential test's
			}
			net, err := Build(cat, stmts, plans, Options{collide: true})
			if err != nil {
				t.Fatalf("%s: %v", q.Name, err)
			}
			if err := net.RunHistory(h); err != nil {
				t.Fatalf("%s, seed %d: %v", q.Name, seed, err)
			}
			for i, s := range net.Stmts {
				if got, w := dump(s.Result.Table()), dump(want[i]); got != w {
					t.Fatalf("%s, seed %d, statement %d: with colliding hashes\n%s\nwant\n%s", q.Name, seed, i+1, got, w)
				}
			}
		}
	}
}

func dump(t *algebra.Table) string {
	var b strings.Builder
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%v %d %d\n", r.Vals, r.From, r.To)
	}
	return b.String()
}
