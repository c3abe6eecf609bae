package history

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/internal/testkit"
)

// paperHistory writes a history of the paper's system with 64 processes
// sending sends messages each (about 310 tuples per send) into a new
// directory, returning it and the bytes of its CSV files.
func paperHistory(t *testing.T, sends int) (string, int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "h")
	writePaper(t, dir, sends)
	return dir, csvBytes(t, dir)
}

// writePaper writes the history paperHistory describes into dir.
func writePaper(tb testing.TB, dir string, sends int) {
	tb.Helper()
	spec, err := os.ReadFile("../../testdata/paper/os.sdl")
	if err != nil {
		tb.Fatal(err)
	}
	cat := testkit.CompileSpec(tb, "os.sdl", string(spec))
	h, err := histgen.Paper(cat, histgen.PaperConfig{Seed: 1, Processors: 8, Processes: 64, Mailboxes: 32, Sends: sends, Fanout: 2})
	if err != nil {
		tb.Fatal(err)
	}
	if err := Write(dir, h, string(spec), "os.sdl"); err != nil {
		tb.Fatal(err)
	}
}

// csvBytes is the size of dir's CSV files.
func csvBytes(tb testing.TB, dir string) int64 {
	tb.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.csv"))
	var size int64
	for _, m := range matches {
		fi, err := os.Stat(m)
		if err != nil {
			tb.Fatal(err)
		}
		size += fi.Size()
	}
	return size
}

// liveHeap is the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// loadHeld loads dir, returning the live heap the history holds and its
// tuples.
func loadHeld(t *testing.T, dir string) (uint64, int) {
	t.Helper()
	before := liveHeap()
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	after := liveHeap()
	tuples := 0
	for _, tb := range h.Tables {
		tuples += len(tb.Rows)
	}
	runtime.KeepAlive(h)
	return after - min(before, after), tuples
}

// TestLoadMemoryBound: a loaded history holds at most twice its CSV's
// bytes (rows alike share their values: vectors), and a relation whose
// rows never repeat holds its tuples and values — 40 bytes a tuple and 32
// a value — and no map of vectors besides.
func TestLoadMemoryBound(t *testing.T) {
	dir, size := paperHistory(t, 600) // about 180k tuples, 6.3 MB
	held, tuples := loadHeld(t, dir)
	t.Logf("%d tuples, %d CSV bytes: %.1f bytes held a tuple, %.2f× the CSV", tuples, size, float64(held)/float64(tuples), float64(held)/float64(size))
	if held > uint64(2*size) {
		t.Errorf("a loaded history holds %d bytes, %.2f× its CSV's %d (at most 2×)", held, float64(held)/float64(size), size)
	}

	// Rows that never repeat: an event relation with an int unique to
	// each row.
	const n = 100_000
	var b strings.Builder
	b.WriteString("p,n,at\n")
	for i := range n {
		fmt.Fprintf(&b, "P%d,%d,%d\n", i%64, i, i)
	}
	dir = testkit.WriteFiles(t, map[string]string{"s.sdl": "entity type P\nevent relation E(p: P, n: int)\n", "E.csv": b.String()})
	held, _ = loadHeld(t, dir)
	// 40 bytes a tuple, 64 its two values; the identifiers interned.
	if per := float64(held) / n; per > 40+2*32+16 {
		t.Errorf("rows that never repeat hold %.1f bytes a tuple (want about 104: no vectors kept)", per)
	}
}

// TestSourceHoldsOpenTuples: a stream over a history holds what is open,
// not what it has read: streaming four times the tuples holds about as
// much at its peak.
func TestSourceHoldsOpenTuples(t *testing.T) {
	peak := func(sends int) (uint64, int64) {
		dir, size := paperHistory(t, sends)
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var rels []string
		for _, r := range d.Catalog.Relations {
			rels = append(rels, r.Name)
		}
		before := liveHeap()
		src, err := d.Source(rels)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		var most uint64
		for n := 0; ; n++ {
			_, _, ok, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if n%(16<<10) == 0 {
				most = max(most, liveHeap()-min(before, liveHeap()))
			}
		}
		return most, size
	}
	small, smallSize := peak(150)
	large, largeSize := peak(600)
	t.Logf("peak held: %d bytes over %d CSV bytes, %d over %d", small, smallSize, large, largeSize)
	if large > 2*small+256<<10 {
		t.Errorf("streaming %d CSV bytes held %d at its peak, %d CSV bytes %d: it grows with the history", largeSize, large, smallSize, small)
	}
}

// TestVectorsShared: rows whose attribute fields repeat a good row's share
// its values, and are otherwise read as any row is — their own times,
// their bytes checked, the same diagnostics at the same places — while a
// row whose fields differ (even only by their split: "a,bc" against
// "ab,c") has its own.
func TestVectorsShared(t *testing.T) {
	dir := testkit.WriteFiles(t, map[string]string{
		"s.sdl": "entity type P\nevent relation E(p: P, q: string)\n",
		"E.csv": "p,q,at\nP1,ab,5\nP1,ab,6\nP1a,b,7\nP1,ab,\x008\nP1,ab,x\nP1,ab,9\n",
	})
	_, err := Load(dir)
	e := filepath.Join(dir, "E.csv")
	want := e + ":5:7: value holds a NUL byte\n" +
		e + `:6:7: at: bad time: "x" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339`
	if got := testkit.DiagLines(err); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	os.WriteFile(e, []byte("p,q,at\nP1,ab,5\nP1,ab,6\nP1a,b,7\nP1,ab,9\n"), 0o644)
	h, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows := h.Table("E").Rows
	if len(rows) != 4 || &rows[0].Vals[0] != &rows[1].Vals[0] || &rows[0].Vals[0] != &rows[3].Vals[0] || &rows[2].Vals[0] == &rows[0].Vals[0] {
		t.Errorf("rows alike do not share their values, or rows unlike do")
	}
	for i, want := range []string{"P1 ab 5", "P1 ab 6", "P1a b 7", "P1 ab 9"} {
		if got := fmt.Sprintf("%s %s %d", rows[i].Vals[0].S, rows[i].Vals[1].S, rows[i].From); got != want {
			t.Errorf("row %d: %s, want %s", i, got, want)
		}
	}
}
