package exec_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

// sliceSource yields a history's elements in time order.
type sliceSource struct {
	rels  []string
	elems []stream.Elem
	i     int
}

func (s *sliceSource) Next() (string, stream.Elem, bool, error) {
	if s.i == len(s.elems) {
		return "", stream.Elem{}, false, nil
	}
	s.i++
	return s.rels[s.i-1], s.elems[s.i-1], true, nil
}

func historySource(h *algebra.History) *sliceSource {
	type item struct {
		rel string
		e   stream.Elem
	}
	var items []item
	for _, r := range h.Catalog.Relations {
		for _, row := range h.Table(r.Name).Rows {
			rec := &stream.Rec{Vals: row.Vals, From: row.From}
			if r.IsEvent() {
				items = append(items, item{r.Name, stream.Elem{Kind: stream.Event, T: row.From, Rec: rec}})
				continue
			}
			items = append(items, item{r.Name, stream.Elem{Kind: stream.Begin, T: row.From, Rec: rec}})
			if row.To != algebra.Forever {
				items = append(items, item{r.Name, stream.Elem{Kind: stream.End, T: row.To, Rec: rec}})
			}
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		if a.e.T != b.e.T {
			if a.e.T < b.e.T {
				return -1
			}
			return 1
		}
		pa, pb := 1, 1
		if a.e.Kind == stream.End {
			pa = 0
		}
		if b.e.Kind == stream.End {
			pb = 0
		}
		return pa - pb
	})
	s := &sliceSource{}
	for _, it := range items {
		s.rels = append(s.rels, it.rel)
		s.elems = append(s.elems, it.e)
	}
	return s
}

// TestRunSource: streaming a history through RunSource gives what
// RunHistory gives, for the whole corpus.
func TestRunSource(t *testing.T) {
	root := testkit.Root(t)
	cat := testkit.LoadCatalog(t, filepath.Join(root, "testdata/differential/spec.sdl"))
	for _, q := range testkit.ReadCorpus(t, filepath.Join(root, "testdata/differential/queries.tq")) {
		cfg := histgen.DefaultConfig(0)
		stmts := testkit.Compile(t, cat, q.Name, q.Text, cfg.Span)
		for seed := uint64(0); seed < 30; seed++ {
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
			start, end, ok := h.Extent()
			var w *algebra.Window
			if ok {
				w = &algebra.Window{From: start, To: end}
			}
			if _, err := net.RunSource(historySource(h), w); err != nil {
				t.Fatal(err)
			}
			for i, s := range net.Stmts {
				if g, w := render(s.Result.Table()), render(want[i]); g != w {
					t.Fatalf("%s seed %d: RunSource\n%s\nRunHistory\n%s", q.Name, seed, g, w)
				}
			}
		}
	}
}
