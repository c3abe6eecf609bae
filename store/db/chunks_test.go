package db

import (
	"fmt"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
)

// readChunks reads one relation through Chunk, checking each chunk's
// bound.
func readChunks(t *testing.T, d *DB, rd Read) []algebra.Tuple {
	t.Helper()
	src, err := d.NewSource([]Read{rd})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
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

// TestChunkMatchesNext: a relation read by Chunk is the relation read by
// Next — the same tuples with their whole valid times (open ones to
// Forever), in the order of their Begins and Events — whole and through
// windows of every width and place, with tiny blocks and checkpoints (so
// windowed reads start at checkpoints and look ends up).
func TestChunkMatchesNext(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	for seed := uint64(0); seed < 12; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 30
		cfg.Span = 60
		cfg.Integrity = seed%2 == 1
		h := histgen.Random(cat, cfg)
		d := importHistory(t, spec, h, small)
		windows := []*algebra.Window{nil, {From: algebra.Beginning, To: 10}, {From: 10, To: algebra.Forever}}
		for lo := int64(-2); lo < 65; lo += 7 {
			for _, width := range []int64{0, 1, 5, 20} {
				windows = append(windows, &algebra.Window{From: lo, To: lo + width})
			}
		}
		for _, r := range h.Catalog.Relations {
			for _, w := range windows {
				rd := Read{Rel: r.Name, Window: w}
				want, _ := readWindow(t, d, []Read{rd})
				got := readChunks(t, d, rd)
				if g, w := fmt.Sprint(got), fmt.Sprint(want[r.Name]); g != w {
					t.Fatalf("seed %d %s window %v: by Chunk\n%s\nby Next\n%s", seed, r.Name, rd.Window, g, w)
				}
			}
		}
	}
}

// TestChunkHolds: Chunk holds only the tuples begun since the earliest
// still open — many short tuples and one open throughout — and fails for
// a relation not opened.
func TestChunkHolds(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	h := algebra.NewHistory(cat)
	rel := cat.Lookup("RunningOn")
	tab := h.Tables[rel.Name]
	const n = 5*chunkRows + 17
	for i := range int64(n) {
		tab.Add([]algebra.Value{algebra.Entity(fmt.Sprint("P", i)), algebra.Entity("C1")}, 2*i, 2*i+1)
	}
	d := importHistory(t, spec, h, WriterOptions{})
	src, err := d.NewSource([]Read{{Rel: rel.Name}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Chunk("Process", nil); err == nil {
		t.Fatal("Chunk of a relation not opened did not fail")
	}
	var buf []algebra.Tuple
	total, held := 0, 0
	for {
		if buf, err = src.Chunk(rel.Name, buf[:0]); err != nil {
			t.Fatal(err)
		}
		if len(buf) == 0 {
			break
		}
		total += len(buf)
		c := &src.rels[0].chunk
		held = max(held, len(c.pend))
	}
	if total != n {
		t.Fatalf("%d tuples read, %d stored", total, n)
	}
	// What was handed over is forgotten once it is most of what is held.
	if held > 2*(chunkRows+1024) {
		t.Fatalf("held %d tuples at once reading %d that end at once", held, n)
	}
}
