package db

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tqmon/tqmon/algebra"
)

// The seed databases of FuzzOpenCorrupt, in testdata/opendb: "clean" was
// closed (its data in a table), "crashed" is a copy taken while its writer
// had it open (its data in the write-ahead log). Stored small: the log and
// value log without the zeros badger preallocates (seedDB puts them back),
// without DISCARD and LOCK.
var seedNames = []string{"clean", "crashed"}

// seedHistory is what the seed databases hold: three Process tuples (the
// last open) and two SendMessage events.
func seedHistory(t testing.TB, w *Writer) {
	p, _ := w.Relation("Process")
	s, _ := w.Relation("SendMessage")
	p.Whole(10, 20, []algebra.Value{algebra.Entity("P1"), running})
	p.Whole(20, 35, []algebra.Value{algebra.Entity("P1"), waiting})
	s.Event(22, []algebra.Value{algebra.Entity("P1"), algebra.Entity("M1")})
	p.Begin(1, 35, []algebra.Value{algebra.Entity("P2"), running})
	s.Event(40, []algebra.Value{algebra.Entity("P2"), algebra.Entity("M2")})
	w.SetWindow(algebra.Window{From: 0, To: 50})
	w.Advance(51)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
}

// seedSpec is the seed databases' description: small, for opening is
// mostly parsing it.
const seedSpec = `entity type Process, Mailbox
entity relation Process(Process: Process, State: enum(Ready, Running, Waiting, Done))
event relation SendMessage(Process: Process initiator, Mailbox: Mailbox target) traced on initiator
`

const seedRead = "P1,Running,10,20\nP1,Waiting,20,35\nP2,Running,35,forever\n"

// writeSeedDBs makes testdata/opendb.
func writeSeedDBs(t *testing.T) {
	for _, name := range seedNames {
		dir := filepath.Join(t.TempDir(), "db")
		d, err := Create(dir, Spec{Name: "seed.sdl", Text: seedSpec})
		if err != nil {
			t.Fatal(err)
		}
		w, err := d.NewWriter(WriterOptions{BlockElems: 2})
		if err != nil {
			t.Fatal(err)
		}
		seedHistory(t, w)
		src := dir
		if name == "crashed" {
			src = filepath.Join(t.TempDir(), "copy")
			if err := os.CopyFS(src, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join("testdata", "opendb", name)
		os.RemoveAll(out)
		os.MkdirAll(out, 0o755)
		ents, _ := os.ReadDir(src)
		for _, e := range ents {
			if e.Name() == "LOCK" || e.Name() == "DISCARD" {
				continue
			}
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(e.Name(), ".mem") || strings.HasSuffix(e.Name(), ".vlog") {
				data = bytes.TrimRight(data, "\x00")
			}
			if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// seedDB copies a seed database into dir, the logs as badger makes them.
func seedDB(t testing.TB, name, dir string) {
	t.Helper()
	from := filepath.Join("testdata", "opendb", name)
	if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	for _, m := range mems {
		if err := os.Truncate(m, walFileSize); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSeedDBs: the seed databases read as they should (TQMON_WRITE_SEEDS=1
// remakes them).
func TestSeedDBs(t *testing.T) {
	if os.Getenv("TQMON_WRITE_SEEDS") != "" {
		writeSeedDBs(t)
	}
	for _, name := range seedNames {
		dir := filepath.Join(t.TempDir(), name)
		seedDB(t, name, dir)
		got := mustRead(t, dir, Options{ReadOnly: true})
		if !strings.Contains(got, seedRead) || !strings.Contains(got, "window 0 50") {
			t.Errorf("%s reads\n%s", name, got)
		}
		if rep, err := Check(dir, Options{}); err != nil || !rep.OK() {
			t.Errorf("%s: check %v %v", name, err, rep.Damage)
		}
	}
}

// FuzzOpenCorrupt: a seed database with one file's byte flipped (mask at
// off) and/or cut short (at cut) opens read-only — salvaging when off is
// odd, and is then checked: every record decoded, every relation read —
// without a panic, in badger's goroutines too, and without the file
// changing; when nothing is damaged, it reads as a sound database.
func FuzzOpenCorrupt(f *testing.F) {
	viewDir := f.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "tqmon-fuzz-"); err == nil {
			viewDir = d
			f.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	// Per seed: the database, and a directory of links to its files
	// where the file a run damages replaces its link for the run.
	type seed struct {
		dir, links string
		files      []string
		data       map[string][]byte
	}
	var seeds []seed
	for _, name := range seedNames {
		s := seed{dir: filepath.Join(viewDir, "seed-"+name), links: filepath.Join(viewDir, name), data: map[string][]byte{}}
		seedDB(f, name, s.dir)
		os.MkdirAll(s.links, 0o755)
		ents, _ := os.ReadDir(filepath.Join("testdata", "opendb", name))
		for _, e := range ents {
			s.files = append(s.files, e.Name())
			s.data[e.Name()], _ = os.ReadFile(filepath.Join("testdata", "opendb", name, e.Name()))
			if err := os.Symlink(filepath.Join(s.dir, e.Name()), filepath.Join(s.links, e.Name())); err != nil {
				f.Fatal(err)
			}
		}
		sort.Strings(s.files)
		seeds = append(seeds, s)
	}
	for which := range seeds {
		for file := range seeds[which].files {
			f.Add(uint8(which), uint8(file), uint32(0), uint8(0), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(1<<31), uint8(0x10), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(97), uint8(0xff), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(0), uint8(0), uint32(1<<31))
		}
	}
	f.Fuzz(func(t *testing.T, which, file uint8, off uint32, mask uint8, cut uint32) {
		s := seeds[int(which)%len(seeds)]
		name := s.files[int(file)%len(s.files)]
		data := bytes.Clone(s.data[name])
		if mask != 0 && len(data) > 0 {
			data[int(off)%len(data)] ^= mask
		}
		cutShort := cut != 0 && len(data) > 0
		if cutShort {
			data = data[:int(cut)%len(data)]
		}
		target := filepath.Join(s.links, name)
		os.Remove(target)
		defer func() {
			os.Remove(target)
			os.Symlink(filepath.Join(s.dir, name), target)
		}()
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
		size := int64(len(data))
		if strings.HasSuffix(name, ".mem") && !cutShort {
			size = walFileSize
			os.Truncate(target, size)
		}
		opts := Options{ReadOnly: true, Salvage: off%2 == 1, Log: io.Discard, ViewDir: viewDir}
		d, err := Open(s.links, opts)
		if err == nil {
			if opts.Salvage {
				rep, _ := d.verify(true)
				if rep.OK() {
					_, err = d.History(nil)
				}
			} else {
				_, err = d.History(nil)
			}
			d.Close()
		}
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotStore) && !errors.Is(err, ErrVersion) &&
			!strings.Contains(err.Error(), s.links) {
			t.Fatalf("an error not naming the database: %v", err)
		}
		if !unchanged(target, data, size) {
			t.Fatalf("opening changed %s", name)
		}
	})
}

// unchanged reports a file still of size bytes, data then zeros.
func unchanged(path string, data []byte, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() != size {
		return false
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil && len(data) > 0 {
		return false
	}
	end, err := dataEnd(f, size)
	return err == nil && bytes.Equal(got, data) && end <= int64(len(data))
}
