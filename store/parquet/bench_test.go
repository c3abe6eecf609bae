package parquet

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/db"
)

// The benchmark's workload is store/db's (bench_test.go there): 64
// processes changing state (an interval relation, an entity and an enum)
// and sending messages (an event relation, two entities); per step one
// state ends, the next begins and one message is sent — two tuples. Steps
// are 10 ms apart, so 1M tuples span 83 minutes: two hours' partitions.
const benchProcs = 64

type benchLoad struct {
	states [][]algebra.Value
	sends  [][]algebra.Value
}

func newBenchLoad(b testing.TB, cat *algebra.Catalog) *benchLoad {
	enum := cat.Lookup("Process").Attrs[1].Type.Enum
	w := &benchLoad{}
	for p := range benchProcs {
		proc := algebra.Entity(fmt.Sprintf("P%d", p+1))
		for s := range 4 {
			w.states = append(w.states, []algebra.Value{proc, algebra.Enum(enum.Members[s], s)})
		}
		for m := range 16 {
			w.sends = append(w.sends, []algebra.Value{proc, algebra.Entity(fmt.Sprintf("M%d", m+1))})
		}
	}
	return w
}

// rels is what both stores' writers offer, per relation.
type benchRel interface {
	Begin(key uint64, from algebra.Time, vals []algebra.Value) error
	End(key uint64, to algebra.Time) (bool, error)
	Event(at algebra.Time, vals []algebra.Value) error
}

// run writes n steps, advancing (and syncing) every 4096 steps as a
// recorder's periodic sync does.
func (w *benchLoad) run(b testing.TB, n int, proc, msg benchRel, sync func(t int64) error) {
	base := int64(1_800_000_000) * int64(time.Second)
	for i := range n {
		p := i % benchProcs
		t := base + int64(i)*int64(10*time.Millisecond)
		if i >= benchProcs {
			if _, err := proc.End(uint64(i-benchProcs), t); err != nil {
				b.Fatal(err)
			}
		}
		if err := proc.Begin(uint64(i), t, w.states[p*4+(i/benchProcs)%4]); err != nil {
			b.Fatal(err)
		}
		if err := msg.Event(t, w.sends[p*16+(i/7)%16]); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 {
			if err := sync(t); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func writeBadger(b testing.TB, dir string, n int) *db.DB {
	d, err := db.Create(dir, spec)
	if err != nil {
		b.Fatal(err)
	}
	wr, err := d.NewWriter(db.WriterOptions{})
	if err != nil {
		b.Fatal(err)
	}
	proc, _ := wr.Relation("Process")
	msg, _ := wr.Relation("SendMessage")
	newBenchLoad(b, d.Catalog()).run(b, n, proc, msg, func(t int64) error { wr.Advance(t); return wr.Sync() })
	if err := wr.Close(); err != nil {
		b.Fatal(err)
	}
	return d
}

func writeParquet(b testing.TB, dir string, n int) WriteStats {
	w, err := Create(dir, spec, Options{})
	if err != nil {
		b.Fatal(err)
	}
	proc, _ := w.Relation("Process")
	msg, _ := w.Relation("SendMessage")
	newBenchLoad(b, w.Catalog()).run(b, n, proc, msg, func(t int64) error { w.Advance(t); return w.Sync() })
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return w.Stats()
}

// BenchmarkParquetWrite: tuples written per second to a durable close,
// Parquet files against the badger store, in one run (b.N counts
// tuples). Both sync every 4096 steps: the store commits and syncs, the
// Parquet writer writes files once a minute of recording has passed.
func BenchmarkParquetWrite(b *testing.B) {
	for _, store := range []string{"badger", "parquet"} {
		b.Run(store, func(b *testing.B) {
			steps := max(b.N/2, 1)
			dir := filepath.Join(b.TempDir(), "rec")
			if store == "badger" {
				writeBadger(b, dir, steps).Close()
			} else {
				st := writeParquet(b, dir, steps)
				b.ReportMetric(float64(st.Bytes)/float64(2*steps), "bytes/tuple")
			}
			b.ReportMetric(float64(2*steps)/b.Elapsed().Seconds(), "tuples/s")
		})
	}
}

const scanSteps = 500_000 // 1M tuples

// BenchmarkParquetScan: tuples read back per second, both relations
// whole in time order (what query --db and query --parquet read), from
// the same 1M tuples in each store.
func BenchmarkParquetScan(b *testing.B) {
	tmp := b.TempDir()
	writeBadger(b, filepath.Join(tmp, "db"), scanSteps).Close()
	writeParquet(b, filepath.Join(tmp, "pq"), scanSteps)
	reads := []db.Read{{Rel: "Process"}, {Rel: "SendMessage"}}
	count := func(b *testing.B, src stream.Source) {
		n := 0
		for {
			_, e, ok, err := src.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			if e.Kind != stream.End {
				n++
			}
		}
		if n != 2*scanSteps {
			b.Fatalf("read %d tuples, want %d", n, 2*scanSteps)
		}
	}
	b.Run("badger", func(b *testing.B) {
		d, err := db.Open(filepath.Join(tmp, "db"), db.Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.ResetTimer()
		for range b.N {
			src, err := d.NewSource(reads)
			if err != nil {
				b.Fatal(err)
			}
			count(b, src)
			src.Close()
		}
		b.ReportMetric(float64(2*scanSteps*b.N)/b.Elapsed().Seconds(), "tuples/s")
	})
	b.Run("parquet", func(b *testing.B) {
		s, err := Open(filepath.Join(tmp, "pq"))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			sc, err := s.NewScan(reads)
			if err != nil {
				b.Fatal(err)
			}
			count(b, sc)
			sc.Close()
		}
		b.ReportMetric(float64(2*scanSteps*b.N)/b.Elapsed().Seconds(), "tuples/s")
	})
}
