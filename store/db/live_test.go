package db

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
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
		checkLiveRead(t, h, win, before)
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
		h := mustHistory(t, dir, Options{ReadOnly: true})
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

// compactingWriter records the crash workload into a database it holds
// open, committing when asked, and can make badger flush its memtable into
// a table and compact its tables as a long recording's writer does.
type compactingWriter struct {
	t       *testing.T
	dir     string
	d       *DB
	w       *Writer
	p       *RelWriter
	commits chan CommitInfo
	n       int // tuples begun
}

func newCompactingWriter(t *testing.T) *compactingWriter {
	cw := &compactingWriter{t: t, dir: filepath.Join(t.TempDir(), "db"), commits: make(chan CommitInfo, 64)}
	var err error
	if cw.d, err = Create(cw.dir, paperSpec(t)); err != nil {
		t.Fatal(err)
	}
	if cw.w, err = cw.d.NewWriter(WriterOptions{BlockElems: 16, OnCommit: func(c CommitInfo) { cw.commits <- c }}); err != nil {
		t.Fatal(err)
	}
	cw.p, _ = cw.w.Relation("Process")
	return cw
}

// add begins n tuples (tuple i over [10i, 10i+15), as TestReadWhileRecording)
// and commits them durably.
func (cw *compactingWriter) add(n int) error {
	for range n {
		i := cw.n
		at := algebra.Time(10 * i)
		if i >= 2 {
			if _, err := cw.p.End(uint64(i-2), at-5); err != nil {
				return err
			}
		}
		if err := cw.p.Begin(uint64(i), at, crashProcess(i)); err != nil {
			return err
		}
		cw.n++
	}
	at := algebra.Time(10 * (cw.n - 1))
	cw.w.SetWindow(algebra.Window{From: 0, To: at})
	cw.w.Advance(at + 1)
	if err := cw.w.Sync(); err != nil {
		return err
	}
	<-cw.commits
	return nil
}

// flush makes badger write its memtable as a table and compact level 0
// down, merging it with the tables it overlaps (DropPrefix does both; the
// prefix dropped is a key of no relation's, written for the purpose).
func (cw *compactingWriter) flush() error {
	key := []byte("\xff\xfeflush")
	if err := cw.d.bdb.Update(func(txn *badger.Txn) error { return txn.Set(key, nil) }); err != nil {
		return err
	}
	return cw.d.bdb.DropPrefix(key)
}

// compact moves every table to one level (deleting those it merged).
func (cw *compactingWriter) compact() error { return cw.d.bdb.Flatten(1) }

func (cw *compactingWriter) close() {
	if err := cw.w.Close(); err != nil {
		cw.t.Error(err)
	}
	if err := cw.d.Close(); err != nil {
		cw.t.Error(err)
	}
}

// checkLiveRead checks what a read of a database being recorded with the
// workload of TestReadWhileRecording holds: the tuples it recorded, ended
// when they ended or open past the window, at least every tuple that
// began in the window, and the window reaching at least synced.
func checkLiveRead(t *testing.T, h *algebra.History, win *algebra.Window, synced algebra.Time) {
	t.Helper()
	if win == nil || win.To < synced {
		t.Fatalf("window %v: what was synced before the open (through %d) is not all there", win, synced)
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
}

// TestViewOutlivesCompaction: a view of a database being recorded reads
// all it held when it was opened even after the writer compacted away
// every table it was made from (badger truncates a table before deleting
// it: a view linking to the tables faulted here).
func TestViewOutlivesCompaction(t *testing.T) {
	cw := newCompactingWriter(t)
	defer cw.close()
	for range 3 {
		if err := cw.add(40); err != nil {
			t.Fatal(err)
		}
		if err := cw.flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.add(10); err != nil { // some in the log too
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(cw.dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table")
	}
	r, err := Open(cw.dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Live() {
		t.Fatal("not live")
	}
	win := r.Window()
	for range 4 {
		if err := cw.add(40); err != nil {
			t.Fatal(err)
		}
		if err := cw.flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cw.compact(); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if _, err := os.Stat(tb); err == nil {
			t.Fatalf("%s was not compacted away", filepath.Base(tb))
		}
	}
	h, err := r.History(nil)
	if err != nil {
		t.Fatalf("reading a view after the tables it was made from were compacted away: %v", err)
	}
	checkLiveRead(t, h, win, win.To)
	if n := len(h.Table("Process").Rows); n != 130 {
		t.Errorf("%d tuples read, 130 were recorded when the view was opened", n)
	}
}

// TestReadWhileCompacting: reads of a database racing a writer that
// records, flushes tables and compacts them each read a consistent prefix
// of the recording (no fault, no error). The window in which a table can
// be compacted away between being listed and being copied is small: this
// guards rather than proves (TestViewOutlivesCompaction proves).
func TestReadWhileCompacting(t *testing.T) {
	cw := newCompactingWriter(t)
	var synced atomic.Int64
	synced.Store(int64(algebra.Beginning))
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for k := 1; ; k++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			err := cw.add(20)
			synced.Store(int64(10 * (cw.n - 1)))
			if err == nil && k%2 == 0 {
				err = cw.flush()
			}
			if err == nil && k%7 == 0 {
				err = cw.compact()
			}
			if err != nil {
				done <- err
				return
			}
		}
	}()
	reads := 0
	for deadline := time.Now().Add(3 * time.Second); reads < 30 || time.Now().Before(deadline); {
		before := synced.Load()
		r, err := Open(cw.dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("reading while compacting: %v", err)
		}
		h, err := r.History(nil)
		win := r.Window()
		r.Close()
		if err != nil {
			t.Fatalf("reading while compacting: %v", err)
		}
		if before != algebra.Beginning {
			checkLiveRead(t, h, win, before)
		}
		reads++
		if reads > 400 {
			break
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("the writer: %v", err)
	}
	tables, _ := filepath.Glob(filepath.Join(cw.dir, "*.sst"))
	t.Logf("%d reads; %d tuples recorded, %d tables", reads, cw.n, len(tables))
	cw.close()
}
