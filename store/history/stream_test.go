package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/internal/testkit"
)

// TestSourceDiagnostics: a Source meeting a bad row fails with the
// diagnostics Load gives for the relations it streams, in file order; the
// relations it does not stream are not read.
func TestSourceDiagnostics(t *testing.T) {
	dir := testkit.WriteFiles(t, map[string]string{
		"s.sdl": "entity type P\nentity relation P(P: P)\nevent relation E(p: P, n: int)\nevent relation F(p: P)\n",
		"E.csv": "p,n,at\nP1,1,5\nP1,one,6\nP2,2,7\nP2,3\n",
		"F.csv": "p,at\nP1,noon\n",
		"P.csv": "P,from,to\nP1,3,1\nP2,1,\n",
	})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := d.Source([]string{"P", "E"})
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for {
		_, _, ok, err := src.Next()
		if err != nil {
			last = err
			break
		}
		if !ok {
			break
		}
	}
	e, p := filepath.Join(dir, "E.csv"), filepath.Join(dir, "P.csv")
	want := e + `:3:4: n: "one" is not an int` + "\n" +
		e + ":5:1: row has 2 fields, the header has 3\n" +
		p + ":2:6: to (1) is before from (3)"
	if got := testkit.DiagLines(last); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	_, err = Load(dir)
	wantLoad := e + `:3:4: n: "one" is not an int` + "\n" +
		e + ":5:1: row has 2 fields, the header has 3\n" +
		filepath.Join(dir, "F.csv") + `:2:4: at: bad time: "noon" is not beginning, forever, integer nanoseconds, H:MM:SS[.fraction] or RFC 3339` + "\n" +
		p + ":2:6: to (1) is before from (3)"
	if got := testkit.DiagLines(err); got != wantLoad {
		t.Errorf("Load:\n%s", got)
	}
}

// TestLoadLongLine: a line longer than MaxLine is an error naming it, and
// is never held whole: loading a file with a 64 MiB line allocates a few
// MiB, not the line.
func TestLoadLongLine(t *testing.T) {
	dir := testkit.WriteFiles(t, map[string]string{"s.sdl": "entity type P\nevent relation E(p: P, n: int)\n"})
	f, err := os.Create(filepath.Join(dir, "E.csv"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("p,n,at\nP1,1,5\nP1,")
	chunk := []byte(strings.Repeat("9", 1<<20))
	for range 64 {
		f.Write(chunk)
	}
	f.WriteString(",6\n")
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load(dir)
	runtime.ReadMemStats(&after)
	want := filepath.Join(dir, "E.csv") + ":3:1: line 3 is longer than 1048576 bytes, the most a history line may be"
	if got := testkit.DiagLines(err); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("loading allocated %d MiB", n>>20)
	}
}

// TestDirLoadNamed: Dir.Load reads only the relations named; Extent reads
// every file's times.
func TestDirLoadNamed(t *testing.T) {
	dir := testkit.WriteFiles(t, map[string]string{
		"s.sdl": "entity type P\nentity relation P(P: P)\nevent relation E(p: P, n: int)\n",
		"E.csv": "p,n,at\nP1,x,50\n",
		"P.csv": "P,from,to\nP1,3,9\nP2,1,\n",
	})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Load("P")
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.Rows(h.Table("P")); got != "P1,3,9\nP2,1,forever\n" {
		t.Errorf("P rows:\n%s", got)
	}
	if len(h.Table("E").Rows) != 0 {
		t.Error("E read")
	}
	start, end, ok, err := d.Extent()
	if err != nil || !ok || start != 1 || end != 50 {
		t.Errorf("extent %d..%d %v %v", start, end, ok, err)
	}
}

// TestOverlappingStates: two rows of one entity in an entity relation
// that overlap put it in two states at once — an error at the later row
// naming both places, whether the relation is loaded whole or streamed,
// its file in time order or not; rows of one entity that meet, or of
// different entities, are fine.
func TestOverlappingStates(t *testing.T) {
	const sdl = "entity type P\nentity relation P(P: P, S: enum(A, B))\n"
	good := "P,S,from,to\nP1,A,0:00:05,0:00:15\nP2,B,0:00:10,\nP1,B,0:00:15,0:00:30\nP1,A,0:00:30,\n"
	sorted := "P,S,from,to\nP1,A,0:00:05,0:00:20\nP2,B,0:00:10,\nP1,B,0:00:15,0:00:30\n"
	unsorted := "P,S,from,to\nP1,B,0:00:15,0:00:30\nP2,B,0:00:10,\nP1,A,0:00:05,0:00:20\n"
	for _, c := range []struct {
		name, csv, want string
	}{
		{"good", good, ""},
		{"sorted", sorted, "P.csv:4:6: P1 is in two states at once: this row (0:00:15 to 0:00:30) overlaps the row at P.csv:2:6 (0:00:05 to 0:00:20)"},
		{"unsorted", unsorted, "P.csv:4:6: P1 is in two states at once: this row (0:00:05 to 0:00:20) overlaps the row at P.csv:2:6 (0:00:15 to 0:00:30)"},
		{"open", "P,S,from,to\nP1,A,0:00:05,\nP1,B,0:00:15,0:00:30\n", "P.csv:3:6: P1 is in two states at once: this row (0:00:15 to 0:00:30) overlaps the row at P.csv:2:6 (0:00:05 to forever)"},
	} {
		dir := testkit.WriteFiles(t, map[string]string{"s.sdl": sdl, "P.csv": c.csv})
		want := strings.ReplaceAll(c.want, "P.csv", filepath.Join(dir, "P.csv"))
		_, err := Load(dir)
		if got := testkit.DiagLines(err); got != want {
			t.Errorf("%s: Load:\n%s\nwant:\n%s", c.name, got, want)
		}
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		src, err := d.Source([]string{"P"})
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for {
			_, _, ok, err := src.Next()
			if err != nil || !ok {
				last = err
				break
			}
		}
		src.Close()
		if c.name == "unsorted" {
			// The stream stops at the row out of order; read whole, the
			// file gives Load's diagnostic.
			if !errors.Is(last, ErrUnsorted) {
				t.Errorf("%s: stream: %v, want ErrUnsorted", c.name, last)
			}
			src, err := d.Source([]string{"P"}, "P")
			if err != nil {
				if got := testkit.DiagLines(err); got != want {
					t.Errorf("%s: loaded source:\n%s\nwant:\n%s", c.name, got, want)
				}
				continue
			}
			src.Close()
			t.Errorf("%s: loaded source: no error", c.name)
			continue
		}
		if got := testkit.DiagLines(last); got != want {
			t.Errorf("%s: stream:\n%s\nwant:\n%s", c.name, got, want)
		}
	}
}

// TestSourceCloseStopsReading: each relation is read ahead on a goroutine
// of its own; Close stops them mid-file and closes the files, and a
// stream read to its end leaves none running.
func TestSourceCloseStopsReading(t *testing.T) {
	var b strings.Builder
	b.WriteString("p,n,at\n")
	for i := range 20 * batchRows * readAhead {
		fmt.Fprintf(&b, "P1,%d,%d\n", i, i)
	}
	dir := testkit.WriteFiles(t, map[string]string{
		"s.sdl": "entity type P\nevent relation E(p: P, n: int)\nevent relation F(p: P, n: int)\n",
		"E.csv": b.String(), "F.csv": b.String(),
	})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	src, err := d.Source([]string{"E", "F"})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, _, ok, err := src.Next(); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if n := runtime.NumGoroutine(); n != base+2 {
		t.Errorf("%d goroutines reading, want 2", n-base)
	}
	src.Close()
	if n := goroutinesBack(base); n != base {
		t.Errorf("%d goroutines left after Close", n-base)
	}

	src, err = d.Source([]string{"E", "F"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, _, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if want := 2 * 20 * batchRows * readAhead; n != want {
		t.Errorf("%d elements, want %d", n, want)
	}
	if n := goroutinesBack(base); n != base {
		t.Errorf("%d goroutines left at the end", n-base)
	}
}

// goroutinesBack is the number of goroutines once it is back to base, or
// after a second: a reader's goroutine has closed its file when Close
// returns, but may not yet have returned itself.
func goroutinesBack(base int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(time.Second); n != base && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(time.Millisecond)
	}
	return n
}
