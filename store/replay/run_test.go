package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/db"
)

var diffDir = filepath.Join("..", "..", "testdata", "differential")

func renderResults(tables []*algebra.Table) string {
	var b strings.Builder
	for _, t := range tables {
		b.WriteString(testkit.Rows(t) + "--\n")
	}
	return b.String()
}

func diffSpec(t testing.TB) db.Spec {
	return db.Spec{Name: "spec.sdl", Text: testkit.ReadFile(t, filepath.Join(diffDir, "spec.sdl"))}
}

// TestRunMatchesHistory: every query of the differential, rule and
// timeslice corpora gives over a database the results it gives over the
// history imported into it, for random histories — with small blocks and
// frequent checkpoints, so windowed reads start at checkpoints and look
// ends up.
func TestRunMatchesHistory(t *testing.T) {
	spec := diffSpec(t)
	cat := testkit.LoadCatalog(t, filepath.Join(diffDir, "spec.sdl"))
	var corpus []testkit.Query
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		corpus = append(corpus, testkit.ReadCorpus(t, filepath.Join(diffDir, f))...)
	}
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	partial := 0
	for seed := 0; seed < seeds; seed++ {
		cfg := histgen.DefaultConfig(uint64(seed))
		cfg.Tuples = 25
		cfg.Span = 50
		cfg.Integrity = seed%2 == 1
		h := histgen.Random(cat, cfg)
		d, err := db.CreateInMemory(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Import(h, db.WriterOptions{BlockElems: 4, CheckpointElems: 6, CheckpointFactor: 1}, nil); err != nil {
			t.Fatal(err)
		}
		_, now, _ := h.Extent()
		blocks := map[string]int{}
		for _, s := range d.Stats() {
			blocks[s.Name] = int(s.Blocks)
		}
		for _, q := range corpus {
			prog, err := query.Compile(d.Catalog(), []query.Source{{Name: q.Name, Text: q.Text}}, check.Options{Now: now})
			if err != nil {
				t.Fatalf("%s: %v", q.Name, err)
			}
			want, _, err := prog.RunHistory(h)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := Plan(d.Catalog(), prog.Stmts)
			if err != nil {
				t.Fatal(err)
			}
			got, st, err := Run(d, plan, Options{})
			if err != nil {
				t.Fatalf("%s seed %d: %v", q.Name, seed, err)
			}
			var gt, wt []*algebra.Table
			for i := range want {
				gt, wt = append(gt, got[i].Table), append(wt, want[i].Table)
			}
			if g, w := renderResults(gt), renderResults(wt); g != w {
				t.Fatalf("%s seed %d: over the database\n%s\nover the history\n%s", q.Name, seed, g, w)
			}
			whole, windowed := 0, false
			for _, r := range st.Reads {
				whole += blocks[r.Rel]
				windowed = windowed || r.Window != nil
			}
			if windowed && st.Read.Blocks < whole {
				partial++
			}
		}
		d.Close()
	}
	if partial == 0 {
		t.Error("no query read only part of the database")
	}
	t.Logf("%d queries × %d histories; %d runs read only part of the relations they scan", len(corpus), seeds, partial)
}
