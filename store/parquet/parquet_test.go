package parquet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/record"
)

var spec = db.Spec{Name: "os.sdl", Text: ossensors.SDL}

const hour = int64(time.Hour)

// call is one recorder call: a Begin, End or Event at t.
type call struct {
	rel  string
	kind byte // 'b', 'e', 'v'
	key  uint64
	t    int64
	vals []algebra.Value
}

// workload is three hours of processes (some living across hours, two
// still running at the end) and messages, in time order.
func workload(cat *algebra.Catalog) []call {
	state := cat.Lookup("Process").Attrs[1].Type.Enum
	var out []call
	base := int64(1_800_000_000) * int64(time.Second) // 2027-01-15T08:00Z
	base = base / hour * hour
	type open struct {
		key uint64
		end int64
	}
	var live []open
	for i := range 180 {
		t := base + int64(i)*int64(time.Minute)
		// ends due first (Ends before Begins at one time)
		slices.SortFunc(live, func(a, b open) int { return int(a.end - b.end) })
		for len(live) > 0 && live[0].end <= t {
			out = append(out, call{rel: "Process", kind: 'e', key: live[0].key, t: live[0].end})
			live = live[1:]
		}
		key := uint64(i + 1)
		life := int64(i%7+1) * 7 * int64(time.Minute)
		if i == 3 || i == 100 {
			life = 10 * hour // still running at the end
		}
		st := state.Members[i%4]
		out = append(out, call{rel: "Process", kind: 'b', key: key, t: t,
			vals: []algebra.Value{algebra.Entity(fmt.Sprintf("P%d", i)), algebra.Enum(st, state.Ordinal(st))}})
		live = append(live, open{key, t + life})
		out = append(out, call{rel: "SendMessage", kind: 'v', t: t + int64(time.Second),
			vals: []algebra.Value{algebra.Entity(fmt.Sprintf("P%d", i)), algebra.Entity(fmt.Sprintf("M%d", i%3))}})
	}
	end := base + 3*hour
	slices.SortFunc(live, func(a, b open) int { return int(a.end - b.end) })
	for _, o := range live {
		if o.end < end {
			out = append(out, call{rel: "Process", kind: 'e', key: o.key, t: o.end})
		}
	}
	return out
}

// pq is a Parquet writer as the recorder's sink.
func sinkOf(w *Writer) record.Sink { return record.SinkOf[*RelWriter](w) }

// feed gives calls[from:to] to a sink, advancing and syncing after each;
// at, when set, is told each call's journal position (i+1).
func feed(t testing.TB, s record.Sink, at func(uint64), calls []call, from, to int) {
	t.Helper()
	feedAdvancing(t, s, at, calls, from, to, true)
}

// feedAdvancing is feed; advance false makes the calls without advancing
// or syncing (a recorder's inputs after its last sync).
func feedAdvancing(t testing.TB, s record.Sink, at func(uint64), calls []call, from, to int, advance bool) {
	t.Helper()
	for i := from; i < to; i++ {
		c := calls[i]
		if at != nil {
			at(uint64(i + 1))
		}
		r, err := s.Relation(c.rel)
		if err == nil {
			switch c.kind {
			case 'b':
				err = r.Begin(c.key, c.t, c.vals)
			case 'e':
				_, err = r.End(c.key, c.t)
			case 'v':
				err = r.Event(c.t, c.vals)
			}
		}
		if err == nil && advance {
			s.Advance(c.t)
			err = s.Sync()
		}
		if err != nil {
			t.Fatalf("call %d %+v: %v", i, c, err)
		}
	}
}

// readBack opens a recording and loads it whole.
func readBack(t *testing.T, dir string) (*Store, *algebra.History) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.History()
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

// asDatabase renders got and what a database recording the calls holds.
func asDatabase(t *testing.T, got *algebra.History, calls []call) (g, w string) {
	t.Helper()
	want, err := badger(t, calls).History(nil)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.History(got, "Process", "SendMessage"), testkit.History(want, "Process", "SendMessage")
}

// badger is the same calls recorded into a database: what the Parquet
// recording must read back as.
func badger(t *testing.T, calls []call) *db.DB {
	t.Helper()
	d, err := db.CreateInMemory(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	w, err := d.NewWriter(db.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	feed(t, record.DB(w), nil, calls, 0, len(calls))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEqualsDatabase: a Parquet recording reads back as a database
// recording of the same calls — tuples across hours, events, tuples still
// open at the end (to_ns NULL) — and its files are where the layout says.
func TestEqualsDatabase(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, spec, Options{Host: "web-1", Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	calls := workload(w.Catalog())
	feed(t, sinkOf(w), w.At, calls, 0, len(calls))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, got := readBack(t, dir)
	if g, w := asDatabase(t, got, calls); g != w {
		t.Fatalf("Parquet\n%s\ndatabase\n%s", g, w)
	}
	hours := map[string]bool{}
	open := 0
	for _, f := range s.files {
		if f.host != "web-1" {
			t.Errorf("%s: host %q", f.path, f.host)
		}
		hours[filepath.Base(filepath.Dir(f.path))] = true
		if f.open {
			open++
		}
	}
	if len(hours) < 3 || open != 1 {
		t.Errorf("hours %v, %d open files; want 3 hours or more, one open file", hours, open)
	}
}

// TestWindowOpensOnlyItsFiles: a windowed scan opens only the files
// whose hour and least begin say they may hold a tuple valid in the
// window, and delivers what a database's windowed read delivers.
func TestWindowOpensOnlyItsFiles(t *testing.T) {
	s := recorded(t, t.TempDir(), Options{Every: 10 * time.Minute}, -1)
	calls := workload(s.Catalog())
	d := badger(t, calls)
	base := calls[0].t
	for _, win := range []algebra.Window{
		{From: base + hour + 10*int64(time.Minute), To: base + hour + 20*int64(time.Minute)},
		{From: base + 2*hour + 50*int64(time.Minute), To: base + 3*hour},
		{From: base, To: base + int64(time.Minute)},
	} {
		for _, rel := range []string{"Process", "SendMessage"} {
			reads := []db.Read{{Rel: rel, Window: &win}}
			sc, err := s.NewScan(reads)
			if err != nil {
				t.Fatal(err)
			}
			got := drain(t, sc)
			src, err := d.NewSource(reads)
			if err != nil {
				t.Fatal(err)
			}
			want := drain(t, src)
			src.Close()
			if got != want {
				t.Errorf("%s through %v: Parquet\n%s\ndatabase\n%s", rel, win, got, want)
			}
			total, need := 0, 0
			for _, f := range s.files {
				if f.rel == rel {
					total++
					if f.needs(&win) {
						need++
					}
				}
			}
			if n := sc.Stats().Files; n != need || n >= total {
				t.Errorf("%s through %v: opened %d files of %d, the names say %d", rel, win, n, total, need)
			}
		}
	}
}

// drain renders a source's elements, in order.
func drain(t *testing.T, src stream.Source) string {
	t.Helper()
	var b strings.Builder
	for {
		rel, e, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return b.String()
		}
		fmt.Fprintf(&b, "%s %d %d %v %d\n", rel, e.Kind, e.T, e.Rec.Vals, e.Rec.From)
	}
}

// TestCrashLeavesWholeFiles: a writer that stops without Close (killed)
// leaves only whole files: what its writes put there reads back — every
// tuple ending before the manifest's Through — and a temporary file left
// half-written is not read.
func TestCrashLeavesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, spec, Options{Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	calls := workload(w.Catalog())
	half := len(calls) / 2
	feed(t, sinkOf(w), w.At, calls, 0, half)
	// Killed: no Close. A file being written when it died:
	part := filepath.Join(dir, "relation=Process", "host=local", "hour=2027-01-15T09", ".tmp-123")
	if err := os.WriteFile(part, []byte("PAR1 half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, got := readBack(t, dir)
	through := s.man.Through
	if through <= calls[0].t {
		t.Fatalf("nothing written before the crash (through %d)", through)
	}
	// What a database holds of tuples ending, and events, before Through.
	want, err := badger(t, calls[:half]).History(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range want.Tables {
		tb.Rows = slices.DeleteFunc(tb.Rows, func(r algebra.Tuple) bool { return r.To >= through || r.To == algebra.Forever })
	}
	if g, w := testkit.History(got, "Process", "SendMessage"), testkit.History(want, "Process", "SendMessage"); g != w {
		t.Fatalf("after the crash\n%s\nwant\n%s", g, w)
	}
}

// TestResumeHoldsEachTupleOnce: a recording killed mid-run and resumed
// with Append from its Resume position (a journal replaying from there)
// holds exactly what an uninterrupted one holds — nothing lost, nothing
// twice — and a file of a write the manifest does not count (killed
// between renames) is removed.
func TestResumeHoldsEachTupleOnce(t *testing.T) {
	for _, cut := range []int{1, 57, 200, 333} {
		dir := t.TempDir()
		w, err := Create(dir, spec, Options{Every: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		calls := workload(w.Catalog())
		feed(t, sinkOf(w), w.At, calls, 0, cut)
		// Killed after renaming a file of a write not yet in the manifest.
		stray := filepath.Join(dir, "relation=Process", "host=local", "hour=2027-01-15T08", fmt.Sprintf("0-%d.parquet", w.man.Writes+1))
		os.MkdirAll(filepath.Dir(stray), 0o755)
		copyAny(t, dir, stray)
		w2, err := Append(dir, Options{Every: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cut %d: the uncounted file stays: %v", cut, err)
		}
		from := int(w2.Resume()) - 1
		if from < 0 || from > cut {
			t.Fatalf("cut %d: resume at %d", cut, w2.Resume())
		}
		feed(t, sinkOf(w2), w2.At, calls, from, len(calls))
		if err := w2.Close(); err != nil {
			t.Fatal(err)
		}
		_, got := readBack(t, dir)
		if g, w := asDatabase(t, got, calls); g != w {
			t.Fatalf("cut %d, resumed at %d: got\n%s\nwant\n%s", cut, from, g, w)
		}
	}
}

// TestResumeAfterClose: a recording closed with tuples ending after the
// last Advance (a recorder's last inputs come after its last sync), and
// an observation whose window reaches past it, then resumed from its
// Resume position and replayed to its end again (a journal's consumer run
// again on the finished recording) holds each tuple once: Close's
// Through passes every end it wrote. Without that, the tuples ending
// after the last Advance, and the observation, were written twice.
func TestResumeAfterClose(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, spec, Options{Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	calls := workload(w.Catalog())
	last := len(calls) - 40
	obs := db.Observation{Observed: []algebra.Tuple{{Vals: []algebra.Value{algebra.Str("Process"), algebra.DurationVal(0)},
		From: calls[0].t, To: algebra.Forever}}}
	win := algebra.Window{From: calls[0].t, To: calls[len(calls)-1].t + int64(time.Minute)}
	run := func(w *Writer, from int) {
		feedAdvancing(t, sinkOf(w), w.At, calls, from, last, true)
		feedAdvancing(t, sinkOf(w), w.At, calls, max(from, last), len(calls), false)
		w.SetObservation(obs)
		w.SetWindow(win)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(w, 0)
	s, first := readBack(t, dir)
	firstObs, err := s.Observation()
	if err != nil {
		t.Fatal(err)
	}
	w2, err := Append(dir, Options{Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run(w2, int(w2.Resume())-1)
	s, got := readBack(t, dir)
	if g, w := asDatabase(t, got, calls); g != w {
		t.Fatalf("replayed after Close: got\n%s\nwant\n%s", g, w)
	}
	if g, w := asDatabase(t, first, calls); g != w {
		t.Fatalf("closed: got\n%s\nwant\n%s", g, w)
	}
	gotObs, err := s.Observation()
	if err != nil {
		t.Fatal(err)
	}
	if g, w := testkit.History(gotObs, algebra.ObservedName), testkit.History(firstObs, algebra.ObservedName); g != w || len(gotObs.Table(algebra.ObservedName).Rows) != 1 {
		t.Fatalf("observation replayed after Close:\n%s\nclosed:\n%s", g, w)
	}
}

// copyAny copies some file of the recording to path (any whole Parquet
// file: its content is not what is tested).
func copyAny(t *testing.T, dir, path string) {
	t.Helper()
	files, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !f.tmp && f.rel == "Process" {
			data, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	if err := os.WriteFile(path, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// processRow is a Process file's row as an independent reader sees it:
// parquet-go's generic reader, by column name, with no tqmon code.
type processRow struct {
	Process string `parquet:"Process"`
	State   string `parquet:"State"`
	Host    string `parquet:"host"`
	From    int64  `parquet:"from_ns"`
	To      *int64 `parquet:"to_ns,optional"`
}

// TestGenericReader: the files read with parquet-go's generic reader into
// a plain struct (the documented schema, docs/parquet.md) give the
// database's tuples.
func TestGenericReader(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, spec, Options{Host: "web-2", Every: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	calls := workload(w.Catalog())
	feed(t, sinkOf(w), w.At, calls, 0, len(calls))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "relation=Process", "host=web-2", "hour=*", "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no files: %v", err)
	}
	var got []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		r := pq.NewGenericReader[processRow](f)
		buf := make([]processRow, 64)
		for {
			n, err := r.Read(buf)
			for _, x := range buf[:n] {
				to := "open"
				if x.To != nil {
					to = fmt.Sprint(*x.To)
				}
				got = append(got, fmt.Sprintf("%s %s %s %d %s", x.Host, x.Process, x.State, x.From, to))
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		f.Close()
	}
	h, err := badger(t, calls).History(nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range h.Table("Process").Rows {
		to := "open"
		if r.To != algebra.Forever {
			to = fmt.Sprint(r.To)
		}
		want = append(want, fmt.Sprintf("web-2 %s %s %d %s", r.Vals[0].S, r.Vals[1].S, r.From, to))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("generic reader\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestHostAttribute: a relation with a Host attribute is partitioned by
// it and has no host column of its own; floats, bools and strings read
// back; a relation whose names would collide in a case-blind engine
// (an int attribute HOST beside the host column) is refused.
func TestHostAttribute(t *testing.T) {
	sdl := db.Spec{Name: "notes.sdl", Text: `entity type Cpu
entity relation Cpu(Cpu: Cpu)
event relation Note(Host: string, Text: string, Weight: float, Urgent: bool)
event relation Bad(HOST: int)
clock 1ns
`}
	dir := t.TempDir()
	w, err := Create(dir, sdl, Options{Host: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Relation("Bad"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("Bad: %v; want a refusal naming the column twice", err)
	}
	notes, err := w.Relation("Note")
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range []string{"web-1", "web-2", "web-1"} {
		at := int64(i+1) * int64(time.Second)
		if err := notes.Event(at, []algebra.Value{algebra.Str(h), algebra.Str(fmt.Sprint("note ", i)), algebra.Float(0.5 + float64(i)), algebra.Bool(i == 1)}); err != nil {
			t.Fatal(err)
		}
		w.Advance(at)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, got := readBack(t, dir)
	hosts := map[string]bool{}
	for _, f := range s.files {
		hosts[f.host] = true
		pf, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := pf.Stat()
		file, err := pq.OpenFile(pf, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		var cols []string
		for _, c := range file.Schema().Columns() {
			cols = append(cols, c[0])
		}
		pf.Close()
		if slices.Contains(cols, "host") || !slices.Contains(cols, "Host") {
			t.Errorf("%s: columns %v", f.path, cols)
		}
	}
	if len(hosts) != 2 || !hosts["web-1"] || !hosts["web-2"] {
		t.Errorf("host partitions %v", hosts)
	}
	want := `Note: 3
["web-1" "note 0" 0.5 false] 1000000000 1000000001
["web-2" "note 1" 1.5 true] 2000000000 2000000001
["web-1" "note 2" 2.5 false] 3000000000 3000000001
`
	if g := testkit.History(got, "Note"); g != want {
		t.Errorf("read back\n%s\nwant\n%s", g, want)
	}
}
