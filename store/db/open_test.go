package db

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/histgen"
)

// diskDB makes a small database on disk and closes it.
func diskDB(t *testing.T) (string, *algebra.History) {
	t.Helper()
	spec := paperSpec(t)
	cat, err := compileSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	h, err := histgen.Paper(cat, histgen.PaperConfig{Seed: 1, Processors: 2, Processes: 4, Mailboxes: 3, Sends: 6})
	if err != nil {
		t.Fatal(err)
	}
	d := importDisk(t, spec, h, small)
	dir := d.Dir()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, h
}

// rawUpdate changes a database's keys directly, as damage would.
func rawUpdate(t *testing.T, dir string, fn func(txn *badger.Txn) error) {
	t.Helper()
	bdb, err := badger.Open(badgerOptions(dir, false, newBadgerLog(dir, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := bdb.Close(); err != nil {
		t.Fatal(err)
	}
}

func listDir(t *testing.T, dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// TestOpenForeign: directories that are not tqmon databases are refused
// with a clear error, and nothing is written into them.
func TestOpenForeign(t *testing.T) {
	tmp := t.TempDir()
	history := filepath.Join("..", "..", "testdata", "paper")
	before := listDir(t, history)
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("hello"), 0o644)
	other := filepath.Join(tmp, "other")
	bdb, err := badger.Open(badger.DefaultOptions(other).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	bdb.Update(func(txn *badger.Txn) error { return txn.Set([]byte("k"), []byte("v")) })
	bdb.Close()
	for _, c := range []struct {
		dir  string
		want string
		is   error
	}{
		{filepath.Join(tmp, "missing"), "no database at", nil},
		{history, "looks like a CSV history", ErrNotStore},
		{empty, "it is empty", ErrNotStore},
		{file, "not a directory", ErrNotStore},
		{other, "has no TQMON file", ErrNotStore},
	} {
		for _, ro := range []bool{true, false} {
			_, err := Open(c.dir, Options{ReadOnly: ro})
			if err == nil || !strings.Contains(err.Error(), c.want) || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("Open(%s): %v; want an error saying %q", c.dir, err, c.want)
			}
		}
	}
	if after := listDir(t, history); after != before {
		t.Errorf("opening a history directory changed it: %s → %s", before, after)
	}
	if after := listDir(t, empty); after != "" {
		t.Errorf("opening an empty directory wrote %s", after)
	}
	// Create refuses a non-empty directory and an existing database.
	if _, err := Create(history, paperSpec(t)); err == nil || !errors.Is(err, ErrExists) {
		t.Errorf("Create over a history: %v", err)
	}
	dir, _ := diskDB(t)
	if _, err := Create(dir, paperSpec(t)); err == nil || !strings.Contains(err.Error(), "record into a new directory") {
		t.Errorf("Create over a database: %v", err)
	}
}

// TestOpenDamaged: damaged databases give errors naming the damage, never
// a panic.
func TestOpenDamaged(t *testing.T) {
	t.Run("version", func(t *testing.T) {
		dir, _ := diskDB(t)
		rawUpdate(t, dir, func(txn *badger.Txn) error {
			return txn.Set(singleKey(pFormat), append([]byte(magic), 0, 0, 0, 99))
		})
		_, err := Open(dir, Options{ReadOnly: true})
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "99") {
			t.Errorf("got %v, want format version 99 refused", err)
		}
	})
	t.Run("no-format", func(t *testing.T) {
		dir, _ := diskDB(t)
		rawUpdate(t, dir, func(txn *badger.Txn) error { return txn.Delete(singleKey(pFormat)) })
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("spec", func(t *testing.T) {
		dir, _ := diskDB(t)
		rawUpdate(t, dir, func(txn *badger.Txn) error {
			return txn.Set(singleKey(pSpec), encodeSpec("os.sdl", "entity type"))
		})
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not compile") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("descriptor", func(t *testing.T) {
		dir, _ := diskDB(t)
		rawUpdate(t, dir, func(txn *badger.Txn) error {
			return txn.Set(relKey(pRelation, 1), encodeRelation(1, "Process", "event relation Process(Process: Process)"))
		})
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "stored as") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("block", func(t *testing.T) {
		dir, _ := diskDB(t)
		rawUpdate(t, dir, func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{pBlock}})
			defer it.Close()
			it.Rewind()
			k := it.Item().KeyCopy(nil)
			v, _ := it.Item().ValueCopy(nil)
			v[len(v)/2] ^= 0x40
			return txn.Set(k, v)
		})
		d, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if _, err := d.History(nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "checksum") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("manifest", func(t *testing.T) {
		dir, _ := diskDB(t)
		if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("garbage, not a manifest"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("got %v", err)
		}
	})
	t.Run("no-manifest", func(t *testing.T) {
		dir, _ := diskDB(t)
		os.Remove(filepath.Join(dir, "MANIFEST"))
		if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "MANIFEST is missing") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("tables", func(t *testing.T) {
		dir, _ := diskDB(t)
		ents, _ := os.ReadDir(dir)
		n := 0
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".sst" {
				p := filepath.Join(dir, e.Name())
				data, _ := os.ReadFile(p)
				for i := range data {
					if i%7 == 3 {
						data[i] ^= 0xff
					}
				}
				os.WriteFile(p, data, 0o644)
				n++
			}
		}
		if n == 0 {
			t.Skip("no table files to damage")
		}
		d, err := Open(dir, Options{ReadOnly: true})
		if err == nil {
			_, err = d.History(nil)
			d.Close()
		}
		if err == nil {
			t.Error("damaged tables read without an error")
		}
	})
}

// TestReopenAfterWriterVanished: a database whose writer stopped without
// closing (its last flush committed, nothing after) opens, read-only too,
// and reads back what was committed, with tuples still open as open.
func TestReopenAfterWriterVanished(t *testing.T) {
	spec := paperSpec(t)
	dir := filepath.Join(t.TempDir(), "db")
	d, err := Create(dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	committed := make(chan CommitInfo, 10)
	w, err := d.NewWriter(WriterOptions{OnCommit: func(c CommitInfo) { committed <- c }})
	if err != nil {
		t.Fatal(err)
	}
	w.SetWindow(algebra.Window{From: 0, To: 100})
	p, _ := w.Relation("Process")
	s, _ := w.Relation("SendMessage")
	run := []algebra.Value{algebra.Entity("P1"), {K: algebra.KindEnum, S: "Running", N: 1}}
	wait := []algebra.Value{algebra.Entity("P1"), {K: algebra.KindEnum, S: "Waiting", N: 2}}
	p.Begin(1, 10, run)
	s.Event(15, []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")})
	p.End(1, 20)
	p.Begin(2, 20, wait)
	p.Begin(3, 22, []algebra.Value{algebra.Entity("P2"), {K: algebra.KindEnum, S: "Running", N: 1}})
	s.Event(25, []algebra.Value{algebra.Entity("P1"), algebra.Entity("M2")})
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	info := <-committed
	// The latest instant of each relation (22 for Process, 25 for
	// SendMessage) may still change, so it is not yet written.
	if info.Through != 21 {
		t.Errorf("through %d, want 21", info.Through)
	}
	p.End(2, 30) // never committed
	// The writer's process "dies": the badger database is not closed.
	// Simulate by copying the directory as it is on disk now.
	copyDir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(copyDir, "LOCK"))
	d2, err := Open(copyDir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	h, err := d2.History(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(h); !strings.Contains(got, "P1,Running,10,20\n") || !strings.Contains(got, "P1,Waiting,20,forever\n") ||
		strings.Contains(got, "P2") || !strings.Contains(got, "P1,M1,15,16\n") || strings.Contains(got, "M2") ||
		!strings.Contains(got, "window 0 21") {
		t.Errorf("read back after the writer vanished:\n%s", got)
	}
	d.Close()
}
