package rewrite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/plan"
	"github.com/tqmon/tqmon/algebra/ref"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/grammar/tquel"
	"github.com/tqmon/tqmon/rewrite"
	"github.com/tqmon/tqmon/sensor"
)

func catalog(t testing.TB, path string) *algebra.Catalog {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := sdl.Parse(path, string(text))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sensor.Compile(f)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

type corpusQuery struct {
	name, text string
	rules      []string
	emptyOK    bool
}

func readCorpus(t testing.TB, path string) []corpusQuery {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusQuery
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		name, ok := strings.CutPrefix(l, "-- query: ")
		if !ok {
			continue
		}
		q := corpusQuery{name: strings.TrimSpace(name)}
		var b strings.Builder
		for j := 0; j <= i; j++ {
			b.WriteString("\n")
		}
		for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], "-- query: "); j++ {
			if r, ok := strings.CutPrefix(lines[j], "-- rules: "); ok {
				q.rules = strings.Fields(r)
			}
			if strings.TrimSpace(lines[j]) == "-- empty-ok" {
				q.emptyOK = true
			}
			b.WriteString(lines[j] + "\n")
		}
		q.text = b.String()
		out = append(out, q)
	}
	return out
}

func render(t *algebra.Table) string {
	var b strings.Builder
	for _, row := range t.Rows {
		for _, v := range row.Vals {
			b.WriteString(v.Format(algebra.TimeNS) + ",")
		}
		fmt.Fprintf(&b, "%s,%s\n", algebra.FormatTime(row.From, algebra.TimeNS), algebra.FormatTime(row.To, algebra.TimeNS))
	}
	return b.String()
}

// plans translates statements with α operators, optionally rewritten.
func plans(t testing.TB, cat *algebra.Catalog, stmts []*check.Retrieve, optimise bool) ([]plan.Node, []rewrite.Result) {
	var out []plan.Node
	var results []rewrite.Result
	for _, s := range stmts {
		p := plan.WithAlphas(plan.Translate(s), cat)
		if optimise {
			res, err := rewrite.Rewrite(&rewrite.Context{Catalog: cat}, p)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
			p = res.Final
		}
		out = append(out, p)
	}
	return out, results
}

func acquire(t testing.TB, cat *algebra.Catalog, h *algebra.History, stmts []*check.Retrieve, ps []plan.Node, sweep int) ([]*algebra.Table, exec.AcquireStats) {
	t.Helper()
	net, err := exec.Build(cat, stmts, ps, exec.Options{SweepMin: sweep})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := net.RunAcquire(h)
	if err != nil {
		t.Fatal(err)
	}
	var out []*algebra.Table
	for _, s := range net.Stmts {
		out = append(out, s.Result.Table())
	}
	return out, stats
}

func histories() int {
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

func compile(t testing.TB, cat *algebra.Catalog, name, text string, now algebra.Time) []*check.Retrieve {
	t.Helper()
	f, err := tquel.Parse(name, text)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	stmts, err := check.NewSession(cat, check.Options{Now: now}).Check(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return stmts
}

// TestAcquisitionalDifferential runs every query of the differential
// corpus and of the rule corpus acquisitionally — the naive plan and the
// rewritten one — over random histories (with referential integrity), and
// holds both to the reference evaluator on the complete history.
func TestAcquisitionalDifferential(t *testing.T) {
	root := filepath.Join("..", "testdata", "differential")
	cat := catalog(t, filepath.Join(root, "spec.sdl"))
	corpus := append(readCorpus(t, filepath.Join(root, "queries.tq")), readCorpus(t, filepath.Join(root, "rules.tq"))...)
	n := histories()
	ruleUse := map[string]int{}
	for _, q := range corpus {
		t.Run(q.name, func(t *testing.T) {
			cfg := histgen.DefaultConfig(0)
			cfg.Integrity = true
			stmts := compile(t, cat, q.name, q.text, cfg.Span)
			naive, _ := plans(t, cat, stmts, false)
			opt, results := plans(t, cat, stmts, true)
			used := map[string]bool{}
			for _, r := range results {
				for _, s := range r.Steps {
					used[s.Rule] = true
					ruleUse[s.Rule]++
				}
			}
			for _, want := range q.rules {
				if !used[want] {
					t.Errorf("rule %s not applied; plan: %s", want, plan.String(opt[len(opt)-1]))
				}
			}
			nonEmpty := 0
			for seed := 0; seed < n; seed++ {
				cfg.Seed = uint64(seed)
				h := histgen.Random(cat, cfg)
				want, err := ref.Eval(h, stmts)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if len(want[i].Rows) > 0 {
						nonEmpty++
					}
				}
				for _, c := range []struct {
					name  string
					ps    []plan.Node
					sweep int
				}{{"optimised", opt, 1}, {"naive", naive, 0}} {
					got, _ := acquire(t, cat, h, stmts, c.ps, c.sweep)
					for i := range want {
						if g, w := render(got[i]), render(want[i]); g != w {
							t.Fatalf("seed %d, statement %d, %s plan %s:\n--- acquired\n%s--- reference\n%s", seed, i+1, c.name, plan.String(c.ps[i]), g, w)
						}
					}
				}
			}
			if nonEmpty == 0 && !q.emptyOK {
				t.Errorf("every result was empty over %d histories", n)
			}
		})
	}
	for _, r := range rewrite.Rules() {
		if ruleUse[r.Name] == 0 {
			t.Errorf("rule %s is exercised by no query of the corpus", r.Name)
		}
	}
}
