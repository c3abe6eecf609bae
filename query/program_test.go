package query_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

// TestHistoryRunsStoredPlans: a streamed history run (RunSource, what
// `--history` does) runs the Stored rewrite of the plans, as RunHistory
// does, so ResumedbyP1's sends are an existential variable: the join keeps
// the earliest send per mailbox, not every send. With the initial plans it
// held all n of them (and made a candidate of each with the wait).
func TestHistoryRunsStoredPlans(t *testing.T) {
	paper := filepath.Join(testkit.Root(t), "testdata", "paper")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "os.sdl"), []byte(testkit.ReadFile(t, filepath.Join(paper, "os.sdl"))), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	var sends strings.Builder
	sends.WriteString("Process,Mailbox,at\n")
	for i := range n {
		fmt.Fprintf(&sends, "P1,M1,%d\n", 10+i)
	}
	files := map[string]string{
		"SendMessage.csv": sends.String(),
		"Waiting.csv":     fmt.Sprintf("Process,Mailbox,from,to\nP2,M1,5,%d\n", 10+2*n),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := history.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := query.Compile(d.Catalog, []query.Source{{Name: "q", Text: testkit.ReadFile(t, filepath.Join(paper, "resumed_by_p1.tq"))}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var src *history.Source
	defer func() {
		if src != nil {
			src.Close()
		}
	}()
	open := func(rels []string) (stream.Source, error) {
		src, err = d.Source(rels)
		return src, err
	}
	rs, st, err := prog.RunSource(open, nil, nil, query.Output{})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rs[0].Table.Rows); got != 1 {
		t.Errorf("%d results, want 1 (P2)", got)
	}
	if st.PeakHeld > 10 {
		t.Errorf("the run held %d tuples at its peak, want a handful (the wait and the earliest send), not the %d sends", st.PeakHeld, n)
	}
}
