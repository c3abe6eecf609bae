package db

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/algebra"
)

// TestReadWhileRecording: a database being recorded opens read-only
// alongside its writer (badger's lock is not taken: no "in use"), again
// and again, each time holding a consistent prefix of the recording — all
// it had synced, its window saying up to when — while the writer goes on
// undisturbed.
func TestReadWhileRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Create(dir, paperSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	var synced atomic.Int64
	synced.Store(int64(algebra.Beginning))
	w, err := d.NewWriter(WriterOptions{BlockElems: 16, CheckpointElems: 64, FlushBytes: 2 << 10, OnCommit: func(c CommitInfo) {
		if c.Synced {
			synced.Store(c.Through)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.Relation("Process")
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- w.Close()
				return
			default:
			}
			at := algebra.Time(10 * i)
			if i >= 2 {
				if _, err := p.End(uint64(i-2), at-5); err != nil {
					done <- err
					return
				}
			}
			if err := p.Begin(uint64(i), at, crashProcess(i)); err != nil {
				done <- err
				return
			}
			if i%20 == 19 {
				w.SetWindow(algebra.Window{From: 0, To: at})
				w.Advance(at + 1)
				if err := w.Sync(); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	reads := 0
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		before := synced.Load()
		r, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("reading while recording: %v", err)
		}
		h, err := r.History(nil)
		live, win := r.Live(), r.Window()
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !live {
			t.Fatal("a database being recorded is not reported live")
		}
		if before == algebra.Beginning {
			continue
		}
		if win == nil || win.To < before {
			t.Fatalf("window %v: what was synced before the open (through %d) is not all there", win, before)
		}
		rows := h.Table("Process").Rows
		for _, row := range rows {
			i := int(row.From / 10)
			end := row.From + 15
			if fmt.Sprint(row.Vals) != fmt.Sprint(crashProcess(i)) || row.To != end && !(row.To == algebra.Forever && end > win.To) {
				t.Fatalf("read %v [%d, %d) with the window at %d", row.Vals, row.From, row.To, win.To)
			}
		}
		if len(rows) < int(win.To/10) {
			t.Fatalf("%d tuples read, the window reaches %d", len(rows), win.To)
		}
		reads++
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("the writer: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if reads < 3 {
		t.Fatalf("only %d reads while recording", reads)
	}
	r, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Live() {
		t.Error("a database no longer recorded is reported live")
	}
	t.Logf("%d reads while recording", reads)
}

// TestSyncedCountsDurable: the tuples a synced commit reports (what
// "tqmon record -v" prints as "synced N tuples", and Stats and Summary
// while recording) are all durable — a read of the database then reads
// back at least as many — though the relation's latest instant, which
// the writer holds back, has tuples given to it and not yet written.
func TestSyncedCountsDurable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Create(dir, paperSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	commits := make(chan CommitInfo, 16)
	w, err := d.NewWriter(WriterOptions{OnCommit: func(c CommitInfo) { commits <- c }})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.Relation("Process")
	s, _ := w.Relation("SendMessage")
	readBack := func() int {
		r, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h, err := r.History(nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(h.Table("Process").Rows) + len(h.Table("SendMessage").Rows)
	}
	for i := range 6 {
		at := algebra.Time(10 * i)
		if i > 0 {
			if _, err := p.End(uint64(i-1), at); err != nil {
				t.Fatal(err)
			}
		}
		p.Begin(uint64(i), at, crashProcess(i))
		s.Event(at, crashEvent(i))
		if i%2 == 0 {
			w.Advance(at) // the tuples at at stay held back
		} else {
			w.Advance(at + 1) // everything is written
		}
		if err := w.Sync(); err != nil {
			t.Fatal(err)
		}
		c := <-commits
		total := 0
		for _, st := range d.Stats() {
			total += int(st.Tuples)
		}
		got := readBack()
		if int(c.Tuples) > got || total > got {
			t.Fatalf("step %d: synced %d tuples (stats %d), %d read back", i, c.Tuples, total, got)
		}
		if want := 2*i + 2*(i%2); int(c.Tuples) != want {
			t.Errorf("step %d: synced %d tuples, want %d", i, c.Tuples, want)
		}
		if !strings.Contains(d.Summary(algebra.Window{}), fmt.Sprintf("recorded %d tuples", c.Tuples)) {
			t.Errorf("step %d: summary %q, synced %d", i, d.Summary(algebra.Window{}), c.Tuples)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if c := <-commits; c.Tuples != 12 {
		t.Errorf("closed: %d tuples, want 12", c.Tuples)
	}
}
