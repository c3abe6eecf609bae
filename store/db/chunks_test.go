package db

import (
	"fmt"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// readChunks reads one relation through Chunk, checking each chunk's
// bound.
func readChunks(t *testing.T, d *DB, rd Read, resolveAt int) []algebra.Tuple {
	t.Helper()
	src, err := d.NewSource([]Read{rd})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	src.rels[0].chunk.resolveAt = resolveAt
	var out, buf []algebra.Tuple
	for {
		if buf, err = src.Chunk(rd.Rel, buf[:0]); err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		if len(buf) > chunkRows {
			t.Fatalf("a chunk of %d tuples (at most %d)", len(buf), chunkRows)
		}
		out = append(out, buf...)
	}
	if _, _, _, err := src.Next(); err == nil {
		t.Fatal("Next after Chunk did not fail")
	}
	return out
}

// checkChunks: a relation read by Chunk is the relation read by Next —
// the same tuples with their whole valid times (open ones to Forever), in
// the order of their Begins and Events — whole or through window w (nil:
// whole), with ends looked up in the ends index as usual and after every
// two tuples held (resolve). TestWindowedReads calls it.
func checkChunks(t *testing.T, d *DB, h *algebra.History, w *algebra.Window, what string) {
	t.Helper()
	for _, r := range h.Catalog.Relations {
		rd := Read{Rel: r.Name, Window: w}
		want, _ := readWindow(t, d, []Read{rd})
		for _, at := range []int{0, 2} {
			got := readChunks(t, d, rd, at)
			if g, w := fmt.Sprint(got), fmt.Sprint(want[r.Name]); g != w {
				t.Fatalf("%s: %s window %v resolving at %d: by Chunk\n%s\nby Next\n%s", what, r.Name, rd.Window, at, g, w)
			}
		}
	}
}

// TestChunkHolds: Chunk holds a bounded number of tuples — over many
// short tuples, one open throughout (never ended) and one ended only at
// the end, which hold back every later tuple until their ends are looked
// up — and hands over what Next delivers; it fails for a relation not
// opened.
func TestChunkHolds(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	h := algebra.NewHistory(cat)
	rel := cat.Lookup("RunningOn")
	tab := h.Tables[rel.Name]
	const n = 10*chunkRows + 17
	tab.Add([]algebra.Value{algebra.Entity("Popen"), algebra.Entity("C2")}, 0, algebra.Forever)
	tab.Add([]algebra.Value{algebra.Entity("Plong"), algebra.Entity("C2")}, 1, 2*n+5)
	for i := range int64(n - 2) {
		tab.Add([]algebra.Value{algebra.Entity(fmt.Sprint("P", i)), algebra.Entity("C1")}, 2*i+2, 2*i+3)
	}
	d := importHistory(t, spec, h, WriterOptions{})
	want, _ := readWindow(t, d, []Read{{Rel: rel.Name}})
	src, err := d.NewSource([]Read{{Rel: rel.Name}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Chunk("Process", nil); err == nil {
		t.Fatal("Chunk of a relation not opened did not fail")
	}
	var buf, got []algebra.Tuple
	total, held := 0, 0
	for {
		if buf, err = src.Chunk(rel.Name, buf[:0]); err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		total += len(buf)
		got = append(got, buf...)
		c := &src.rels[0].chunk
		held = max(held, len(c.pend))
	}
	if total != n {
		t.Fatalf("%d tuples read, %d stored", total, n)
	}
	// What was handed over is forgotten once it is most of what is held.
	if held > resolveAt+chunkRows {
		t.Fatalf("held %d tuples at once reading %d (at most %d)", held, n, resolveAt+chunkRows)
	}
	if g, w := fmt.Sprint(got), fmt.Sprint(want[rel.Name]); g != w {
		t.Fatal("by Chunk, not what Next delivers")
	}
}
