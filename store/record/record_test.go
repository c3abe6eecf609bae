package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/truth"
)

func render(h *algebra.History, names []string) string {
	var b strings.Builder
	b.WriteString(testkit.History(h, names...))
	if h.Window != nil {
		fmt.Fprintf(&b, "window %d %d\n", h.Window.From, h.Window.To)
	}
	return b.String()
}

// recordDemo runs the demo subject in this process and records it live.
func recordDemo(t *testing.T, seed uint64, d time.Duration, opts Options) (*db.DB, Stats, *algebra.History) {
	t.Helper()
	store, err := db.CreateInMemory(db.Spec{Name: "os.sdl", Text: ossensors.SDL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cat := store.Catalog()
	clock := demo.NewClock(1000)
	rec := truth.New(cat, 0, 0)
	res := resident.New(ossensors.Spec(), demo.Options(clock, rec))
	h := res.Hello()
	rec.SetClock(h.MonoBase, h.WallBase)
	w, err := store.NewWriter(db.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	type out struct {
		st  Stats
		err error
	}
	done := make(chan out, 1)
	opts.Ready = func() { close(ready) }
	go func() {
		st, err := Live(context.Background(), []wire.Conn{res.Local()}, DB(w), cat, opts)
		done <- out{st, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("recording ended before it began: %v", o.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	demo.New(ossensors.New(res), demo.DefaultConfig(seed)).Run(ctx)
	stop := clock.Stop()
	res.Close()
	o := <-done
	if errors.Is(o.err, remote.ErrIncomplete) {
		// A loaded machine's drain can fall behind the samplers, which then
		// skip ticks and count their samples lost: reported, and the
		// comparison with the truth decides.
		t.Logf("recording incomplete: %v", o.err)
	} else if o.err != nil {
		t.Fatal(o.err)
	}
	w.SetWindow(algebra.Window{From: h.WallBase, To: h.WallBase + (stop - h.MonoBase)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return store, o.st, rec.History(stop)
}

var all = []string{"Processor", "Process", "Mailbox", "SendMessage", "RunningOn", "Waiting"}

// TestLiveEqualsTruth: a live recording of every relation reads back as
// the ground truth the subject recorded of itself.
func TestLiveEqualsTruth(t *testing.T) {
	for seed := uint64(1); seed <= 2; seed++ {
		store, _, truthH := recordDemo(t, seed, 400*time.Millisecond, Options{SyncEvery: 20 * time.Millisecond})
		got, err := store.History(nil)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := render(got, all), render(truthH, all); g != w {
			t.Fatalf("seed %d: recorded\n%s\nground truth\n%s", seed, g, w)
		}
		for _, name := range all {
			if len(got.Table(name).Rows) == 0 {
				t.Errorf("%s: nothing recorded", name)
			}
		}
	}
}

// TestLiveSomeRelations: recording named relations enables only their
// sensors and stores only them.
func TestLiveSomeRelations(t *testing.T) {
	store, st, truthH := recordDemo(t, 3, 300*time.Millisecond, Options{Relations: []string{"SendMessage", "Process"}})
	got, err := store.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	some := []string{"SendMessage", "Process"}
	if g, w := render(got, some), render(truthH, some); g != w {
		t.Fatalf("recorded\n%s\nground truth\n%s", g, w)
	}
	for _, name := range []string{"Waiting", "RunningOn", "Processor", "Mailbox"} {
		if n := len(got.Table(name).Rows); n != 0 {
			t.Errorf("%s: %d tuples recorded, none asked for", name, n)
		}
	}
	if st.Packets["Waiting"] != 0 || st.Packets["RunningOn"] != 0 || st.Packets["SendMessage"] == 0 {
		t.Errorf("packets %v: only SendMessage's sensor should be enabled", st.Packets)
	}
}

// TestProgramErrors: relations that cannot be recorded are refused by
// name.
func TestProgramErrors(t *testing.T) {
	store, err := db.CreateInMemory(db.Spec{Name: "os.sdl", Text: ossensors.SDL + "\nevent relation Note(Text: string)\n"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := Program(store.Catalog(), []string{"Nope"}); err == nil || !strings.Contains(err.Error(), "no relation Nope") {
		t.Errorf("unknown relation: %v", err)
	}
	if _, err := Program(store.Catalog(), []string{"Note"}); err == nil || !strings.Contains(err.Error(), "has no sensor") {
		t.Errorf("unsensed relation: %v", err)
	}
	if got := Recordable(store.Catalog()); slices.Contains(got, "Note") || len(got) != 6 {
		t.Errorf("recordable %v", got)
	}
}

// TestDerived: results recorded as produced read back as the results.
func TestDerived(t *testing.T) {
	store, _, truthH := recordDemo(t, 4, 300*time.Millisecond, Options{})
	prog, err := query.Compile(truthH.Catalog, []query.Source{{Name: "q", Text: `range of w is Waiting
retrieve Unblocked (P = w.Process, M = w.Mailbox) valid at end of w
range of p is Process
retrieve Running (p.Process) where p.State = "Running"`}}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := prog.RunHistory(truthH)
	if err != nil {
		t.Fatal(err)
	}
	out, err := db.CreateInMemory(store.Spec())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	rels, err := Results(prog.Stmts)
	if err != nil {
		t.Fatal(err)
	}
	if err := out.AddRelations(rels); err != nil {
		t.Fatal(err)
	}
	w, _ := out.NewWriter(db.WriterOptions{BlockElems: 8})
	dr, err := NewDerived(w, []string{"Unblocked", "Running"})
	if err != nil {
		t.Fatal(err)
	}
	// Statement 0 as streamed elements, statement 1 as a table.
	for _, e := range Elems(want[0].Table) {
		dr.Elem(0, e)
	}
	if err := dr.Table(1, want[1].Table); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, err := out.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"Unblocked", "Running"} {
		if g, w := fmt.Sprint(h.Table(name).Rows), fmt.Sprint(want[i].Table.Rows); g != w || len(want[i].Table.Rows) == 0 {
			t.Errorf("%s: recorded %s, want %s", name, g, w)
		}
	}
	if !strings.Contains(out.Spec().Text, "event relation Unblocked(P: Process, M: Mailbox)") ||
		!strings.Contains(out.Spec().Text, "interval relation Running(Process: Process)") {
		t.Errorf("spec lacks the recorded relations:\n%s", out.Spec().Text)
	}
	if err := out.AddRelations(rels[:1]); err == nil || !strings.Contains(err.Error(), "already has a relation Unblocked") {
		t.Errorf("adding a relation twice: %v", err)
	}
	anon, _ := query.Compile(truthH.Catalog, []query.Source{{Name: "a.tq", Text: "range of p is Process retrieve (p.Process)"}}, check.Options{})
	if _, err := Results(anon.Stmts); err == nil || !strings.Contains(err.Error(), "a.tq:1:") {
		t.Errorf("anonymous retrieve: %v", err)
	}
	_ = stream.Begin
}
