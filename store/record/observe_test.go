package record

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/internal/testkit"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/replay"
)

// TestLiveRecordsObservation: a live recording that loses SendMessage
// packets in mid-run stores its observation; read back from the database
// (as query --db reads it), `Lost` holds exactly the losses printed and
// `Observed` each recorded relation from when the recording attached to
// the end of its window — never before, never forever — and no recorded
// SendMessage lies in a gap.
func TestLiveRecordsObservation(t *testing.T) {
	dir := t.TempDir() + "/rec"
	store, err := db.Create(dir, db.Spec{Name: "os.sdl", Text: ossensors.SDL})
	if err != nil {
		t.Fatal(err)
	}
	cat := store.Catalog()
	clock := demo.NewClock(1000)
	res := resident.New(ossensors.Spec(), demo.Options(clock, nil))
	w, err := store.NewWriter(db.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The same recorder writes Parquet files too (Tee): read back by
	// query --parquet's path, they must answer as the database does.
	pdir := t.TempDir() + "/pq"
	pw, err := parquet.Create(pdir, db.Spec{Name: "os.sdl", Text: ossensors.SDL}, parquet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn := testkit.NewLossy(res.Local(), "SendMessage", 150*time.Millisecond, 300*time.Millisecond)
	var mu sync.Mutex
	var losses []remote.Loss
	ready := make(chan struct{})
	type out struct {
		st  Stats
		err error
	}
	done := make(chan out, 1)
	go func() {
		st, err := Live(context.Background(), []wire.Conn{conn}, Tee(DB(w), SinkOf[*parquet.RelWriter](pw)), cat, Options{SyncEvery: 20 * time.Millisecond,
			Ready:  func() { close(ready) },
			OnLoss: func(l remote.Loss) { mu.Lock(); losses = append(losses, l); mu.Unlock() }})
		done <- out{st, err}
	}()
	<-ready
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	demo.New(ossensors.New(res), demo.DefaultConfig(1)).Run(ctx)
	clock.Stop()
	res.Close()
	o := <-done
	if !errors.Is(o.err, remote.ErrIncomplete) {
		t.Fatalf("recording ended with %v; want incomplete", o.err)
	}
	win := algebra.Window{From: o.st.Start, To: max(o.st.End, o.st.Last, o.st.Start)}
	w.SetWindow(win)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	store.Close()
	pw.SetWindow(win)
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	if conn.Removed() == 0 || len(losses) == 0 {
		t.Fatalf("nothing lost: the test shows nothing")
	}

	d, err := db.Open(dir, db.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	prog, err := query.Compile(d.Catalog(), []query.Source{
		{Name: "lost", Text: `range of l is Lost retrieve (l.Relation, l.Count)`},
		{Name: "observed", Text: `range of o is Observed retrieve (o.Relation, o.Period)`},
		{Name: "sends", Text: `range of s is SendMessage retrieve (s.Process)`},
	}, check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := replay.Plan(d.Catalog(), prog.Stmts)
	if err != nil {
		t.Fatal(err)
	}
	rs, _, err := replay.Run(d, q, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := parquet.Open(pdir)
	if err != nil {
		t.Fatal(err)
	}
	prs, _, err := replay.RunStore(replay.Parquet(ps), q, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		if g, w := fmt.Sprint(prs[i].Table.Rows), fmt.Sprint(rs[i].Table.Rows); g != w {
			t.Errorf("%s over Parquet\n%s\nover the database\n%s", prog.Stmts[i].Name, g, w)
		}
	}
	if g, w := ps.Window(), d.Window(); g == nil || w == nil || *g != *w {
		t.Errorf("Parquet window %v, the database's %v", g, w)
	}
	lost := rs[0].Table.Rows
	if len(lost) != len(losses) {
		t.Fatalf("%d Lost tuples read back, %d losses printed", len(lost), len(losses))
	}
	var total uint64
	for i, l := range losses {
		row := lost[i]
		if row.Vals[0].S != l.Rel || uint64(row.Vals[1].N) != l.Lost || row.From != l.From || row.To != l.To {
			t.Errorf("Lost tuple %v [%d, %d); printed %q [%d, %d)", row.Vals, row.From, row.To, l.Format(algebra.TimeClock), l.From, l.To)
		}
		total += l.Lost
	}
	if total != conn.Removed() {
		t.Errorf("%d lost printed, %d removed", total, conn.Removed())
	}
	observed := map[string]bool{}
	for _, row := range rs[1].Table.Rows {
		observed[row.Vals[0].S] = true
		if row.From != win.From || row.To == algebra.Forever || row.To > algebra.Next(win.To) || row.Vals[1].N != 0 && row.Vals[0].S != "RunningOn" {
			t.Errorf("Observed %v [%d, %d); the window is [%d, %d]", row.Vals, row.From, row.To, win.From, win.To)
		}
	}
	for _, name := range Recordable(cat) {
		if !observed[name] {
			t.Errorf("no Observed tuple for %s", name)
		}
	}
	for _, row := range rs[2].Table.Rows {
		for _, g := range lost {
			if g.From <= row.From && row.From < g.To {
				t.Errorf("a send recorded at %d, inside the gap [%d, %d)", row.From, g.From, g.To)
			}
		}
	}
	if got := d.Window(); got == nil || *got != win {
		t.Errorf("window %v; want %v", got, win)
	}
}
