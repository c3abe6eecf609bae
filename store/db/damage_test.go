package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
)

// dirState describes every file of a directory: name, size, mode, time of
// last change and a hash of its contents.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v %d", p, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			sum, err := fileSum(p, fi.Size())
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %08x", sum)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// fileSum is a checksum of a file's contents and where its data lies
// (holes skipped).
func fileSum(path string, size int64) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var sum uint32
	for off := int64(0); off < size; {
		d, ok := seekData(f, off)
		if !ok {
			break
		}
		n, err := f.ReadAt(buf, d)
		if n == 0 {
			return sum, err
		}
		sum = crc32.Update(sum, castagnoli, binary.BigEndian.AppendUint64(nil, uint64(d)))
		sum = crc32.Update(sum, castagnoli, buf[:n])
		off = d + int64(n)
	}
	return sum, nil
}

var (
	running = algebra.Value{K: algebra.KindEnum, S: "Running", N: 1}
	waiting = algebra.Value{K: algebra.KindEnum, S: "Waiting", N: 2}
)

// crashed is a database a writer left when it was killed: a copy of its
// directory taken while the writer still had it open.
type crashed struct {
	dir     string
	through algebra.Time // what the last synced commit made complete
	synced  string       // the history read back from the writer's database at that commit
}

// crashImage records n Process tuples (each relation in blocks of 5),
// syncing every 10, and copies the directory after the last sync (the
// writer then records more that is never committed).
func crashImage(t *testing.T, n int) crashed {
	t.Helper()
	spec := paperSpec(t)
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Create(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	commits := make(chan CommitInfo, 1000)
	w, err := d.NewWriter(WriterOptions{BlockElems: 5, CheckpointElems: 20, CheckpointFactor: 1, OnCommit: func(c CommitInfo) { commits <- c }})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.Relation("Process")
	s, _ := w.Relation("SendMessage")
	var last CommitInfo
	for i := 0; i < n; i++ {
		at := algebra.Time(1000 + 10*i)
		ent := algebra.Entity(fmt.Sprintf("P%d", i%3))
		if err := p.Begin(uint64(i), at, []algebra.Value{ent, running}); err != nil {
			t.Fatal(err)
		}
		if err := s.Event(at+1, []algebra.Value{ent, algebra.Entity("M1")}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.End(uint64(i), at+5); err != nil {
			t.Fatal(err)
		}
		w.SetWindow(algebra.Window{From: 1000, To: at + 5})
		if i%10 == 9 {
			w.Advance(at + 6)
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			for c := range commits {
				if c.Synced {
					last = c
					break
				}
			}
		}
	}
	// Committed, synced; now one tuple more, open, never committed.
	p.Begin(uint64(n), algebra.Time(1000+10*n), []algebra.Value{algebra.Entity("P9"), waiting})
	img := filepath.Join(t.TempDir(), "crashed")
	if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(img, "LOCK"))
	h, err := d.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	return crashed{dir: img, through: last.Through, synced: render(h)}
}

// wal is the path of a database's one write-ahead log holding data.
func wal(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for _, m := range ms {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.Trim(data[walHeader:], "\x00")) > 0 {
			return m, data
		}
	}
	t.Fatalf("no write-ahead log with data in %s", dir)
	return "", nil
}

// validEnd is where the data of a log ends.
func validEnd(data []byte) int {
	return len(bytes.TrimRight(data, "\x00"))
}

func mustRead(t *testing.T, dir string, opts Options) string {
	t.Helper()
	return render(mustHistory(t, dir, opts))
}

// mustHistory opens a database and reads all of it.
func mustHistory(t *testing.T, dir string, opts Options) *algebra.History {
	t.Helper()
	d, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h, err := d.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestReadCrashed: a database a killed writer left reads back, read-only,
// everything it had synced, open tuples open — and reading writes nothing.
func TestReadCrashed(t *testing.T) {
	c := crashImage(t, 60)
	before := dirState(t, c.dir)
	for i := 0; i < 2; i++ {
		got := mustRead(t, c.dir, Options{ReadOnly: true})
		if got != c.synced {
			t.Fatalf("read back\n%s\nwant\n%s", got, c.synced)
		}
	}
	if after := dirState(t, c.dir); after != before {
		t.Fatalf("reading changed the database:\n%s\nwas\n%s", after, before)
	}
	if strings.Contains(c.synced, "P9") || !strings.Contains(c.synced, fmt.Sprintf("window 1000 %d", c.through)) {
		t.Errorf("read back more or less than was synced:\n%s", c.synced)
	}
	rep, err := Check(c.dir, Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
	if after := dirState(t, c.dir); after != before {
		t.Fatalf("checking changed the database")
	}
	// Opening to write recovers it in place; it still reads the same.
	d, err := Open(c.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got := mustRead(t, c.dir, Options{ReadOnly: true}); got != c.synced {
		t.Fatalf("after recovery, read back\n%s\nwant\n%s", got, c.synced)
	}
}

// TestDamagedLog: a byte flipped in the write-ahead log, or the log cut
// short, is reported — naming the log and what is lost — and never
// "recovered" by rewriting the database; salvaging reads what precedes it.
func TestDamagedLog(t *testing.T) {
	for _, how := range []string{"flip", "truncate"} {
		t.Run(how, func(t *testing.T) {
			c := crashImage(t, 60)
			full := mustRead(t, c.dir, Options{ReadOnly: true})
			path, data := wal(t, c.dir)
			end := validEnd(data)
			switch how {
			case "flip":
				data[end/2] ^= 0x10
			case "truncate":
				data = data[:end/2]
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, c.dir)
			for _, opts := range []Options{{ReadOnly: true}, {}} {
				_, err := Open(c.dir, opts)
				var de *DamageError
				if !errors.As(err, &de) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open(%+v): %v; want damage", opts, err)
				}
				msg := err.Error()
				for _, want := range []string{c.dir, filepath.Base(path), "write-ahead log damaged", "is lost", "tqmon db repair"} {
					if !strings.Contains(msg, want) {
						t.Errorf("Open(%+v): %q does not say %q", opts, msg, want)
					}
				}
			}
			if after := dirState(t, c.dir); after != before {
				t.Fatalf("opening a damaged database changed it")
			}
			// Salvaged: a prefix of the history, less than all of it.
			d, err := Open(c.dir, Options{ReadOnly: true, Salvage: true})
			if err != nil {
				t.Fatal(err)
			}
			h, err := d.History(nil)
			if err != nil {
				t.Fatal(err)
			}
			salvaged := render(h)
			if len(d.Damage()) == 0 || salvaged == full || len(h.Table("Process").Rows) == 0 {
				t.Errorf("salvaged %d Process rows of %d, damage %v", len(h.Table("Process").Rows), 60, d.Damage())
			}
			d.Close()
			repaired := filepath.Join(t.TempDir(), "repaired")
			rep, err := Repair(c.dir, repaired, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Errorf("repair reports no damage")
			}
			if got := mustRead(t, repaired, Options{ReadOnly: true}); got != salvaged {
				t.Errorf("repaired database reads\n%s\nsalvaged\n%s", got, salvaged)
			}
			if rep, err := Check(repaired, Options{}); err != nil || !rep.OK() {
				t.Errorf("the repaired database checks: %v %v", err, rep.Damage)
			}
			if after := dirState(t, c.dir); after != before {
				t.Fatalf("repairing changed the damaged database")
			}
		})
	}
}

// tableDB is a database in two tables: Process recorded in one session,
// SendMessage in a second.
func tableDB(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Create(dir, paperSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	for session, rel := range []string{"Process", "SendMessage"} {
		if session > 0 {
			if d, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		w, err := d.NewWriter(WriterOptions{BlockElems: 5, CheckpointElems: 20, CheckpointFactor: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := w.Relation(rel)
		for i := 0; i < 3000; i++ {
			at := algebra.Time(1000 + 10*i)
			ent := algebra.Entity(fmt.Sprintf("P%d", i%3))
			if rel == "Process" {
				r.Whole(at, at+5, []algebra.Value{ent, running})
			} else {
				r.Event(at, []algebra.Value{ent, algebra.Entity("M1")})
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	sort.Strings(tables)
	if len(tables) < 2 {
		t.Fatalf("%d tables, want 2", len(tables))
	}
	return dir, tables
}

// TestDamagedTable: a table cut short or with a flipped byte is an error
// naming it — never a panic in a goroutine of badger's, never a table
// silently left out — whether opening to read or to write; salvaging
// leaves it out and says what that costs.
func TestDamagedTable(t *testing.T) {
	for _, how := range []string{"truncate", "flip"} {
		t.Run(how, func(t *testing.T) {
			dir, tables := tableDB(t)
			victim := tables[1]
			data, _ := os.ReadFile(victim)
			switch how {
			case "truncate":
				data = data[:len(data)*2/5]
			case "flip":
				data[len(data)/4] ^= 0x01
			}
			os.WriteFile(victim, data, 0o644)
			before := dirState(t, dir)
			for _, opts := range []Options{{ReadOnly: true}, {}} {
				_, err := Open(dir, opts)
				var de *DamageError
				if !errors.As(err, &de) || !strings.Contains(err.Error(), filepath.Base(victim)) {
					t.Fatalf("Open(%+v): %v; want damage naming %s", opts, err, filepath.Base(victim))
				}
				if how == "flip" && !strings.Contains(err.Error(), "SendMessage") {
					t.Errorf("Open(%+v): %v; want the relation named", opts, err)
				}
			}
			if after := dirState(t, dir); after != before {
				t.Fatalf("opening a damaged database changed it")
			}
			rep, err := Check(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatalf("check found no damage")
			}
			var out strings.Builder
			rep.Write(&out)
			if !strings.Contains(out.String(), filepath.Base(victim)) {
				t.Errorf("check says:\n%s", out.String())
			}
			repaired := filepath.Join(t.TempDir(), "repaired")
			if _, err := Repair(dir, repaired, Options{}); err != nil {
				t.Fatal(err)
			}
			got := mustRead(t, repaired, Options{ReadOnly: true})
			if !strings.Contains(got, "P0,Running,") {
				t.Errorf("repaired database lost Process:\n%.300s", got)
			}
		})
	}
}

// TestDamagedBlock: a stored block whose checksum fails is an error naming
// the database, the relation and the span the block holds; check finds it
// and repair leaves it out.
func TestDamagedBlock(t *testing.T) {
	dir, _ := diskDB(t)
	var key []byte
	rawUpdate(t, dir, func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pBlock}})
		defer it.Close()
		it.Rewind()
		it.Next()
		key = it.Item().KeyCopy(nil)
		v, _ := it.Item().ValueCopy(nil)
		v[len(v)/2] ^= 0x40
		return txn.Set(key, v)
	})
	k, _ := parseKey(key)
	d, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.History(nil)
	d.Close()
	rel := ""
	dd, _ := Open(dir, Options{ReadOnly: true})
	rel = dd.rels[k.rel].rel.Name
	dd.Close()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{dir, rel, "block at " + spanTime(k.t), "its elements up to", "checksum"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	rep, err := Check(dir, Options{})
	if err != nil || rep.OK() || rep.Damage[0].Rel != rel || rep.Damage[0].Lost == nil || rep.Damage[0].Lost.From != k.t {
		t.Fatalf("check: %v %v", err, rep)
	}
	repaired := filepath.Join(t.TempDir(), "repaired")
	if _, err := Repair(dir, repaired, Options{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := Check(repaired, Options{}); err != nil || !rep.OK() {
		t.Fatalf("the repaired database checks: %v %v", err, rep.Damage)
	}
}

// TestBadgerLog: badger's warnings and errors reach tqmon's log, named;
// its chatter does not; messages held while a view opens are dropped when
// that attempt fails.
func TestBadgerLog(t *testing.T) {
	var b strings.Builder
	l := newBadgerLog("x.db", &b)
	l.Warningf("disk slow\n")
	l.Infof("chatter")
	l.hold()
	l.Errorf("attempt failed")
	l.release(false)
	l.hold()
	l.Errorf("kept")
	l.release(true)
	if got, want := b.String(), "tqmon: database x.db: badger warning: disk slow\ntqmon: database x.db: badger error: kept\n"; got != want {
		t.Errorf("logged %q, want %q", got, want)
	}
}
