package history

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// benchHistory is a history of the paper's system with about n tuples,
// written once into the system's temporary directory and kept there for
// later runs (generating a million tuples takes seconds). It returns the
// directory, its tuples and the bytes of its CSV files.
func benchHistory(b *testing.B, n int) (string, int, int64) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("tqmon-bench-history-%d", n))
	if _, err := os.Stat(filepath.Join(dir, "os.sdl")); err != nil {
		// 64 processes sending n/310 messages each make about n tuples.
		tmp := dir + ".tmp"
		os.RemoveAll(tmp)
		writePaper(b, tmp, n/310)
		if err := os.Rename(tmp, dir); err != nil {
			b.Fatal(err)
		}
	}
	h, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	tuples := 0
	for _, t := range h.Tables {
		tuples += len(t.Rows)
	}
	return dir, tuples, csvBytes(b, dir)
}

// BenchmarkLoad loads a history of about a million tuples, reporting
// tuples/s, allocations and bytes allocated per tuple, the bytes of live
// heap each loaded tuple holds (held-B/tuple) and the CSV's bytes per
// tuple.
func BenchmarkLoad(b *testing.B) {
	dir, tuples, size := benchHistory(b, 1_000_000)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var held uint64
	for i := 0; i < b.N; i++ {
		h, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			held = m.HeapAlloc - before.HeapAlloc
			runtime.KeepAlive(h)
		}
	}
	b.StopTimer()
	report(b, &before, tuples, held, size)
}

// report reports the figures per tuple of a benchmark that read tuples
// b.N times from a history of size CSV bytes, allocating since before and
// holding held bytes.
func report(b *testing.B, before *runtime.MemStats, tuples int, held uint64, size int64) {
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	n := float64(tuples) * float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "tuples/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/tuple")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/tuple")
	b.ReportMetric(float64(held)/float64(tuples), "held-B/tuple")
	b.ReportMetric(float64(size)/float64(tuples), "csv-B/tuple")
}

// BenchmarkSource streams every relation of a history of about a million
// tuples through Dir.Source, reporting tuples/s, allocations and bytes
// allocated per tuple, and the most live heap the stream held at once
// per tuple (sampled every 64k elements).
func BenchmarkSource(b *testing.B) {
	dir, tuples, size := benchHistory(b, 1_000_000)
	d, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	var rels []string
	for _, r := range d.Catalog.Relations {
		rels = append(rels, r.Name)
	}
	var before, m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		src, err := d.Source(rels)
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; ; n++ {
			_, _, ok, err := src.Next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			if i == 0 && n%(64<<10) == 0 {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc-min(m.HeapAlloc, before.HeapAlloc))
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	report(b, &before, tuples, peak, size)
}
