package replay

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/display/play"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/db"
)

// BenchmarkStoreTimeslice: a timeslice query (the middle instant of the
// history) over databases of the paper's system 1, 10 and 100 times the
// base size: its time stays flat, as the blocks it reads do; the same
// relation scanned whole ("whole") grows with the history, for contrast.
func BenchmarkStoreTimeslice(b *testing.B) {
	spec := paperSpec(b)
	for _, scale := range []int{1, 10, 100} {
		dir := filepath.Join(b.TempDir(), "db")
		d, err := db.Create(dir, spec)
		if err != nil {
			b.Fatal(err)
		}
		h := paperHistory(b, d.Catalog(), scale)
		if err := d.Import(h, benchWriter, nil); err != nil {
			b.Fatal(err)
		}
		d.Close()
		if d, err = db.Open(dir, db.Options{ReadOnly: true}); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct{ name, text string }{
			{"slice", timeslice(middle(h))},
			{"whole", `range of q is Process retrieve (q.Process) where q.Process = "P1" and q.State = "Done"`},
		} {
			prog, err := query.Compile(d.Catalog(), []query.Source{{Name: c.name, Text: c.text}}, check.Options{})
			if err != nil {
				b.Fatal(err)
			}
			q, err := Plan(d.Catalog(), prog.Stmts)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s-%dx", c.name, scale), func(b *testing.B) {
				blocks := 0
				for range b.N {
					_, st, err := Run(d, q, Options{})
					if err != nil {
						b.Fatal(err)
					}
					blocks = st.Read.Blocks
				}
				b.ReportMetric(float64(blocks), "blocks/op")
			})
		}
		d.Close()
	}
}

// benchWriter checkpoints every 2048 elements, so that even the base
// history spans several checkpoints (a timeslice reads from the one
// before its instant: the default spacing, 32768 elements, only bounds
// the cost higher).
var benchWriter = db.WriterOptions{BlockElems: 512, CheckpointElems: 2048}

// BenchmarkStoreReplayMax: replay --max end to end — the database read
// through a Player at full speed into a network running a selective query
// over two relations; tuples/s counts the tuples read.
func BenchmarkStoreReplayMax(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "db")
	d, err := db.Create(dir, paperSpec(b))
	if err != nil {
		b.Fatal(err)
	}
	h := paperHistory(b, d.Catalog(), 100)
	if err := d.Import(h, db.WriterOptions{}, nil); err != nil {
		b.Fatal(err)
	}
	d.Close()
	if d, err = db.Open(dir, db.Options{ReadOnly: true}); err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	prog, err := query.Compile(d.Catalog(), []query.Source{{Name: "q", Text: `range of p is Process
range of s is SendMessage
retrieve (p.State) where p.Process = "P1" and s.Process = "P1" and s.Mailbox = "M2" when s overlap p`}}, check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	q, err := Plan(d.Catalog(), prog.Stmts)
	if err != nil {
		b.Fatal(err)
	}
	tuples := len(h.Table("Process").Rows) + len(h.Table("SendMessage").Rows)
	b.ResetTimer()
	for range b.N {
		if _, _, err := Run(d, q, Options{Pace: &play.Options{Speed: 0}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tuples)*float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
}
