package db

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
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

// openCorrupt is what FuzzOpenCorrupt and TestOpenCorruptEveryByte damage:
// the seed databases, each beside a directory of links to its files where
// the file a run damages replaces its link for the run.
type openCorrupt struct {
	viewDir string
	seeds   []corruptSeed
}

type corruptSeed struct {
	dir, links  string
	files       []string
	data        map[string][]byte
	compression map[string]options.CompressionType // of its tables, as its MANIFEST says
}

func newOpenCorrupt(tb testing.TB) *openCorrupt {
	oc := &openCorrupt{viewDir: tb.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "tqmon-fuzz-"); err == nil {
			oc.viewDir = d
			tb.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	os.MkdirAll(filepath.Join(oc.viewDir, "scratch"), 0o755)
	for _, name := range seedNames {
		s := corruptSeed{dir: filepath.Join(oc.viewDir, "seed-"+name), links: filepath.Join(oc.viewDir, name),
			data: map[string][]byte{}, compression: map[string]options.CompressionType{}}
		seedDB(tb, name, s.dir)
		os.MkdirAll(s.links, 0o755)
		ents, _ := os.ReadDir(filepath.Join("testdata", "opendb", name))
		for _, e := range ents {
			s.files = append(s.files, e.Name())
			s.data[e.Name()], _ = os.ReadFile(filepath.Join("testdata", "opendb", name, e.Name()))
			if err := os.Symlink(filepath.Join(s.dir, e.Name()), filepath.Join(s.links, e.Name())); err != nil {
				tb.Fatal(err)
			}
		}
		sort.Strings(s.files)
		tables, err := manifestTables(filepath.Join(s.dir, badger.ManifestFilename))
		if err != nil {
			tb.Fatal(err)
		}
		for _, tm := range tables {
			s.compression[table.IDToFilename(tm.id)] = tm.compression
		}
		oc.seeds = append(oc.seeds, s)
	}
	return oc
}

// How much of opening a damaged database one run checks (see run).
const (
	checkFile  = iota // tqmon's own check of the damaged file, by its kind
	checkMade         // and all of makeView: what tqmon reads before badger
	checkWhole        // and the whole open, then reading every relation
)

// tierOf is how much a fuzz input checks, from a hash of its damage (so
// the same every time it runs): every input its file, one in four all of
// makeView, one in sixteen the whole open and read.
func tierOf(which, file int, off int, mask uint8, cut int, salvage bool) int {
	h := fnv.New64a()
	fmt.Fprint(h, which, file, off, mask, cut, salvage)
	switch x := h.Sum64(); {
	case x%16 == 0:
		return checkWhole
	case x%4 == 0:
		return checkMade
	}
	return checkFile
}

// run damages one file of a seed database — its byte at off flipped with
// mask, and/or cut short at cut (both taken modulo its length; 0: not
// cut) — and checks the damaged database to tier: without a panic, in
// badger's goroutines too, with errors naming the database, and without
// the file changing or another going; and when nothing is damaged, it
// reads as a sound database. The whole open salvages when off is odd.
func (oc *openCorrupt) run(t *testing.T, which, file int, off uint32, mask uint8, cut uint32, tier int) {
	s := oc.seeds[which%len(oc.seeds)]
	name := s.files[file%len(s.files)]
	data := bytes.Clone(s.data[name])
	flipped := mask != 0 && len(data) > 0
	if flipped {
		data[int(off)%len(data)] ^= mask
	}
	cutShort := cut != 0 && len(data) > 0 && int(cut)%len(data) != 0
	if cutShort {
		data = data[:int(cut)%len(data)]
	}
	sound := !flipped && !cutShort
	size := int64(len(data))
	if strings.HasSuffix(name, ".mem") && !cutShort {
		size = walFileSize
	}
	salvage := off%2 == 1
	named := func(err error) {
		if err != nil && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrNotStore) && !errors.Is(err, ErrVersion) &&
			!strings.Contains(err.Error(), s.links) {
			t.Fatalf("an error not naming the database: %v", err)
		}
	}

	// tqmon's own check of the file, by kind, from a copy of its bytes.
	scratch := filepath.Join(oc.viewDir, "scratch", name) // (badger reads a table's id from its name)
	switch {
	case strings.HasSuffix(name, ".mem"):
		end := walEnd(data)
		if _, why, bad := walTail(data, end, size); bad && sound {
			t.Fatalf("a sound log is damaged: %s", why)
		}
	case strings.HasSuffix(name, ".sst"):
		if err := os.WriteFile(scratch, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if d, bad := validateTable(scratch, s.compression[name]); bad && sound {
			t.Fatalf("a sound table is damaged: %s", d.Detail)
		}
	case name == badger.ManifestFilename:
		if err := os.WriteFile(scratch, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := manifestTables(scratch); err != nil && sound {
			t.Fatalf("a sound MANIFEST does not read: %v", err)
		}
	}
	if tier == checkFile {
		return
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
	if size != int64(len(data)) {
		os.Truncate(target, size)
	}
	if tier == checkMade {
		m, err := makeView(s.links, oc.viewDir, salvage, true)
		if m != nil {
			m.v.remove()
		}
		named(err)
		if err != nil && sound {
			t.Fatalf("a sound database: %v", err)
		}
	} else {
		opts := Options{ReadOnly: true, Salvage: salvage, Log: io.Discard, ViewDir: oc.viewDir}
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
		named(err)
		if err != nil && sound {
			t.Fatalf("a sound database: %v", err)
		}
	}
	if !unchanged(target, data, size) {
		t.Fatalf("opening changed %s", name)
	}
	if ents, _ := os.ReadDir(s.links); len(ents) != len(s.files) {
		t.Fatalf("opening with %s damaged left %d of the database's %d files", name, len(ents), len(s.files))
	}
}

// FuzzOpenCorrupt: a seed database with one file's byte flipped (mask at
// off) and/or cut short (at cut) is checked as openCorrupt.run says, to a
// depth tierOf draws from the damage: every input gets tqmon's own check
// of the damaged file, one in four all of makeView, one in sixteen the
// whole open and read. What the lighter tiers leave out of a single
// damage, TestOpenCorruptEveryByte opens the whole way.
func FuzzOpenCorrupt(f *testing.F) {
	oc := newOpenCorrupt(f)
	for which := range oc.seeds {
		for file := range oc.seeds[which].files {
			f.Add(uint8(which), uint8(file), uint32(0), uint8(0), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(1<<31), uint8(0x10), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(97), uint8(0xff), uint32(0))
			f.Add(uint8(which), uint8(file), uint32(0), uint8(0), uint32(1<<31))
		}
	}
	f.Fuzz(func(t *testing.T, which, file uint8, off uint32, mask uint8, cut uint32) {
		s := oc.seeds[int(which)%len(oc.seeds)]
		n := len(s.data[s.files[int(file)%len(s.files)]])
		o, c := 0, 0
		if n > 0 {
			o, c = int(off)%n, int(cut)%n
		}
		tier := tierOf(int(which)%len(oc.seeds), int(file)%len(s.files), o, mask, c, off%2 == 1)
		oc.run(t, int(which), int(file), off, mask, cut, tier)
	})
}

// TestOpenCorruptEveryByte opens, the whole way, every damage a single
// mutation of FuzzOpenCorrupt's can make to a seed database: each byte of
// each file flipped (all its bits; salvaging at odd offsets, as the fuzz
// target does), and each file cut at each length.
func TestOpenCorruptEveryByte(t *testing.T) {
	oc := newOpenCorrupt(t)
	opened := 0
	for which, s := range oc.seeds {
		for file, name := range s.files {
			for off := range len(s.data[name]) {
				oc.run(t, which, file, uint32(off), 0xff, 0, checkWhole)
				opened++
			}
			for cut := 1; cut < len(s.data[name]); cut++ {
				oc.run(t, which, file, uint32(cut), 0, uint32(cut), checkWhole)
				opened++
			}
		}
	}
	t.Logf("%d damaged databases opened", opened)
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
