package db

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
)

// The workload: processes changing state (an interval relation with an
// entity and an enum) and sending messages (an event relation with two
// entities), in time order; per step one state ends, the next begins and
// one message is sent: two tuples, three elements.
const benchProcs = 64

type workload struct {
	procs  []algebra.Value
	boxes  []algebra.Value
	states [][]algebra.Value // [proc][state] values, shared
	sends  [][]algebra.Value // [proc][box]
}

func newWorkload(t testing.TB) *workload {
	cat, err := compileSpec(paperSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	enum := cat.Lookup("Process").Attrs[1].Type.Enum
	w := &workload{}
	for i := range benchProcs {
		w.procs = append(w.procs, algebra.Entity(fmt.Sprintf("P%d", i+1)))
		w.boxes = append(w.boxes, algebra.Entity(fmt.Sprintf("M%d", i%16+1)))
	}
	w.states = make([][]algebra.Value, benchProcs*4)
	for p := range benchProcs {
		for s := range 4 {
			w.states[p*4+s] = []algebra.Value{w.procs[p], algebra.Enum(enum.Members[s], s)}
		}
	}
	w.sends = make([][]algebra.Value, benchProcs*16)
	for p := range benchProcs {
		for b := range 16 {
			w.sends[p*16+b] = []algebra.Value{w.procs[p], w.boxes[b]}
		}
	}
	return w
}

// step i of the workload: at time t, process p's state tuple (key) ends
// and the next begins, and p sends to a mailbox.
func (w *workload) step(i int) (t int64, p int, prevKey, key uint64, state, send []algebra.Value) {
	p = i % benchProcs
	t = int64(i) * 1000
	key = uint64(i)
	prevKey = uint64(i - benchProcs)
	state = w.states[p*4+(i/benchProcs)%4]
	send = w.sends[p*16+(i/7)%16]
	return
}

// recordWorkload writes n steps (2n tuples) into a new database.
func recordWorkload(b testing.TB, dir string, w *workload, n int, opts WriterOptions) *DB {
	d, err := Create(dir, paperSpec(b))
	if err != nil {
		b.Fatal(err)
	}
	wr, err := d.NewWriter(opts)
	if err != nil {
		b.Fatal(err)
	}
	proc, _ := wr.Relation("Process")
	msg, _ := wr.Relation("SendMessage")
	for i := range n {
		t, _, prev, key, state, send := w.step(i)
		if i >= benchProcs {
			if _, err := proc.End(prev, t); err != nil {
				b.Fatal(err)
			}
		}
		if err := proc.Begin(key, t, state); err != nil {
			b.Fatal(err)
		}
		if err := msg.Event(t, send); err != nil {
			b.Fatal(err)
		}
	}
	if err := wr.Close(); err != nil {
		b.Fatal(err)
	}
	return d
}

// baselineKey is [rel][time][seq]: one key per tuple.
func baselineKey(rel byte, t int64, seq uint64) []byte {
	k := make([]byte, 17)
	k[0] = rel
	binary.BigEndian.PutUint64(k[1:], timeKey(t))
	binary.BigEndian.PutUint64(k[9:], seq)
	return k
}

// baselineValue encodes a tuple's values and end as a value of its own.
func baselineValue(vals []algebra.Value, to int64) []byte {
	var v []byte
	v = binary.AppendVarint(v, to)
	for _, x := range vals {
		v = binary.AppendUvarint(v, uint64(x.K))
		v = binary.AppendVarint(v, x.N)
		v = appendStr(v, x.S)
	}
	return v
}

// recordBaseline writes the same tuples one key each, with a WriteBatch:
// intervals complete at their end, events at once.
func recordBaseline(b testing.TB, dir string, w *workload, n int) *badger.DB {
	bdb, err := badger.Open(badgerOptions(dir, false, newBadgerLog(dir, nil)))
	if err != nil {
		b.Fatal(err)
	}
	wb := bdb.NewWriteBatch()
	from := make([]int64, benchProcs)
	vals := make([][]algebra.Value, benchProcs)
	for i := range n {
		t, p, _, _, state, send := w.step(i)
		if i >= benchProcs {
			if err := wb.Set(baselineKey(1, from[p], uint64(i)), baselineValue(vals[p], t)); err != nil {
				b.Fatal(err)
			}
		}
		from[p], vals[p] = t, state
		if err := wb.Set(baselineKey(2, t, uint64(i)), baselineValue(send, t+1)); err != nil {
			b.Fatal(err)
		}
	}
	if err := wb.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := bdb.Sync(); err != nil {
		b.Fatal(err)
	}
	return bdb
}

// BenchmarkStoreRecord: tuples recorded per second, blocks of elements
// (the store) against one badger key per tuple (the baseline), each to a
// durable close. b.N counts tuples.
func BenchmarkStoreRecord(b *testing.B) {
	w := newWorkload(b)
	b.Run("blocks", func(b *testing.B) {
		steps := max(b.N/2, 1)
		d := recordWorkload(b, filepath.Join(b.TempDir(), "db"), w, steps, WriterOptions{})
		b.StopTimer()
		d.Close()
		b.ReportMetric(float64(2*steps)/b.Elapsed().Seconds(), "tuples/s")
	})
	b.Run("key-per-tuple", func(b *testing.B) {
		steps := max(b.N/2, 1)
		bdb := recordBaseline(b, filepath.Join(b.TempDir(), "db"), w, steps)
		b.StopTimer()
		bdb.Close()
		b.ReportMetric(float64(2*steps)/b.Elapsed().Seconds(), "tuples/s")
	})
}

// prepareReplay records the same 1M tuples as blocks and as one key per
// tuple.
func prepareReplay(b *testing.B) (dir, bdir string) {
	w := newWorkload(b)
	tmp := b.TempDir()
	dir, bdir = filepath.Join(tmp, "db"), filepath.Join(tmp, "baseline")
	recordWorkload(b, dir, w, replaySteps, WriterOptions{}).Close()
	recordBaseline(b, bdir, w, replaySteps).Close()
	return dir, bdir
}

const replaySteps = 500_000 // 1M tuples

// BenchmarkStoreReplay: tuples read back per second as fast as possible
// (what replay --max reads): the store's time-ordered source over both
// relations against iterating one badger key per tuple and decoding it
// (the baseline, which does not even merge the relations in time order).
// Each op reads the whole database (1M tuples).
func BenchmarkStoreReplay(b *testing.B) {
	dir, bdir := prepareReplay(b)
	tuples := float64(2 * replaySteps)
	b.Run("blocks", func(b *testing.B) {
		d, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		b.ResetTimer()
		for range b.N {
			src, err := d.NewSource([]Read{{Rel: "Process"}, {Rel: "SendMessage"}})
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				_, e, ok, err := src.Next()
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					break
				}
				if e.Kind != 0 { // Begin or Event: a tuple
					n++
				}
			}
			src.Close()
			if float64(n) != tuples {
				b.Fatalf("read %d tuples, want %v", n, tuples)
			}
		}
		b.ReportMetric(tuples*float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
	})
	b.Run("key-per-tuple", func(b *testing.B) {
		bdb, err := badger.Open(badgerOptions(bdir, true, newBadgerLog(bdir, nil)))
		if err != nil {
			b.Fatal(err)
		}
		defer bdb.Close()
		b.ResetTimer()
		for range b.N {
			n := 0
			err := bdb.View(func(txn *badger.Txn) error {
				opts := badger.DefaultIteratorOptions
				opts.PrefetchValues = false
				it := txn.NewIterator(opts)
				defer it.Close()
				vals := make([]algebra.Value, 2)
				for it.Rewind(); it.Valid(); it.Next() {
					err := it.Item().Value(func(v []byte) error {
						r := rd{b: v, what: "baseline"}
						r.varint()
						for i := range vals {
							vals[i] = algebra.Value{K: algebra.Kind(r.uvarint()), N: r.varint(), S: r.str()}
						}
						return r.err
					})
					if err != nil {
						return err
					}
					n++
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			// The baseline holds complete intervals only: the 64 still
			// open at the end were never written.
			if float64(n) != tuples-benchProcs {
				b.Fatalf("read %d tuples, want %v", n, tuples-benchProcs)
			}
		}
		b.ReportMetric(tuples*float64(b.N)/b.Elapsed().Seconds(), "tuples/s")
	})
}
