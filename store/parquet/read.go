package parquet

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/store/db"
)

// Store is a Parquet recording opened for reading: what replay runs
// queries over, as over a database (replay.Store). Reading never writes;
// a recording being written reads as far as its manifest says.
type Store struct {
	dir   string
	man   *manifest
	cat   *algebra.Catalog
	files []file
	obs   *algebra.History
}

// Open opens the recording in dir.
func Open(dir string) (*Store, error) {
	man, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	cat, err := man.Spec.Catalog()
	if err != nil {
		return nil, fmt.Errorf("%s: its sensor description: %w", dir, err)
	}
	all, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, man: man, cat: cat}
	for _, f := range all {
		// Files of a write the manifest does not count, and open-… files
		// not of its last (Close's) write, are not the recording's.
		if f.tmp || f.write > man.Writes || f.open && (!man.Open || f.write != man.Writes) {
			continue
		}
		if cat.Lookup(f.rel) == nil {
			return nil, fmt.Errorf("%s: no relation %s in the recording's sensor description", f.path, f.rel)
		}
		s.files = append(s.files, f)
	}
	return s, nil
}

// Dir is the recording's directory.
func (s *Store) Dir() string { return s.dir }

// Catalog is the recording's catalog.
func (s *Store) Catalog() *algebra.Catalog { return s.cat }

// Spec is its sensor description.
func (s *Store) Spec() db.Spec { return s.man.Spec }

// Window is the span the recording observed, when known.
func (s *Store) Window() *algebra.Window {
	if s.man.Window == nil {
		return nil
	}
	w := *s.man.Window
	return &w
}

// Extent is the window, or else the span from the earliest begin to the
// latest end the files' names say.
func (s *Store) Extent() (start, end algebra.Time, ok bool) {
	if s.man.Window != nil {
		return s.man.Window.From, s.man.Window.To, true
	}
	if s.man.Through == algebra.Beginning || len(s.files) == 0 {
		return 0, 0, false
	}
	start = algebra.Forever
	for _, f := range s.files {
		start = min(start, f.minFrom)
	}
	return start, s.man.Through, true
}

// Files counts the recording's files per relation.
func (s *Store) Files() map[string]int {
	out := map[string]int{}
	for _, f := range s.files {
		out[f.rel]++
	}
	return out
}

// ObservationHistory is a history of the catalog holding the
// observation's tuples (Observed and Lost).
func (s *Store) Observation() (*algebra.History, error) {
	if s.obs == nil {
		h := algebra.NewHistory(s.cat)
		for _, name := range []string{algebra.ObservedName, algebra.LostName} {
			if err := s.load(h, db.Read{Rel: name}, nil); err != nil {
				return nil, err
			}
		}
		s.obs = h
	}
	return s.obs, nil
}

// needs reports whether file f may hold a tuple valid somewhere in the
// window [lo, hi] (inclusive): it holds tuples ending in its hour (open
// ones: ending after it) that begin at or after its least from. A tuple
// [from, to) is in the window when from ≤ hi and to > lo; an event at t
// when lo ≤ t ≤ hi.
func (f file) needs(win *algebra.Window) bool {
	if win == nil {
		return true
	}
	const hour = int64(3600e9)
	if f.minFrom > win.To {
		return false
	}
	return f.open || f.hour+hour > win.From
}

// load reads the rows of rd.Rel valid in its window into h, counting into
// st (when set).
func (s *Store) load(h *algebra.History, rd db.Read, st *db.ReadStats) error {
	rel := s.cat.Lookup(rd.Rel)
	if rel == nil {
		return fmt.Errorf("no relation %s in %s", rd.Rel, s.dir)
	}
	t := h.Table(rd.Rel)
	for _, f := range s.files {
		if f.rel != rd.Rel || !f.needs(rd.Window) {
			continue
		}
		rp, _ := filepath.Rel(s.dir, f.path)
		want, known := s.man.Sums[filepath.ToSlash(rp)]
		if !known {
			return fmt.Errorf("%s: not among the files the recording's manifest has checksums of", f.path)
		}
		n, err := readFile(f.path, want, rel, func(x row) {
			if w := rd.Window; w != nil {
				if rel.IsEvent() && (x.from < w.From || x.from > w.To) || !rel.IsEvent() && (x.from > w.To || x.to <= w.From) {
					return
				}
			}
			to := x.to
			if rel.IsEvent() {
				to = algebra.Next(x.from) // as a history holds an event
			}
			t.Rows = append(t.Rows, algebra.Tuple{Vals: x.vals, From: x.from, To: to})
		})
		if st != nil {
			st.Files++
			st.Elements += n
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readFile reads every row of a file of relation rel whose bytes have
// the CRC-32C sum (readBytes).
func readFile(path string, sum uint32, rel *algebra.Relation, fn func(row)) (n int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return readBytes(path, data, sum, rel, fn)
}

// readBytes reads every row of the file path's bytes data. Bytes that do
// not match the sum are refused before any decoding; bytes that do are
// checked against checkFile's bounds before parquet-go decodes them, and
// a decoder's panic (on a file damaged the same way as its sum, or a
// bug) becomes an error naming the file.
func readBytes(path string, data []byte, sum uint32, rel *algebra.Relation, fn func(row)) (n int, err error) {
	if got := crc32.Checksum(data, castagnoli); got != sum {
		return 0, fmt.Errorf("%s: damaged: its checksum is %08x, the manifest's %08x", path, got, sum)
	}
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("%s: damaged: %v", path, x)
		}
	}()
	pf, err := checkFile(data)
	if err != nil {
		return 0, fmt.Errorf("%s: damaged: %w", path, err)
	}
	rd, err := newReader(rel, pf, path)
	if err != nil {
		return 0, err
	}
	r := pq.NewReader(pf)
	defer r.Close()
	buf := make([]pq.Row, 256)
	for {
		k, err := r.ReadRows(buf)
		for _, pr := range buf[:k] {
			x, derr := rd.decode(pr)
			if derr != nil {
				return n, fmt.Errorf("%s: row %d: %w", path, n, derr)
			}
			n++
			fn(x)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", path, err)
		}
	}
}

// Scan reads relations through their windows: the files each window
// needs, read whole and kept in memory (the bound: the rows of those
// files), as a time-ordered element stream.
type Scan struct {
	stream.Source
	stats db.ReadStats
}

// NewScan reads the given relations (each at most once); the
// observation's relations are not read here (ObservationHistory).
func (s *Store) NewScan(reads []db.Read) (*Scan, error) {
	h := algebra.NewHistory(s.cat)
	sc := &Scan{}
	var names []string
	for _, rd := range reads {
		if slices.Contains(names, rd.Rel) {
			return nil, fmt.Errorf("relation %s read twice", rd.Rel)
		}
		names = append(names, rd.Rel)
		if err := s.load(h, rd, &sc.stats); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		sc.Source = stream.TableSource(h, algebra.ObservedName)
		return sc, nil
	}
	sc.Source = stream.TableSource(h, names...)
	return sc, nil
}

// Stats are what the scan read.
func (sc *Scan) Stats() db.ReadStats { return sc.stats }

// Close releases the scan.
func (sc *Scan) Close() {}

// History loads the whole recording (every relation, the observation's
// included) as a history with the recording's window.
func (s *Store) History() (*algebra.History, error) {
	h := algebra.NewHistory(s.cat)
	for _, r := range append(slices.Clone(s.cat.Relations), s.cat.Builtins()...) {
		if err := s.load(h, db.Read{Rel: r.Name}, nil); err != nil {
			return nil, err
		}
	}
	h.Window = s.Window()
	return h, nil
}
