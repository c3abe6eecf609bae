package subject

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

// TestHistoryStreamsAsLoaded: every query of the differential, rule and
// timeslice corpora gives over a history directory — its relations
// streamed from their files, "now" and clock ticks from their times — the
// results it gives over the history loaded whole, for random histories;
// in half of them one relation's file is shuffled out of time order, so
// the run starts again with it loaded.
func TestHistoryStreamsAsLoaded(t *testing.T) {
	diff := filepath.Join("..", "testdata", "differential")
	spec := testkit.ReadFile(t, filepath.Join(diff, "spec.sdl"))
	cat := testkit.CompileSpec(t, "spec.sdl", spec)
	var corpus []testkit.Query
	for _, f := range []string{"queries.tq", "rules.tq", "timeslice.tq"} {
		corpus = append(corpus, testkit.ReadCorpus(t, filepath.Join(diff, f))...)
	}
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range seeds {
		cfg := histgen.DefaultConfig(uint64(seed))
		cfg.Tuples, cfg.Span = 25, 50
		h := histgen.Random(cat, cfg)
		dir := t.TempDir()
		if err := history.Write(dir, h, spec, "spec.sdl"); err != nil {
			t.Fatal(err)
		}
		if seed%2 == 1 {
			rel := cat.Relations[seed%len(cat.Relations)].Name
			shuffleFile(t, dir, rel, seed)
			d, err := history.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			src, err := d.Source([]string{rel})
			if err != nil {
				t.Fatal(err)
			}
			for {
				_, _, ok, err := src.Next()
				if err != nil {
					if !errors.Is(err, history.ErrUnsorted) {
						t.Fatal(err)
					}
					break
				}
				if !ok {
					t.Fatalf("%s shuffled streams in order", rel)
				}
			}
		}
		whole, err := history.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, now, _ := whole.Extent()
		sub, err := Open(context.Background(), Options{History: dir})
		if err != nil {
			t.Fatal(err)
		}
		if got := sub.Now(); got != now {
			t.Errorf("seed %d: now %d, want %d", seed, got, now)
		}
		for _, q := range corpus {
			srcs := []query.Source{{Name: q.Name, Text: q.Text}}
			want := run(t, func() ([]query.Result, error) {
				prog, err := query.Compile(cat, srcs, check.Options{Now: now})
				if err != nil {
					t.Fatalf("%s: %v", q.Name, err)
				}
				rs, _, err := prog.RunHistory(whole)
				return rs, err
			})
			got := run(t, func() ([]query.Result, error) {
				prog, err := query.Compile(sub.Catalog(), srcs, check.Options{NowFunc: sub.Now})
				if err != nil {
					t.Fatalf("%s: %v", q.Name, err)
				}
				rs, _, err := sub.Run(context.Background(), prog, RunOptions{})
				return rs, err
			})
			if !slices.Equal(got, want) {
				t.Fatalf("%s seed %d: streamed\n%s\nloaded\n%s", q.Name, seed, got, want)
			}
		}
	}
}

// run renders each result's rows, sorted.
func run(t *testing.T, f func() ([]query.Result, error)) []string {
	t.Helper()
	rs, err := f()
	if err != nil {
		t.Fatalf("%#v", err)
	}
	var out []string
	for _, r := range rs {
		tab := &algebra.Table{Rel: r.Table.Rel, Rows: slices.Clone(r.Table.Rows)}
		tab.SortRows()
		out = append(out, testkit.Rows(tab))
	}
	return out
}

// shuffleFile puts the rows of a relation's file out of order.
func shuffleFile(t *testing.T, dir, rel string, seed int) {
	t.Helper()
	path := filepath.Join(dir, rel+".csv")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := slices.DeleteFunc(splitLines(string(data)), func(s string) bool { return s == "" })
	rows := lines[1:]
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	text := ""
	for _, l := range lines {
		text += l + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// TestHistoryLostCuts: a history directory with a Lost.csv (as a recording
// exported with its observation) is cut at its gaps, streamed as loaded
// whole: every corpus query answers the same both ways, and some answer
// differently than without the gaps.
func TestHistoryLostCuts(t *testing.T) {
	diff := filepath.Join("..", "testdata", "differential")
	spec := testkit.ReadFile(t, filepath.Join(diff, "spec.sdl"))
	cat := testkit.CompileSpec(t, "spec.sdl", spec)
	corpus := testkit.ReadCorpus(t, filepath.Join(diff, "queries.tq"))
	cfg := histgen.DefaultConfig(7)
	cfg.Tuples, cfg.Span = 25, 50
	h := histgen.Random(cat, cfg)
	for _, r := range cat.Relations {
		h.Table(algebra.LostName).Add([]algebra.Value{algebra.Str(r.Name), algebra.Int(3)}, 15, 25)
	}
	dir := t.TempDir()
	if err := history.Write(dir, h, spec, "spec.sdl"); err != nil {
		t.Fatal(err)
	}
	whole, err := history.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(whole.Table(algebra.LostName).Rows); n != len(cat.Relations) {
		t.Fatalf("Lost.csv read back %d tuples, want %d", n, len(cat.Relations))
	}
	uncut := algebra.NewHistory(cat)
	for name, tab := range whole.Tables {
		if name != algebra.LostName {
			uncut.Tables[name].Rows = tab.Rows
		}
	}
	uncut.Window = whole.Window
	_, now, _ := whole.Extent()
	sub, err := Open(context.Background(), Options{History: dir})
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, q := range corpus {
		srcs := []query.Source{{Name: q.Name, Text: q.Text}}
		prog, err := query.Compile(cat, srcs, check.Options{Now: now})
		if err != nil {
			t.Fatalf("%s: %v", q.Name, err)
		}
		want := run(t, func() ([]query.Result, error) { rs, _, err := prog.RunHistory(whole); return rs, err })
		plain := run(t, func() ([]query.Result, error) { rs, _, err := prog.RunHistory(uncut); return rs, err })
		got := run(t, func() ([]query.Result, error) {
			prog, err := query.Compile(sub.Catalog(), srcs, check.Options{NowFunc: sub.Now})
			if err != nil {
				t.Fatalf("%s: %v", q.Name, err)
			}
			rs, _, err := sub.Run(context.Background(), prog, RunOptions{})
			return rs, err
		})
		if !slices.Equal(got, want) {
			t.Fatalf("%s: streamed\n%s\nloaded\n%s", q.Name, got, want)
		}
		if !slices.Equal(plain, want) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("no answer was cut at the gaps: the test shows nothing")
	}
	t.Logf("%d of %d queries cut", differ, len(corpus))
}
