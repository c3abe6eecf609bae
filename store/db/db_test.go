package db

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

func specFile(t testing.TB, rel string) Spec {
	t.Helper()
	path := filepath.Join("..", "..", rel)
	return Spec{Name: filepath.Base(path), Text: testkit.ReadFile(t, path)}
}

func diffSpec(t testing.TB) Spec  { return specFile(t, "testdata/differential/spec.sdl") }
func paperSpec(t testing.TB) Spec { return specFile(t, "testdata/paper/os.sdl") }

// small options exercise blocks, checkpoints and ends parts on small data.
var small = WriterOptions{BlockElems: 5, CheckpointElems: 7, CheckpointFactor: 1, FlushBytes: 200}

func render(h *algebra.History) string {
	var b strings.Builder
	for _, r := range h.Catalog.Relations {
		t := h.Table(r.Name)
		fmt.Fprintf(&b, "%s:\n", r.Name)
		sorted := &algebra.Table{Rel: r, Rows: slices.Clone(t.Rows)}
		sorted.SortRows()
		b.WriteString(testkit.Rows(sorted))
	}
	if h.Window != nil {
		fmt.Fprintf(&b, "window %d %d\n", h.Window.From, h.Window.To)
	}
	return b.String()
}

// memDB makes a database in memory.
func memDB(t testing.TB, spec Spec) *DB {
	t.Helper()
	d, err := create("mem", spec, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func importHistory(t testing.TB, spec Spec, h *algebra.History, opts WriterOptions) *DB {
	t.Helper()
	d := memDB(t, spec)
	if err := d.Import(h, opts, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

func importDisk(t testing.TB, spec Spec, h *algebra.History, opts WriterOptions) *DB {
	t.Helper()
	d, err := Create(filepath.Join(t.TempDir(), "db"), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Import(h, opts, nil); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestImportExport: a history imported and read back is the same history,
// with default and with tiny blocks and checkpoints, and after reopening.
func TestImportExport(t *testing.T) {
	spec := diffSpec(t)
	cat, err := compileSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(0); seed < 6; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 20
		h := histgen.Random(cat, cfg)
		if seed%2 == 0 {
			h.Window = &algebra.Window{From: -3, To: 40}
		}
		for _, opts := range []WriterOptions{{}, small} {
			d := importDisk(t, spec, h, opts)
			got, err := d.History(nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := render(got), render(h); g != w {
				t.Fatalf("seed %d: read back\n%s\nwant\n%s", seed, g, w)
			}
			dir := d.Dir()
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d, err = Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			got, err = d.History(nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := render(got), render(h); g != w {
				t.Fatalf("seed %d, reopened: read back\n%s\nwant\n%s", seed, g, w)
			}
			s, e, ok := d.Extent()
			s2, e2, ok2 := h.Extent()
			if s != s2 || e != e2 || ok != ok2 {
				t.Fatalf("seed %d: extent %d %d %v, want %d %d %v", seed, s, e, ok, s2, e2, ok2)
			}
			d.Close()
		}
	}
}

// readWindow reads relations through windows and collects tuples.
func readWindow(t testing.TB, d *DB, reads []Read) (map[string][]algebra.Tuple, ReadStats) {
	t.Helper()
	src, err := d.NewSource(reads)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := map[string][]algebra.Tuple{}
	open := map[*stream.Rec]int{}
	last := algebra.Beginning
	lastPhase := 0
	for {
		rel, e, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		phase := 1
		if e.Kind == stream.End {
			phase = 0
		}
		if e.T < last || e.T == last && phase < lastPhase {
			t.Fatalf("element %v at %d after %d", e.Kind, e.T, last)
		}
		last, lastPhase = e.T, phase
		switch e.Kind {
		case stream.Begin:
			if e.Rec.From != e.T {
				t.Fatalf("begin at %d of a tuple from %d", e.T, e.Rec.From)
			}
			open[e.Rec] = len(out[rel])
			out[rel] = append(out[rel], algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: algebra.Forever})
		case stream.End:
			i, ok := open[e.Rec]
			if !ok {
				t.Fatalf("end of a tuple that did not begin")
			}
			out[rel][i].To = e.T
			delete(open, e.Rec)
		case stream.Event:
			out[rel] = append(out[rel], algebra.Tuple{Vals: e.Rec.Vals, From: e.T, To: e.T + 1})
		}
	}
	return out, src.Stats()
}

func meets(row algebra.Tuple, w algebra.Window) bool {
	return row.From <= w.To && row.To > w.From
}

// checkWindowed: a windowed read delivers exactly the tuples meeting the
// window, as stored.
func checkWindowed(t *testing.T, d *DB, h *algebra.History, w algebra.Window, what string) ReadStats {
	t.Helper()
	var reads []Read
	for _, r := range h.Catalog.Relations {
		reads = append(reads, Read{Rel: r.Name, Window: &w})
	}
	got, stats := readWindow(t, d, reads)
	for _, r := range h.Catalog.Relations {
		all := map[string]int{}
		key := func(row algebra.Tuple) string { return fmt.Sprint(row.Vals, row.From, row.To) }
		for _, row := range h.Table(r.Name).Rows {
			all[key(row)]++
		}
		have := map[string]int{}
		for _, row := range got[r.Name] {
			k := key(row)
			have[k]++
			if have[k] > all[k] {
				t.Fatalf("%s: %s window [%d, %d]: %s read but not stored (or read twice)", what, r.Name, w.From, w.To, k)
			}
			if !meets(row, w) && w.From <= w.To {
				t.Fatalf("%s: %s window [%d, %d]: %s read, but it does not meet the window", what, r.Name, w.From, w.To, k)
			}
		}
		for _, row := range h.Table(r.Name).Rows {
			if meets(row, w) && have[key(row)] == 0 {
				t.Fatalf("%s: %s window [%d, %d]: %s meets it but was not read", what, r.Name, w.From, w.To, key(row))
			}
		}
	}
	return stats
}

// TestWindowedReads: reads through windows of every width and place, by
// Next and (every third history) by Chunk (checkChunks).
func TestWindowedReads(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	for seed := uint64(0); seed < 30; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 30
		cfg.Span = 60
		h := histgen.Random(cat, cfg)
		d := importHistory(t, spec, h, small)
		if seed%3 == 0 {
			checkChunks(t, d, h, nil, fmt.Sprintf("seed %d", seed))
		}
		for _, w := range testWindows(3) {
			checkWindowed(t, d, h, w, fmt.Sprintf("seed %d", seed))
			if seed%3 == 0 {
				checkChunks(t, d, h, &w, fmt.Sprintf("seed %d", seed))
			}
		}
	}
}

// testWindows are windows of every width and place over the histories the
// tests make (cfg.Span 60), lo stepping by step, and two half-infinite
// ones.
func testWindows(step int64) []algebra.Window {
	ws := []algebra.Window{{From: algebra.Beginning, To: 10}, {From: 10, To: algebra.Forever}}
	for lo := int64(-2); lo < 65; lo += step {
		for _, width := range []int64{0, 1, 5, 20} {
			ws = append(ws, algebra.Window{From: lo, To: lo + width})
		}
	}
	return ws
}

// lateHistory makes a history and a recording order for it in which some
// interval tuples are learnt late: whole at their end, or begun late.
type op struct {
	kind     int // 0 begin, 1 end, 2 event, 3 whole, 4 late begin
	t        int64
	from, to int64
	key      uint64
	vals     []algebra.Value
	rel      string
}

func lateOps(cat *algebra.Catalog, h *algebra.History, r *rand.Rand) []op {
	var ops []op
	for _, rel := range cat.Relations {
		for i, row := range h.Table(rel.Name).Rows {
			key := uint64(i)
			switch {
			case rel.IsEvent():
				ops = append(ops, op{kind: 2, t: row.From, from: row.From, vals: row.Vals, rel: rel.Name})
			case row.To != algebra.Forever && r.IntN(4) == 0:
				ops = append(ops, op{kind: 3, t: row.To, from: row.From, to: row.To, vals: row.Vals, rel: rel.Name})
			default:
				at := row.From
				kind := 0
				if r.IntN(4) == 0 {
					// learnt late, but before it ends
					limit := row.To
					if limit == algebra.Forever {
						limit = row.From + 10
					}
					at = row.From + r.Int64N(limit-row.From)
					kind = 4
				}
				ops = append(ops, op{kind: kind, t: at, from: row.From, key: key, vals: row.Vals, rel: rel.Name})
				if row.To != algebra.Forever {
					ops = append(ops, op{kind: 1, t: row.To, key: key, rel: rel.Name})
				}
			}
		}
	}
	slices.SortStableFunc(ops, func(a, b op) int {
		if a.t != b.t {
			if a.t < b.t {
				return -1
			}
			return 1
		}
		pa, pb := 1, 1
		if a.kind == 1 || a.kind == 3 {
			pa = 0
		}
		if b.kind == 1 || b.kind == 3 {
			pb = 0
		}
		return pa - pb
	})
	return ops
}

func play(t testing.TB, w *Writer, ops []op) {
	t.Helper()
	for _, o := range ops {
		rw, err := w.Relation(o.rel)
		if err != nil {
			t.Fatal(err)
		}
		switch o.kind {
		case 0, 4:
			err = rw.Begin(o.key, o.from, o.vals)
		case 1:
			var ok bool
			ok, err = rw.End(o.key, o.t)
			if err == nil && !ok {
				t.Fatalf("end of unknown key %d", o.key)
			}
		case 2:
			err = rw.Event(o.t, o.vals)
		case 3:
			err = rw.Whole(o.from, o.to, o.vals)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLateBegins: tuples learnt late (begun late, or whole at their end)
// read back exactly, in full and through windows, with checkpoints
// amended.
func TestLateBegins(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	for seed := uint64(0); seed < 40; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 30
		cfg.Span = 60
		h := histgen.Random(cat, cfg)
		ops := lateOps(cat, h, rand.New(rand.NewPCG(seed, 1)))
		d := memDB(t, spec)
		w, err := d.NewWriter(small)
		if err != nil {
			t.Fatal(err)
		}
		play(t, w, ops)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := d.History(nil)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := render(got), render(h); g != w {
			t.Fatalf("seed %d: read back\n%s\nwant\n%s", seed, g, w)
		}
		for lo := int64(0); lo < 65; lo += 4 {
			checkWindowed(t, d, h, algebra.Window{From: lo, To: lo + 2}, fmt.Sprintf("seed %d", seed))
		}
	}
}

// TestEmptyTuplesDropped: a tuple that begins and ends at one instant is
// not recorded, as the ground truth does not record it.
func TestEmptyTuplesDropped(t *testing.T) {
	d := memDB(t, paperSpec(t))
	w, _ := d.NewWriter(WriterOptions{})
	rw, err := w.Relation("Processor")
	if err != nil {
		t.Fatal(err)
	}
	a := []algebra.Value{algebra.Entity("A")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rw.Begin(1, 5, a))
	must(rw.Begin(2, 7, a))
	if ok, err := rw.End(2, 7); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := rw.End(1, 9); !ok || err != nil {
		t.Fatal(ok, err)
	}
	must(rw.Whole(9, 9, a))
	must(w.Close())
	h, err := d.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(h.Table("Processor").Rows); got != `[{["A"] 5 9}]` {
		t.Errorf("rows %s", got)
	}
	if st := d.Stats()[0]; st.Tuples != 1 {
		t.Errorf("tuples %d, want 1", st.Tuples)
	}
}

// TestOrderErrors: an End or Event before what a relation already has is
// refused with ErrOrder; nothing else changes.
func TestOrderErrors(t *testing.T) {
	d := memDB(t, paperSpec(t))
	w, _ := d.NewWriter(WriterOptions{})
	s, _ := w.Relation("SendMessage")
	v := []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")}
	if err := s.Event(10, v); err != nil {
		t.Fatal(err)
	}
	if err := s.Event(9, v); !errors.Is(err, ErrOrder) {
		t.Errorf("event in the past: %v", err)
	}
	if err := s.Event(10, v[:1]); err == nil || !strings.Contains(err.Error(), "1 values, want 2") {
		t.Errorf("short tuple: %v", err)
	}
	if err := s.Event(11, []algebra.Value{algebra.Int(1), algebra.Entity("M1")}); err == nil {
		t.Error("wrong kind accepted")
	}
}

// TestRetention: with Retain, what is older than the retention span is
// deleted as checkpoints pass, the window starts at the highest floor, and
// every tuple valid from then on reads back exactly — whole, or through
// windows — with late begins too.
func TestRetention(t *testing.T) {
	spec := diffSpec(t)
	cat, _ := compileSpec(spec)
	for seed := uint64(0); seed < 20; seed++ {
		cfg := histgen.DefaultConfig(seed)
		cfg.Tuples = 80
		cfg.Span = 200
		cfg.MaxLen = 15
		h := histgen.Random(cat, cfg)
		h.Window = &algebra.Window{From: 0, To: 220}
		ops := lateOps(cat, h, rand.New(rand.NewPCG(seed, 2)))
		d := memDB(t, spec)
		opts := small
		opts.Retain = 60
		w, err := d.NewWriter(opts)
		if err != nil {
			t.Fatal(err)
		}
		w.SetWindow(*h.Window)
		play(t, w, ops)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		win := d.Window()
		if win.From < 220-60-60 || win.From > 220-60 {
			// The floor is a checkpoint at most Retain before the last
			// one; checkpoints come every few elements here.
			t.Logf("seed %d: window starts at %d", seed, win.From)
		}
		if win.From <= 0 {
			t.Fatalf("seed %d: nothing was dropped (window %v)", seed, *win)
		}
		// Keys below each relation's floor are gone.
		for _, m := range d.rels {
			if !m.state.floorOK {
				continue
			}
			d.scanKeys(relKey(pBlock, m.id), func(k []byte) error {
				if pk, _ := parseKey(k); pk.t < m.state.floor {
					t.Errorf("seed %d: %s block at %d below the floor %d", seed, m.rel.Name, pk.t, m.state.floor)
				}
				return nil
			})
			d.scanKeys(relKey(pCheck, m.id), func(k []byte) error {
				if pk, _ := parseKey(k); pk.t < m.state.floor {
					t.Errorf("seed %d: %s checkpoint at %d below the floor %d", seed, m.rel.Name, pk.t, m.state.floor)
				}
				return nil
			})
		}
		// What is kept: every tuple valid at or after the window's start.
		kept := algebra.NewHistory(cat)
		kept.Window = win
		for _, r := range cat.Relations {
			for _, row := range h.Table(r.Name).Rows {
				if row.To > win.From {
					kept.Table(r.Name).Rows = append(kept.Table(r.Name).Rows, row)
				}
			}
		}
		got, err := d.History(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cat.Relations {
			var recent []algebra.Tuple
			for _, row := range got.Table(r.Name).Rows {
				if row.To > win.From {
					recent = append(recent, row)
				}
			}
			got.Table(r.Name).Rows = recent
		}
		if g, w := render(got), render(kept); g != w {
			t.Fatalf("seed %d: kept\n%s\nwant\n%s", seed, g, w)
		}
		for lo := win.From; lo < 225; lo += 7 {
			checkWindowed(t, d, kept, algebra.Window{From: lo, To: lo + 3}, fmt.Sprintf("seed %d", seed))
		}
	}
}
