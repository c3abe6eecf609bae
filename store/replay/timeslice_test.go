package replay

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/db"
)

var paperDir = filepath.Join("..", "..", "testdata", "paper")

func paperSpec(t testing.TB) db.Spec {
	return db.Spec{Name: "os.sdl", Text: testkit.ReadFile(t, filepath.Join(paperDir, "os.sdl"))}
}

// paperHistory is the paper's system run for scale×base sends per process.
func paperHistory(t testing.TB, cat *algebra.Catalog, scale int) *algebra.History {
	h, err := histgen.Paper(cat, histgen.PaperConfig{Seed: 3, Processors: 4, Processes: 16, Mailboxes: 8, Sends: 40 * scale, Fanout: 2})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// timeslice is the query timed: process states and where processes run
// at one instant in the middle of the history.
func timeslice(at algebra.Time) string {
	t := algebra.FormatTime(at, algebra.TimeNS)
	return fmt.Sprintf(`range of p is Process
range of r is RunningOn
retrieve (p.Process, p.State, r.Processor) where p.Process = r.Process when p overlap "%s" and r overlap "%s"
range of q is Process
retrieve (q.Process, q.State) when q overlap "%s"`, t, t, t)
}

func middle(h *algebra.History) algebra.Time {
	s, e, _ := h.Extent()
	return s + (e-s)/2
}

// TestTimesliceBounded: a timeslice of a history 100 times the base size
// reads a bounded number of blocks — as many as at the base size, a
// sliver of the database — and answers exactly.
func TestTimesliceBounded(t *testing.T) {
	spec := paperSpec(t)
	d0, err := db.CreateInMemory(spec)
	if err != nil {
		t.Fatal(err)
	}
	cat := d0.Catalog()
	d0.Close()
	opts := db.WriterOptions{BlockElems: 128, CheckpointElems: 512}
	scales := []int{1, 10, 100}
	if testing.Short() {
		scales = []int{1, 10}
	}
	var read []int
	for _, scale := range scales {
		h := paperHistory(t, cat, scale)
		d, err := db.CreateInMemory(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Import(h, opts, nil); err != nil {
			t.Fatal(err)
		}
		at := middle(h)
		prog, err := query.Compile(cat, []query.Source{{Name: "slice", Text: timeslice(at)}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := prog.RunHistory(h)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Plan(d.Catalog(), prog.Stmts)
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := Run(d, q, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if g, w := renderResults([]*algebra.Table{got[i].Table}), renderResults([]*algebra.Table{want[i].Table}); g != w || len(want[i].Table.Rows) == 0 {
				t.Fatalf("×%d statement %d: over the database\n%s\nover the history\n%s", scale, i+1, g, w)
			}
		}
		total := 0
		for _, s := range d.Stats() {
			if s.Name == "Process" || s.Name == "RunningOn" {
				total += int(s.Blocks)
			}
		}
		t.Logf("×%d: %d tuples; the timeslice read %d of %d blocks, %d checkpoint parts, %d ends parts",
			scale, len(h.Table("Process").Rows)+len(h.Table("RunningOn").Rows), st.Read.Blocks, total, st.Read.Checkpoints, st.Read.EndsParts)
		if scale == 100 && total < 50*st.Read.Blocks {
			t.Errorf("×100: read %d of %d blocks: not a sliver", st.Read.Blocks, total)
		}
		read = append(read, st.Read.Blocks)
		d.Close()
	}
	// Checkpoints every 512 elements: a read starts at most 4 blocks of 128
	// before the instant and ends a block after it, per relation.
	const bound = 2 * (512/128 + 2)
	for i, n := range read {
		if n > bound {
			t.Errorf("×%d: the timeslice read %d blocks, more than %d", scales[i], n, bound)
		}
	}
}
