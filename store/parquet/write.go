package parquet

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/store/db"
)

// Options shape a Writer.
type Options struct {
	// Host is the host column of relations without a Host attribute (and
	// of the observation's tuples); default "local".
	Host string
	// Every is how much recording time may pass between two writes of
	// files (default one minute): what a crash can lose, besides the
	// tuples still open. Files are also written when an hour ends (its
	// files are then complete), when MaxRows rows are held, and on Close.
	Every time.Duration
	// MaxRows is the most rows held before they are written (default
	// 1<<20): the writer's memory is bounded by it and the tuples open.
	MaxRows int
}

func (o *Options) defaults() {
	if o.Host == "" {
		o.Host = "local"
	}
	if o.Every <= 0 {
		o.Every = time.Minute
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 1 << 20
	}
}

// manifestName is the recording's manifest: its format, sensor
// description, window, and how far the files reach. It is written by
// temp file and rename after the files of each write, so it never names
// more than the files hold.
const manifestName = "_tqmon.json"

// Format is the layout's version, in the manifest.
const Format = 1

type manifest struct {
	Format int             `json:"format"`
	Spec   db.Spec         `json:"spec"`
	Window *algebra.Window `json:"window,omitempty"`
	// Through: every tuple ending (every event) before it is in the
	// files; none at or after it is, but for those written open at Close.
	Through algebra.Time `json:"through"`
	// Writes counts the writes: files carry the number of theirs, and a
	// file of a write the manifest does not count is left over from a
	// crash.
	Writes uint64 `json:"writes"`
	// Resume is the journal position from which a resumed recording
	// re-reads what was not yet in files (0: none given).
	Resume uint64 `json:"resume,omitempty"`
	// Open: the last write was Close's, which wrote the tuples then open
	// (files named open-…).
	Open bool `json:"open,omitempty"`
	// Sums is the CRC-32C (Castagnoli) of each file's bytes, by its path
	// under the recording's directory (slashes). A reader reads a file
	// only when its bytes match, so a damaged file is refused with an
	// error naming it, before any Parquet decoding (which can panic or
	// loop on damaged input).
	Sums map[string]uint32 `json:"sums,omitempty"`
}

// castagnoli is the CRC-32C table of the files' checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Writer records relations as Parquet files under a directory,
// partitioned relation=R/host=H/hour=YYYY-MM-DDTHH (UTC): a tuple goes
// into the hour it ends in, an event into the hour it happens in; a
// file's name is <least from>-<write>.parquet, so a reader finds the
// files a time window needs from names alone. Tuples still open at Close
// go into open-<least from>-<write>.parquet files, in the hour the
// recording ends.
//
// Crash behaviour: each file is written under a temporary name (.tmp-…,
// which readers ignore), synced and renamed into place, then the
// manifest likewise; a crash leaves only whole files. What was held and
// not yet written — at most Every of recording time, and the tuples still
// open — is lost, unless a journal replays it (Append, At). Files of a
// write the manifest does not count (a crash between renames) are removed
// by Append.
//
// A Writer implements the recorder's sink (record.Sink); like db.Writer,
// elements come in time order per relation, Begins possibly late.
type Writer struct {
	dir  string
	cat  *algebra.Catalog
	opts Options
	man  manifest
	rels map[string]*RelWriter
	held int
	// latest is the recording's time (Advance); lastWrite when files were
	// last written.
	latest, lastWrite algebra.Time
	obs               db.Observation
	obsDone           map[obsKey]bool
	// pos is the journal position of the calls being made (At).
	pos    uint64
	anon   uint64 // keys of whole tuples still open
	closed bool
	err    error
	stats  WriteStats
}

// WriteStats count what a writer wrote.
type WriteStats struct {
	Files int
	Rows  int64
	Bytes int64
}

type obsKey struct {
	lost      bool
	rel, host string
	from, to  algebra.Time
}

// RelWriter writes one relation.
type RelWriter struct {
	w    *Writer
	s    *schema
	open map[uint64]*openRow
	rows []heldRow
}

type openRow struct {
	row
	pos uint64
}

type heldRow struct {
	row
	pos uint64 // the journal position of its begin (or event)
}

// Create starts a recording in dir, a new or empty directory.
func Create(dir string, spec db.Spec, opts Options) (*Writer, error) {
	cat, err := spec.Catalog()
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: a Parquet recording goes into a new or empty directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w := newWriter(dir, cat, opts)
	w.man = manifest{Format: Format, Spec: spec, Through: algebra.Beginning}
	return w, w.writeManifest()
}

// Append reopens a recording to continue it from a journal: files of
// writes the manifest does not count and the open-… files of its Close
// are removed (a journal replayed from Resume() brings their tuples
// again), and rows ending before the manifest's Through are dropped, as
// the files hold them: so a recording resumed from Resume() holds each
// tuple once.
func Append(dir string, opts Options) (*Writer, error) {
	man, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	cat, err := man.Spec.Catalog()
	if err != nil {
		return nil, err
	}
	files, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f.write > man.Writes || f.open || f.tmp {
			if err := os.Remove(f.path); err != nil {
				return nil, err
			}
		}
	}
	w := newWriter(dir, cat, opts)
	man.Open = false
	w.man = *man
	w.latest, w.lastWrite = man.Through, man.Through
	return w, w.writeManifest()
}

func newWriter(dir string, cat *algebra.Catalog, opts Options) *Writer {
	opts.defaults()
	return &Writer{dir: dir, cat: cat, opts: opts, rels: map[string]*RelWriter{}, obsDone: map[obsKey]bool{},
		latest: algebra.Beginning, lastWrite: algebra.Beginning}
}

// Catalog is the recording's catalog.
func (w *Writer) Catalog() *algebra.Catalog { return w.cat }

// Stats are what the writer wrote so far.
func (w *Writer) Stats() WriteStats { return w.stats }

// Resume is the journal position a recording resumed with Append reads
// from: the least position of a tuple still open or held when the last
// write was made (0: no position was given).
func (w *Writer) Resume() uint64 { return w.man.Resume }

// At says the journal position of the calls that follow: a position is
// kept with every tuple held, so Resume knows where what is not yet in
// files began.
func (w *Writer) At(pos uint64) { w.pos = pos }

// Relation returns the writer of a relation.
func (w *Writer) Relation(name string) (*RelWriter, error) {
	if r := w.rels[name]; r != nil {
		return r, nil
	}
	rel := w.cat.Lookup(name)
	if rel == nil || rel.Builtin {
		return nil, fmt.Errorf("no relation %s in the recording's sensor description", name)
	}
	s, err := newSchema(rel)
	if err != nil {
		return nil, err
	}
	r := &RelWriter{w: w, s: s, open: map[uint64]*openRow{}}
	w.rels[name] = r
	return r, nil
}

func (r *RelWriter) host(vals []algebra.Value) string {
	if r.s.hostAt >= 0 {
		return vals[r.s.hostAt].S
	}
	return r.w.opts.Host
}

func (r *RelWriter) check(vals []algebra.Value) error {
	switch {
	case r.w.closed:
		return errors.New("writer is closed")
	case r.w.err != nil:
		return r.w.err
	case len(vals) != len(r.s.rel.Attrs):
		return fmt.Errorf("%s: %d values for %d attributes", r.s.rel.Name, len(vals), len(r.s.rel.Attrs))
	}
	return nil
}

// Begin records that the tuple the caller calls key begins at from.
func (r *RelWriter) Begin(key uint64, from algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if r.s.rel.IsEvent() {
		return fmt.Errorf("%s is an event relation: no intervals", r.s.rel.Name)
	}
	if _, dup := r.open[key]; dup {
		return fmt.Errorf("%s: tuple %d begins twice", r.s.rel.Name, key)
	}
	r.open[key] = &openRow{row: row{host: r.host(vals), vals: vals, from: from, to: algebra.Forever}, pos: r.w.pos}
	return nil
}

// End records that tuple key ends at to; ok is false when key is not
// open.
func (r *RelWriter) End(key uint64, to algebra.Time) (bool, error) {
	o, ok := r.open[key]
	if !ok {
		return false, nil
	}
	delete(r.open, key)
	o.to = to
	return true, r.hold(o.row, o.pos)
}

// Event records an event at at.
func (r *RelWriter) Event(at algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if !r.s.rel.IsEvent() {
		return fmt.Errorf("%s is an interval relation: no events", r.s.rel.Name)
	}
	return r.hold(row{host: r.host(vals), vals: vals, from: at, to: at}, r.w.pos)
}

// Whole records a complete tuple [from, to) (to Forever: still open); an
// empty one is not recorded.
func (r *RelWriter) Whole(from, to algebra.Time, vals []algebra.Value) error {
	if err := r.check(vals); err != nil {
		return err
	}
	if r.s.rel.IsEvent() {
		return fmt.Errorf("%s is an event relation: no intervals", r.s.rel.Name)
	}
	if from >= to {
		return nil
	}
	if to == algebra.Forever {
		// Open, under a key no caller uses (the top bit set).
		r.w.anon++
		r.open[1<<63|r.w.anon] = &openRow{row: row{host: r.host(vals), vals: vals, from: from, to: to}, pos: r.w.pos}
		return nil
	}
	return r.hold(row{host: r.host(vals), vals: vals, from: from, to: to}, r.w.pos)
}

// hold keeps a finished row until its file is written; one ending before
// Through is in the files already (a journal replaying it) and is
// dropped.
func (r *RelWriter) hold(x row, pos uint64) error {
	if x.to < r.w.man.Through {
		return nil
	}
	r.rows = append(r.rows, heldRow{row: x, pos: pos})
	r.w.held++
	return nil
}

// Advance says the recording has reached t: nothing earlier will come.
func (w *Writer) Advance(t algebra.Time) { w.latest = max(w.latest, t) }

// SetWindow sets the recording's window, written with the manifest.
func (w *Writer) SetWindow(win algebra.Window) { w.man.Window = &win }

// SetObservation sets the observation so far: its tuples are written as
// the relations Observed and Lost once they end (and at Close, cut to the
// window).
func (w *Writer) SetObservation(o db.Observation) { w.obs = o }

// Sync writes files when an hour has ended, Every has passed or MaxRows
// are held (see Writer); else it does nothing.
func (w *Writer) Sync() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("writer is closed")
	}
	all := w.latest-w.lastWrite >= int64(w.opts.Every) || w.held >= w.opts.MaxRows
	cut := hourStart(w.latest) // rows ending before it: their hour is over
	if all {
		cut = w.latest
	}
	if cut <= w.man.Through {
		return nil // every row ending before cut is in the files already
	}
	return w.write(cut, false)
}

// Close writes everything held, the tuples still open (to_ns NULL) and
// the observation, and the manifest. A writer's first error is returned
// again.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	err := w.write(algebra.Forever, true)
	w.closed = true
	return err
}

func hourStart(t algebra.Time) algebra.Time {
	const hour = int64(time.Hour)
	h := t / hour * hour
	if h > t {
		h -= hour
	}
	return h
}

func hourName(t algebra.Time) string {
	return time.Unix(0, hourStart(t)).UTC().Format("2006-01-02T15")
}

// part is the rows of one file to write.
type part struct {
	s       *schema
	rel     string
	host    string
	hour    string
	open    bool
	minFrom algebra.Time
	rows    []row
}

// write writes the rows ending before cut (all held ones and the open
// tuples and the whole observation when final), then the manifest.
func (w *Writer) write(cut algebra.Time, final bool) error {
	if w.err != nil {
		return w.err
	}
	n := w.man.Writes + 1
	parts := map[string]*part{}
	// top is the latest end of a row written into a file that stays
	// (not open-…): Through must pass it (see below).
	top := algebra.Beginning
	add := func(s *schema, x row, open bool) {
		hour := hourName(x.to)
		if open || x.to == algebra.Forever {
			open, hour = true, hourName(w.latest)
		} else {
			top = max(top, x.to)
		}
		k := s.rel.Name + "\x00" + x.host + "\x00" + hour + "\x00" + strconv.FormatBool(open)
		p := parts[k]
		if p == nil {
			p = &part{s: s, rel: s.rel.Name, host: x.host, hour: hour, open: open, minFrom: x.from}
			parts[k] = p
		}
		p.minFrom = min(p.minFrom, x.from)
		p.rows = append(p.rows, x)
	}
	// Resuming from a journal (Append, then the journal replayed from the
	// manifest's Resume into At and the calls). What is durable: the
	// files a manifest counts (Writes), each renamed into place before the
	// manifest that counts it; nothing else survives a kill. Resume is
	// the least position of a row held or open at this write (else the
	// position after the last call made): every message before it is a
	// state message (Advance, SetWindow and SetObservation, each sent
	// again at every recorder sync) or belongs to a row this or an
	// earlier write put in files, so reading from Resume loses nothing.
	// A replayed row is recognised as written by its end alone: it ends
	// before Through (see below), and hold drops it; a row ending at or
	// after Through was not written, and is held again (a tuple still
	// open is held from its replayed Begin, its open-… file removed by
	// Append). This rests on the journal's time order: after an Advance
	// to t, no row ending before t comes, so no row ending before a cut
	// comes after the write that made it.
	resume := uint64(0)
	if w.pos > 0 {
		resume = w.pos + 1
	}
	names := slices.Sorted(maps.Keys(w.rels))
	for _, name := range names {
		r := w.rels[name]
		kept := r.rows[:0]
		for _, h := range r.rows {
			end := h.to
			if end < cut {
				add(r.s, h.row, false)
				w.held--
				continue
			}
			kept = append(kept, h)
			if h.pos > 0 {
				resume = min(resume, h.pos)
			}
		}
		clear(r.rows[len(kept):])
		r.rows = kept
		for _, o := range r.open {
			if final {
				add(r.s, o.row, true) // removed again by Append: a resumed journal brings them
			}
			if o.pos > 0 {
				resume = min(resume, o.pos)
			}
		}
	}
	// Every row ending before cut is written: the manifest's Through
	// becomes cut (rows held end at or after it), and the observation's
	// tuples are written by the same rule, so a resumed writer drops
	// exactly what the files hold.
	if err := w.observation(add, cut, final); err != nil {
		return w.fail(err)
	}
	keys := slices.Sorted(maps.Keys(parts))
	for _, k := range keys {
		if err := w.writePart(parts[k], n); err != nil {
			return w.fail(err)
		}
	}
	if len(parts) > 0 || final {
		w.man.Writes = n
	}
	// Through is how a replayed row is recognised as written: after this
	// write, every row ending before Through is in files that stay, and
	// no row ending at or after it is (open-… files aside: Append removes
	// them). Before Close, rows ending before cut are written and those
	// ending at or after it are held, so Through is cut. Close writes
	// every row, and a row may end after the last Advance (a recorder's
	// last inputs come after its last sync): Through passes the latest
	// end written, else a journal replayed after Close (a consumer run
	// again) would hold those rows, and the observation's tuples cut to
	// a window reaching past latest, a second time.
	if !final {
		w.man.Through = max(w.man.Through, cut)
	} else {
		w.man.Through = max(w.man.Through, algebra.Next(w.latest), algebra.Next(top))
	}
	if w.pos > 0 {
		w.man.Resume = resume
	}
	w.man.Open = final
	if cut == w.latest || final {
		w.lastWrite = w.latest
	}
	return w.fail(w.writeManifest())
}

// observation adds the observation's tuples that have ended before
// through and were not written yet; at the end, every one, cut to the
// window (as a database cuts it: db.Observation).
func (w *Writer) observation(add func(*schema, row, bool), through algebra.Time, final bool) error {
	for i, rows := range [][]algebra.Tuple{w.obs.Observed, w.obs.Lost} {
		name := algebra.ObservedName
		if i == 1 {
			name = algebra.LostName
		}
		s, err := newSchema(w.cat.Lookup(name))
		if err != nil {
			return err
		}
		for _, t := range rows {
			from, to := t.From, t.To
			if final && w.man.Window != nil {
				from, to = max(from, w.man.Window.From), min(to, algebra.Next(w.man.Window.To))
			}
			if to <= from || to == algebra.Forever || !final && to >= through || to < w.man.Through {
				continue
			}
			// A fleet's (Observed and Lost with Host: Catalog.MarkFleet)
			// are each host's: two hosts' spans of a relation may agree.
			host := w.opts.Host
			if s.hostAt >= 0 && s.hostAt < len(t.Vals) {
				host = t.Vals[s.hostAt].S
			}
			k := obsKey{lost: i == 1, rel: t.Vals[0].S, host: host, from: t.From, to: to}
			if w.obsDone[k] {
				continue
			}
			w.obsDone[k] = true
			add(s, row{host: host, vals: t.Vals, from: from, to: to}, false)
		}
	}
	return nil
}

func (w *Writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("parquet recording %s: %w", w.dir, err)
	}
	return w.err
}

// writePart writes one file: under a temporary name, synced, renamed.
func (w *Writer) writePart(p *part, n uint64) error {
	dir := filepath.Join(w.dir, "relation="+p.rel, "host="+p.host, "hour="+p.hour)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := fmt.Sprintf("%d-%d.parquet", p.minFrom, n)
	if p.open {
		name = "open-" + name
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	sum := crc32.New(castagnoli)
	pw := pq.NewWriter(io.MultiWriter(f, sum), p.s.pq, pq.Compression(&pq.Zstd), pq.KeyValueMetadata("tqmon.relation", p.rel))
	// Rows are encoded in batches into buffers reused from batch to batch:
	// WriteRows copies the values into its column buffers.
	buf := make([]pq.Row, 1024)
	for i := 0; i < len(p.rows); {
		n := 0
		for ; i < len(p.rows) && n < len(buf); i, n = i+1, n+1 {
			buf[n] = p.s.encode(p.rows[i], buf[n])
		}
		if _, err := pw.WriteRows(buf[:n]); err != nil {
			f.Close()
			return err
		}
	}
	if err := pw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	st, _ := f.Stat()
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	if w.man.Sums == nil {
		w.man.Sums = map[string]uint32{}
	}
	rel, _ := filepath.Rel(w.dir, filepath.Join(dir, name))
	w.man.Sums[filepath.ToSlash(rel)] = sum.Sum32()
	w.stats.Files++
	w.stats.Rows += int64(len(p.rows))
	if st != nil {
		w.stats.Bytes += st.Size()
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (w *Writer) writeManifest() error {
	data, err := json.MarshalIndent(w.man, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(w.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(w.dir, manifestName)); err != nil {
		return err
	}
	return syncDir(w.dir)
}

// ErrNoRecording: a directory holds no recording (no manifest).
var ErrNoRecording = errors.New("no recording")

func readManifest(dir string) (*manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is no Parquet recording of tqmon's (no %s): %w", dir, manifestName, ErrNoRecording)
		}
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, manifestName), err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("%s: format %d; this tqmon reads format %d", filepath.Join(dir, manifestName), m.Format, Format)
	}
	return &m, nil
}

// file is one file of a recording, as its path names it.
type file struct {
	path      string
	rel, host string
	hour      algebra.Time // the hour's start (open files: the recording's end's)
	minFrom   algebra.Time
	write     uint64
	open, tmp bool
}

// listFiles lists a recording's files (and temporary leftovers, tmp).
func listFiles(dir string) ([]file, error) {
	var out []file
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) == 1 {
			if strings.HasPrefix(parts[0], ".tmp-") {
				out = append(out, file{path: path, tmp: true})
			}
			return nil
		}
		if len(parts) != 4 {
			return nil
		}
		f := file{path: path}
		base := parts[3]
		if strings.HasPrefix(base, ".tmp-") {
			f.tmp = true
			out = append(out, f)
			return nil
		}
		if !strings.HasSuffix(base, ".parquet") {
			return nil
		}
		var ok bool
		if f.rel, ok = strings.CutPrefix(parts[0], "relation="); !ok {
			return nil
		}
		if f.host, ok = strings.CutPrefix(parts[1], "host="); !ok {
			return nil
		}
		hour, ok := strings.CutPrefix(parts[2], "hour=")
		if !ok {
			return nil
		}
		h, err := time.Parse("2006-01-02T15", hour)
		if err != nil {
			return fmt.Errorf("%s: hour %q: %w", path, hour, err)
		}
		f.hour = h.UnixNano()
		base = strings.TrimSuffix(base, ".parquet")
		base, f.open = strings.CutPrefix(base, "open-")
		i := strings.LastIndexByte(base, '-')
		if i <= 0 {
			return fmt.Errorf("%s: not a name <least from>-<write>.parquet", path)
		}
		if f.minFrom, err = strconv.ParseInt(base[:i], 10, 64); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if f.write, err = strconv.ParseUint(base[i+1:], 10, 64); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, f)
		return nil
	})
	return out, err
}
