package query_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
)

// chunked is a source of SendMessage's tuples in chunks (exec.ChunkSource)
// that counts the chunks it has handed over; it has no elements to give.
type chunked struct {
	rows   []algebra.Tuple
	size   int
	handed int
}

func (c *chunked) Next() (string, stream.Elem, bool, error) {
	return "", stream.Elem{}, false, errors.New("read as elements")
}

func (c *chunked) Chunk(rel string, buf []algebra.Tuple) ([]algebra.Tuple, error) {
	n := min(c.size, len(c.rows))
	if n > 0 {
		c.handed++
	}
	buf = append(buf, c.rows[:n]...)
	c.rows = c.rows[n:]
	return buf, nil
}

// TestChunksSettle: a program run over chunks (exec.Network.RunChunks)
// delivers its answers as they settle, before its input is read: P1's
// sends, each an event, reach OnElem while the first chunks are read, and
// a wait of P1's (an interval) ends before the chunk after its end is
// read. Run through the row operators, as without the chunked path, the
// source would be read as elements and fail.
func TestChunksSettle(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata", "paper", "os.sdl"))
	for _, c := range []struct{ rel, text string }{
		{"SendMessage", "range of s is SendMessage\nretrieve (s.Mailbox) where s.Process = \"P1\"\n"},
		{"Waiting", "range of w is Waiting\nretrieve (w.Mailbox) where w.Process = \"P1\"\n"},
	} {
		prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: c.text}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rel := cat.Lookup(c.rel)
		src := &chunked{size: 100}
		// One tuple a chronon, P1's every tenth; a wait lasts 5 chronons.
		for i := range 10_000 {
			p := fmt.Sprint("P", 2+i%3)
			if i%10 == 0 {
				p = "P1"
			}
			vals := []algebra.Value{algebra.Entity(p), algebra.Entity(fmt.Sprint("M", i%7))}
			to := algebra.Time(i + 1)
			if !rel.IsEvent() {
				to = algebra.Time(i + 5)
			}
			src.rows = append(src.rows, algebra.Tuple{Vals: vals, From: algebra.Time(i), To: to})
		}
		var late []string
		elems := 0
		open := func([]string) (stream.Source, error) { return src, nil }
		_, st, err := prog.RunSource(open, nil, nil, query.Output{Discard: true, OnElem: func(_ int, e stream.Elem) {
			elems++
			// Element at time T is final once a tuple starting after T
			// has been read: by the chunk holding T+1 (T/100+1 handed).
			if limit := int(e.T)/100 + 2; src.handed > limit && len(late) < 3 {
				late = append(late, fmt.Sprintf("%v at %d after %d chunks", e.Kind, e.T, src.handed))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Chunked {
			t.Fatalf("%s: not run over chunks", c.rel)
		}
		if want := 1000 * map[bool]int{true: 1, false: 2}[rel.IsEvent()]; elems != want {
			t.Fatalf("%s: %d elements, want %d", c.rel, elems, want)
		}
		if len(late) > 0 {
			t.Fatalf("%s: elements delivered late: %v", c.rel, late)
		}
	}
}

// TestChunksForget: a run over chunks keeps no group whose results are
// all delivered past its bound (exec's compactMin, 65,536, or twice the
// groups kept at the last forgetting, plus a chunk's): over 150,000 sends
// each to a mailbox of its own it holds far fewer groups than that
// (PeakHeld), and the groups it forgot and meets again, and a result open
// all along, come out as they would have.
func TestChunksForget(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata", "paper", "os.sdl"))
	const n = 150_000
	for _, c := range []struct {
		rel, text string
		cycle     int // mailboxes in turn
	}{
		{"SendMessage", "range of s is SendMessage\nretrieve (s.Mailbox)\n", n},
		{"Waiting", "range of w is Waiting\nretrieve (w.Mailbox)\n", 80_000},
	} {
		prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: c.text}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		event := cat.Lookup(c.rel).IsEvent()
		src := &chunked{size: 1000}
		for i := range n {
			mb, to := fmt.Sprint("M", i%c.cycle), algebra.Time(i+1)
			if !event {
				to = algebra.Time(i + 3)
				if i%1000 == 0 {
					mb, to = "Mlong", algebra.Time(i+2000) // one result from 0 to n+1000
				}
			}
			src.rows = append(src.rows, algebra.Tuple{Vals: []algebra.Value{algebra.Entity("P1"), algebra.Entity(mb)}, From: algebra.Time(i), To: to})
		}
		begins, ends := 0, 0
		var long []string
		open := func([]string) (stream.Source, error) { return src, nil }
		_, st, err := prog.RunSource(open, nil, nil, query.Output{Discard: true, OnElem: func(_ int, e stream.Elem) {
			switch e.Kind {
			case stream.End:
				ends++
			default:
				begins++
			}
			if e.Rec.Vals[0].S == "Mlong" {
				long = append(long, fmt.Sprint(e.Kind, e.T))
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Chunked {
			t.Fatalf("%s: not run over chunks", c.rel)
		}
		if st.PeakHeld > 70_000 {
			t.Fatalf("%s: %d groups held at once", c.rel, st.PeakHeld)
		}
		wantBegins, wantEnds := n, 0
		if !event {
			wantBegins = n - n/1000 + 1
			wantEnds = wantBegins
			if want := fmt.Sprint([]string{fmt.Sprint(stream.Begin, 0), fmt.Sprint(stream.End, n-1000+2000)}); fmt.Sprint(long) != want {
				t.Fatalf("%s: the long result's elements %v, want %v", c.rel, long, want)
			}
		}
		if begins != wantBegins || ends != wantEnds {
			t.Fatalf("%s: %d begins and %d ends, want %d and %d", c.rel, begins, ends, wantBegins, wantEnds)
		}
	}
}

// TestChunksBudget: a run over chunks stops at the memory budget as the
// row operators do (the heap a watchdog reports over the limit), with a
// *exec.MemoryError, after at most a chunk.
func TestChunksBudget(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata", "paper", "os.sdl"))
	b := &exec.Budget{Limit: 1 << 20}
	prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: "range of s is SendMessage\nretrieve (s.Mailbox)\n"}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prog = prog.WithBudget(b)
	src := &chunked{size: 100}
	for i := range 1000 {
		src.rows = append(src.rows, algebra.Tuple{Vals: []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")}, From: algebra.Time(i), To: algebra.Time(i + 1)})
	}
	open := func([]string) (stream.Source, error) { return src, nil }
	_, _, err = prog.RunSource(open, nil, nil, query.Output{Discard: true, OnElem: func(_ int, e stream.Elem) {
		if e.T == 150 {
			b.Over(2 << 20)
		}
	}})
	var me *exec.MemoryError
	if !errors.As(err, &me) {
		t.Fatalf("err %v, want a memory error", err)
	}
	if src.handed > 3 {
		t.Fatalf("stopped after %d chunks", src.handed)
	}
}

// relChunks is a source of several relations' tuples in chunks, each
// relation's own (exec.ChunkSource), counting the chunks it has handed
// over per relation; it has no elements to give.
type relChunks struct {
	rows   map[string][]algebra.Tuple
	size   int
	handed map[string]int
}

func (c *relChunks) Next() (string, stream.Elem, bool, error) {
	return "", stream.Elem{}, false, errors.New("read as elements")
}

func (c *relChunks) Chunk(rel string, buf []algebra.Tuple) ([]algebra.Tuple, error) {
	rows := c.rows[rel]
	n := min(c.size, len(rows))
	if n > 0 {
		c.handed[rel]++
	}
	c.rows[rel] = rows[n:]
	return append(buf, rows[:n]...), nil
}

// TestSemiSettles: ResumedbyP1 run over chunks as a semi-join
// (exec.Network.RunSemi) delivers its answers as they settle — a wait's
// result, an event at its end, once a wait beginning after that end is
// read — and holds only the results of the waits still open (PeakHeld);
// with its memory budget over, it stops within a chunk.
func TestSemiSettles(t *testing.T) {
	cat := testkit.LoadCatalog(t, filepath.Join(testkit.Root(t), "testdata", "paper", "os.sdl"))
	text := testkit.ReadFile(t, filepath.Join(testkit.Root(t), "testdata", "paper", "resumed_by_p1.tq"))
	// P1 sends to M1 at 0; a wait a chronon on M1, each 5 long, by P2…P4.
	src := func() *relChunks {
		c := &relChunks{size: 100, rows: map[string][]algebra.Tuple{}, handed: map[string]int{}}
		c.rows["SendMessage"] = []algebra.Tuple{{Vals: []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")}, From: 0, To: 1}}
		for i := range 10_000 {
			vals := []algebra.Value{algebra.Entity(fmt.Sprint("P", 2+i%3)), algebra.Entity("M1")}
			c.rows["Waiting"] = append(c.rows["Waiting"], algebra.Tuple{Vals: vals, From: algebra.Time(i), To: algebra.Time(i + 5)})
		}
		return c
	}
	for _, over := range []bool{false, true} {
		prog, err := query.Compile(cat, []query.Source{{Name: "q", Text: text}}, check.Options{})
		if err != nil {
			t.Fatal(err)
		}
		b := &exec.Budget{Limit: 1 << 20}
		prog = prog.WithBudget(b)
		s := src()
		var late []string
		elems := 0
		open := func([]string) (stream.Source, error) { return s, nil }
		_, st, err := prog.RunSource(open, nil, nil, query.Output{Discard: true, OnElem: func(_ int, e stream.Elem) {
			elems++
			if over && elems == 100 {
				b.Over(2 << 20)
			}
			// The wait ending at T began at T−5: the chunk holding
			// the first beginning after T is the (T+1)/100+1th.
			if limit := (int(e.T)+1)/100 + 2; s.handed["Waiting"] > limit && len(late) < 3 {
				late = append(late, fmt.Sprintf("%v at %d after %d chunks", e.Kind, e.T, s.handed["Waiting"]))
			}
		}})
		if over {
			var me *exec.MemoryError
			if !errors.As(err, &me) {
				t.Fatalf("err %v, want a memory error", err)
			}
			if s.handed["Waiting"] > 3 {
				t.Fatalf("stopped after %d chunks", s.handed["Waiting"])
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !st.Chunked {
			t.Fatal("not run over chunks")
		}
		if elems != 10_000 {
			t.Fatalf("%d elements, want 10000", elems)
		}
		if len(late) > 0 {
			t.Fatalf("elements delivered late: %v", late)
		}
		// Per chunk: the results of the waits open at its last start
		// (5) and a batch's (100), and the groups (3).
		if st.PeakHeld > 120 {
			t.Fatalf("%d results and groups held at once", st.PeakHeld)
		}
	}
}
