package subject

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/histgen"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/store/history"
)

// sendsHistory writes a history of the paper's system holding n sends,
// one a chronon from 1 on, in time order; unsorted, when set, is one more
// line put just before the last.
func sendsHistory(t testing.TB, n int, unsorted string) string {
	t.Helper()
	dir := t.TempDir()
	spec := testkit.ReadFile(t, filepath.Join(testkit.Root(t), "testdata", "paper", "os.sdl"))
	if err := os.WriteFile(filepath.Join(dir, "os.sdl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("Process,Mailbox,at\n")
	for i := 1; i <= n; i++ {
		if i == n && unsorted != "" {
			b.WriteString(unsorted + "\n")
		}
		fmt.Fprintf(&b, "P%d,M%d,%d\n", i%8+1, i%5+1, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "SendMessage.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const p1Sends = "range of s is SendMessage\nretrieve (s.Process, s.Mailbox) where s.Process = \"P1\"\n"

// printHistory runs query over the history in dir through Print; onWrite,
// when set, is called before the first bytes go out.
func printHistory(t *testing.T, dir, text string, o format.Options, onWrite func()) (string, error) {
	t.Helper()
	sub, err := Open(context.Background(), Options{History: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: "q", Text: text}}, check.Options{Now: sub.Now()})
	if err != nil {
		t.Fatal(err)
	}
	w := &firstWrite{hook: onWrite}
	_, err = Print(context.Background(), sub, prog, PrintOptions{Output: o}, w)
	return w.String(), err
}

// wholeTables is what printing whole tables gives: the history loaded,
// the results formatted with format.WriteResult (each named as it is in a stream).
func wholeTables(t *testing.T, dir, text string, o format.Options) string {
	t.Helper()
	h, err := history.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, now, _ := h.Extent()
	prog, err := query.Compile(h.Catalog, []query.Source{{Name: "q", Text: text}}, check.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	rs, _, err := prog.RunHistory(h)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("\n")
		}
		if err := format.WriteResult(&b, r.Table, i, o); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

type firstWrite struct {
	bytes.Buffer
	hook func()
}

func (w *firstWrite) Write(p []byte) (int, error) {
	if w.hook != nil {
		w.hook()
		w.hook = nil
	}
	return w.Buffer.Write(p)
}

// TestHistoryPrintsAsItSettles: a query over a history prints its first
// rows while the history's file is still being read — rows appended to
// the file once the first bytes are out are in the output — and what it
// prints is byte for byte what printing the whole tables gives, in CSV
// and JSON Lines (the table form aligns its columns over every row, so
// it is written at the end), with several results.
func TestHistoryPrintsAsItSettles(t *testing.T) {
	const n = 100_000
	two := p1Sends + "retrieve (s.Mailbox) valid at begin of s where s.Process = \"P2\"\n"
	for _, kind := range []format.Kind{format.CSV, format.JSONL} {
		for _, text := range []string{p1Sends, two} {
			dir := sendsHistory(t, n, "")
			appended := false
			appendRows := func() {
				f, err := os.OpenFile(filepath.Join(dir, "SendMessage.csv"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for i := n + 1; i <= n+16; i++ {
					fmt.Fprintf(f, "P%d,M%d,%d\n", i%8+1, i%5+1, i)
				}
				appended = true
			}
			o := format.Options{Kind: kind}
			got, err := printHistory(t, dir, text, o, appendRows)
			if err != nil {
				t.Fatal(err)
			}
			if !appended {
				t.Fatal("nothing was printed")
			}
			if want := wholeTables(t, dir, text, o); got != want {
				t.Fatalf("format %d, %d results: the output differs from the whole tables' (%d bytes, want %d)", kind, strings.Count(text, "retrieve"), len(got), len(want))
			}
			if last := fmt.Sprintf("P1,M%d,", (n+16)%5+1); kind == format.CSV && text == p1Sends && !strings.Contains(got, last) {
				t.Errorf("the rows appended after the first output are missing: the file was read whole before anything was printed")
			}
		}
	}
	// The table form, written at the end, is the whole table's too.
	dir := sendsHistory(t, 2000, "")
	o := format.Options{Kind: format.Table}
	if got, err := printHistory(t, dir, p1Sends, o, nil); err != nil || got != wholeTables(t, dir, p1Sends, o) {
		t.Errorf("table form differs (err %v)", err)
	}
}

// TestUnsortedAfterRowsWentOut: a history file found out of time order
// after rows went out starts the run again with the file sorted; the run
// succeeds if the rows already printed are the first the sorted run
// prints — they are not printed twice — and fails, saying to sort the
// file, if they are not.
func TestUnsortedAfterRowsWentOut(t *testing.T) {
	const n = 100_000
	o := format.Options{Kind: format.CSV}
	// A send of P3 near the end, at time 1: P1's sends are the same.
	dir := sendsHistory(t, n, "P3,M1,1")
	got, err := printHistory(t, dir, p1Sends, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := wholeTables(t, dir, p1Sends, o); got != want {
		t.Fatalf("the output differs from the whole table's (%d bytes, want %d)", len(got), len(want))
	}
	// A send of P1 at time 1: the rows printed should have come after it.
	dir = sendsHistory(t, n, "P1,M1,1")
	_, err = printHistory(t, dir, p1Sends, o, nil)
	if err == nil || !strings.Contains(err.Error(), "sort the file by time") || !strings.Contains(err.Error(), "SendMessage.csv") {
		t.Fatalf("err = %v, want one naming the file and saying to sort it by time", err)
	}
}

// TestSortedPrintEqualsWhole: every query of the differential, rule and
// timeslice corpora prints over random histories exactly what printing
// its whole tables gives, in each format. In half of them a file is out
// of time order, so the run starts again: then it prints the same, or —
// when rows went out before the file was found unsorted, and they were
// wrong — fails saying so.
func TestSortedPrintEqualsWhole(t *testing.T) {
	spec, cat, corpus := differentialCorpora(t)
	for seed := range 4 {
		cfg := histgen.DefaultConfig(uint64(seed))
		cfg.Tuples, cfg.Span = 25, 50
		dir := t.TempDir()
		if err := history.Write(dir, histgen.Random(cat, cfg), spec, "spec.sdl"); err != nil {
			t.Fatal(err)
		}
		if seed%2 == 1 {
			shuffleFile(t, dir, cat.Relations[seed%len(cat.Relations)].Name, seed)
		}
		for _, q := range corpus {
			for _, kind := range []format.Kind{format.CSV, format.JSONL, format.Table} {
				o := format.Options{Kind: kind}
				got, err := printHistory(t, dir, q.Text, o, nil)
				want := wholeTables(t, dir, q.Text, o)
				if err != nil && seed%2 == 1 && strings.Contains(err.Error(), "sort the file by time") {
					// Rows went out before the file was found unsorted:
					// only wrong ones may fail the run.
					if strings.HasPrefix(want, got) {
						t.Fatalf("%s seed %d: %v, but what was printed is right:\n%s", q.Name, seed, err, got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s seed %d: %v", q.Name, seed, err)
				}
				if got != want {
					t.Fatalf("%s seed %d format %d: printed\n%s\nwhole tables\n%s", q.Name, seed, kind, got, want)
				}
			}
		}
	}
}

// TestSortedPrinterBuffers: a sorted printer writes its output in large
// writes, never one a row (a csv.Writer given the printer's buffer once
// flushed it at each row), and nothing by its timer in a short run.
func TestSortedPrinterBuffers(t *testing.T) {
	dir := sendsHistory(t, 2000, "")
	for _, kind := range []format.Kind{format.CSV, format.JSONL, format.Table} {
		w := &countWrites{}
		sub, err := Open(context.Background(), Options{History: dir})
		if err != nil {
			t.Fatal(err)
		}
		prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: "q", Text: p1Sends}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Print(context.Background(), sub, prog, PrintOptions{Output: format.Options{Kind: kind}}, w); err != nil {
			t.Fatal(err)
		}
		sub.Close()
		// 250 rows, a few KiB: one write, two if the machine was so slow
		// that the run outlasted sortedPatience.
		if w.n < 1 || w.n > 2 {
			t.Errorf("format %d: %d writes for 250 rows", kind, w.n)
		}
	}
}

type countWrites struct{ n int }

func (w *countWrites) Write(p []byte) (int, error) {
	w.n++
	return len(p), nil
}

// A live (or streamed) run prints through LiveOutput, on a goroutine of
// its own: the same bytes as a Printer fed in line by the run, every
// element and watermark in order (2,000 sends, each row printed as it
// settles, in three formats).
func TestLiveOutputPrintsInOrder(t *testing.T) {
	dir := sendsHistory(t, 2000, "")
	for _, kind := range []format.Kind{format.CSV, format.JSONL, format.Table} {
		run := func(staged bool) string {
			sub, err := Open(context.Background(), Options{History: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			prog, err := query.Compile(sub.Catalog(), []query.Source{{Name: "q", Text: p1Sends}}, check.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			out := format.Options{Kind: kind}
			if staged {
				if _, err := Print(context.Background(), sub, prog, PrintOptions{Output: out, Stream: true}, &b); err != nil {
					t.Fatal(err)
				}
				return b.String()
			}
			p := NewPrinter(&b, out, prog.Stmts)
			ro := RunOptions{Discard: true, OnElem: p.Elem}
			ro.Progress = func(algebra.Time) { p.Settle() }
			if _, _, err := sub.Run(context.Background(), prog, ro); err != nil {
				t.Fatal(err)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		staged, inline := run(true), run(false)
		if staged != inline || strings.Count(staged, "P1") < 250 {
			t.Errorf("format %d: staged printing gave %d bytes, in line %d:\n%.300s\n--\n%.300s", kind, len(staged), len(inline), staged, inline)
		}
	}
}
