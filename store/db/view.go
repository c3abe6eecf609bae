package db

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Reading without writing. Badger, opened read-only, still refuses a
// database whose write-ahead log (a .mem file) ends in anything but a
// complete transaction — which is how every writer that was killed, and
// every writer still running, leaves it — and opening it for writing to
// recover truncates the log and rewrites it as a table, for good. Nor may
// badger open a directory a writer holds. So a read-only Open never lets
// badger open the database's directory: it builds a view, a private
// directory of its own holding
//
//   - links to the database's value logs (.vlog), which badger only ever
//     appends to, and deletes whole;
//   - its tables (.sst): links when no writer holds the database, copies
//     when one does (a live database). A writer compacting deletes the
//     tables it replaced, and badger truncates a table before removing
//     it — under every link to it, in the middle of a reader's read. A
//     copy outlives that (TestViewOutlivesCompaction,
//     TestReadWhileCompacting). The cost: while a view of a live
//     database is open, its tables' size in ViewDir (the system's
//     temporary directory unless Options.ViewDir says), and the time to
//     copy them as it opens;
//   - a copy of the MANIFEST, taken after the logs were listed, so every
//     memtable flushed meanwhile is found either in its log or in a table;
//   - each write-ahead log, first as a link and, once badger has said where
//     its last complete transaction ends, as a copy cut there;
//
// and opens that read-only. The database's files are opened for reading
// only, and its directory lock is not taken: a recording may be running
// (the view then holds what it had committed when the view was made).
// Every read-only open goes through a view, even of a database with no
// log and no writer: badger, opened read-only, still deletes every table
// file its MANIFEST does not list — one a writer starting meanwhile has
// just written, or every table when the MANIFEST is damaged — and in a
// view that is a link or a copy (FuzzOpenCorrupt found it).
//
// Before badger opens a table, the view validates it — its index and the
// checksum of every block — in the caller's goroutine: badger opens tables
// in goroutines of its own, where a truncated table panics beyond any
// recover, and it silently leaves out a table whose checksum fails.
//
// Cutting a log is only right when what follows the cut is a transaction a
// writer was interrupted in (or the zeros badger preallocates). Anything
// else — an entry whose checksum fails followed by further data, a log
// shorter than badger makes them — is damage, reported as such.

// walFileSize is the size badger gives every write-ahead log file: twice
// the memtable size (see badgerOptions).
const walFileSize = 2 * memTableSize

// memTableSize is badger's memtable size for every database.
const memTableSize = 32 << 20

// walSlack is how far past its last byte that is not zero a log is read:
// the zero bytes a complete entry may end with (its checksum, and a value
// ending in zeros before it).
const walSlack = 64 << 10

// walHeader is the size of a log file's header (badger's vlogHeaderSize).
const walHeader = 20

// viewAttempts bounds the views made of a database whose writer changed
// its files while the view was being made.
const viewAttempts = 10

// errViewRace: the database changed while its view was made; make another.
var errViewRace = errors.New("the database changed while it was being opened")

// view is a read-only image of a database directory (see above).
type view struct {
	dir  string // the view's own directory
	live bool   // a writer held the database when the view was made
}

func (v *view) remove() {
	if v != nil && v.dir != "" {
		os.RemoveAll(v.dir)
		v.dir = ""
	}
}

// openView opens a database read-only through a view. With salvage, damaged
// tables and logs are left out (and listed); without, damage is an error.
func openView(dir, viewDir string, salvage bool, log *badgerLog) (*badger.DB, *view, []Damage, error) {
	for attempt := 1; ; attempt++ {
		bdb, v, dmg, err := tryView(dir, viewDir, salvage, attempt == viewAttempts, log)
		if err == nil || !errors.Is(err, errViewRace) || attempt == viewAttempts {
			if errors.Is(err, errViewRace) {
				err = fmt.Errorf("database %s: %w %d times (a writer compacting it?)", dir, errViewRace, attempt)
			}
			return bdb, v, dmg, err
		}
	}
}

func tryView(dir, viewDir string, salvage, lastTry bool, log *badgerLog) (*badger.DB, *view, []Damage, error) {
	m, err := makeView(dir, viewDir, salvage, lastTry)
	if err != nil {
		var dmg []Damage
		if m != nil {
			dmg = m.dmg
			m.v.remove()
		}
		return nil, nil, dmg, err
	}
	bdb, dmg, err := openMade(dir, m, salvage, lastTry, log)
	if err != nil {
		m.v.remove()
		return nil, nil, dmg, err
	}
	return bdb, m.v, dmg, nil
}

// made is a view made and not yet opened: everything tqmon reads of a
// database before badger does — its logs cut where their last complete
// transaction ends, its MANIFEST, its tables validated (damaged ones
// dropped from the view's MANIFEST).
type made struct {
	v    *view
	wals map[int]*walCopy
	dmg  []Damage // the tables left out
}

// makeView makes a view of dir (see above): tqmon's own reading of the
// database, without badger. On an error that is the database's damage
// (a *DamageError), made lists it; the view is the caller's to remove.
func makeView(dir, viewDir string, salvage, lastTry bool) (m *made, err error) {
	v := &view{live: writerAlive(dir)}
	v.dir, err = os.MkdirTemp(viewDir, "tqmon-view-")
	if err != nil {
		return nil, fmt.Errorf("database %s: a view to read it through: %w", dir, err)
	}
	m = &made{v: v, wals: map[int]*walCopy{}}
	fail := func(err error) (*made, error) { return m, err }
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fail(fmt.Errorf("database %s: %w", dir, err))
	}
	var tableFiles []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".mem"):
			fid, err := strconv.Atoi(strings.TrimSuffix(name, ".mem"))
			if err != nil {
				continue // not badger's; badger fails on it too, so leave it out
			}
			wc, err := readWAL(filepath.Join(dir, name), filepath.Join(v.dir, name))
			if err != nil {
				return fail(raced(v, dir, err))
			}
			if wc.data > walHeader {
				if err := wc.cutAt(walEnd(wc.buf)); err != nil {
					return fail(fmt.Errorf("database %s: a view to read it through: %w", dir, err))
				}
				m.wals[fid] = wc
			}
			continue
		case strings.HasSuffix(name, ".sst") && v.live:
			tableFiles = append(tableFiles, name) // copied, once the MANIFEST is
			continue
		case strings.HasSuffix(name, ".sst"), strings.HasSuffix(name, ".vlog"), name == badger.KeyRegistryFileName:
		default:
			continue
		}
		if err := os.Symlink(absPath(dir, name), filepath.Join(v.dir, name)); err != nil {
			return fail(fmt.Errorf("database %s: a view to read it through: %w", dir, err))
		}
	}
	man, err := os.ReadFile(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return fail(fmt.Errorf("database %s is %w: its MANIFEST: %v", dir, ErrCorrupt, err))
	}
	// A live database's tables are copied, after the MANIFEST: a table it
	// lists was written whole before it was listed, and is either copied
	// whole or — deleted by a compaction since — found missing or cut
	// (badger truncates a table before removing it), which is a race and
	// another view. Links would not do: the truncation reaches a link's
	// reader too, in the middle of a read.
	for _, name := range tableFiles {
		if err := copyFile(filepath.Join(dir, name), filepath.Join(v.dir, name)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since the listing: the MANIFEST says whether it is needed
			}
			return fail(fmt.Errorf("database %s: a view to read it through: %w", dir, err))
		}
	}
	manPath := filepath.Join(v.dir, badger.ManifestFilename)
	if err := os.WriteFile(manPath, man, 0o644); err != nil {
		return fail(fmt.Errorf("database %s: a view to read it through: %w", dir, err))
	}
	tables, err := manifestTables(manPath)
	if err != nil {
		return fail(fmt.Errorf("database %s is %w: its MANIFEST: %v", dir, ErrCorrupt, err))
	}
	var drop []uint64
	for _, tm := range tables {
		name := table.IDToFilename(tm.id)
		if _, err := os.Stat(filepath.Join(v.dir, name)); err != nil && v.live {
			return fail(raced(v, dir, err))
		}
		if d, bad := validateTable(filepath.Join(v.dir, name), tm.compression); bad {
			if v.live && !lastTry {
				return fail(errViewRace) // deleted (truncated first) by a compaction, likely
			}
			d.File = name
			m.dmg = append(m.dmg, d)
			drop = append(drop, tm.id)
		}
	}
	if len(drop) > 0 {
		if err := os.WriteFile(manPath, appendManifestDeletes(man, drop), 0o644); err != nil {
			return fail(fmt.Errorf("database %s: a view to read it through: %w", dir, err))
		}
	}
	if len(m.dmg) > 0 && !salvage {
		return fail(damaged(dir, m.dmg))
	}
	return m, nil
}

// openMade opens a view made with badger, read-only: should badger find
// a log's last complete transaction ends earlier than walEnd did, the
// log's copy is cut there and badger tries again.
func openMade(dir string, m *made, salvage, lastTry bool, log *badgerLog) (bdb *badger.DB, dmg []Damage, err error) {
	v, wals := m.v, m.wals
	dmg = slices.Clone(m.dmg)
	var most int64
	for _, wc := range wals {
		most = max(most, int64(wc.end))
	}
	for range len(wals) + 2 {
		log.hold()
		bdb, err = badger.Open(readOptions(v.dir, most, log))
		if err == nil {
			log.release(true)
			for _, fid := range slices.Sorted(maps.Keys(wals)) {
				if d := wals[fid].damage; d != nil {
					dmg = append(dmg, *d)
				}
			}
			if len(dmg) > 0 && !salvage {
				bdb.Close()
				return nil, dmg, damaged(dir, dmg)
			}
			return bdb, dmg, nil
		}
		log.release(false)
		fid, end, ok := walCut(err)
		wc := wals[fid]
		if !ok || wc == nil || end >= int64(wc.end) {
			if v.live && !lastTry {
				return nil, nil, errViewRace
			}
			return nil, dmg, fmt.Errorf("database %s is %w: %v", dir, ErrCorrupt, err)
		}
		if err := wc.cutAt(int(end)); err != nil {
			return nil, dmg, fmt.Errorf("database %s: %w", dir, err)
		}
	}
	return nil, dmg, fmt.Errorf("database %s is %w: its write-ahead logs do not open", dir, ErrCorrupt)
}

// copyFile copies a file (created, or replaced).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// guard runs fn with memory faults made errors (see faulted).
func guard(dir string, fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = faulted(dir, r)
		}
	}()
	return fn()
}

// faulted makes a memory fault an error (ErrChanged), and panics on with
// anything else. Badger reads tables through memory maps, and a writer
// compacting a database deletes the tables it replaced by truncating them
// first: a view of a database being written (Live) reads copies of its
// tables, but one a writer opened only after the view was made links to
// them, and faults reading such a table — an error with panics on faults
// (debug.SetPanicOnFault), where it would end the process.
func faulted(dir string, r any) error {
	if _, ok := r.(interface{ Addr() uintptr }); ok {
		return fmt.Errorf("database %s %w: a table was deleted while it was read (a writer compacting it?): read it again", dir, ErrChanged)
	}
	panic(r)
}

// raced is errViewRace when the database has a writer, else the error.
func raced(v *view, dir string, err error) error {
	if v.live {
		return errViewRace
	}
	return fmt.Errorf("database %s: %w", dir, err)
}

func absPath(dir, name string) string {
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return filepath.Join(dir, name)
	}
	return p
}

// readOptions are badger's options for reading through a view whose
// largest log holds wal bytes: badger replays each log into a memtable
// whose arena it sizes from the memtable size, so that is made to fit the
// logs (an entry of at least 36 bytes takes at most 4 times that in the
// arena), not the writer's 32 MiB.
func readOptions(dir string, wal int64, log *badgerLog) badger.Options {
	mt := min(memTableSize, 4*wal+64<<10)
	return badgerOptions(dir, true, log).
		WithMemTableSize(mt).
		WithValueThreshold(min(1<<20, mt*15/100)).
		// Reads are sequential scans: no block cache (and so no
		// compression setting, which only writing uses, that needs one).
		WithBlockCacheSize(0).
		WithCompression(options.None)
}

// walCutRE matches badger's refusal of a log that does not end in a
// complete transaction: which log, and where its last one ends.
var walCutRE = regexp.MustCompile(`while opening fid: (\d+) .*end offset: (\d+) < size: (\d+)`)

// walCut reads, from badger's refusal of a log (ErrTruncateNeeded), which
// log it is and where its last complete transaction ends. The test
// TestViewCutsLogs keeps this in step with badger's message.
func walCut(err error) (fid int, end int64, ok bool) {
	if !errors.Is(err, badger.ErrTruncateNeeded) && !strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error()) {
		return 0, 0, false
	}
	m := walCutRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, 0, false
	}
	fid, err1 := strconv.Atoi(m[1])
	end, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return fid, end, true
}

// walCopy is a write-ahead log copied into a view.
type walCopy struct {
	name   string // the log's name
	path   string // the copy
	size   int64  // the log's size
	data   int64  // where its last byte that is not zero ends
	buf    []byte // the log up to walSlack past that
	end    int    // where the copy is cut
	damage *Damage
}

// readWAL reads a log up to its last byte that is not zero (badger
// preallocates logs with zeros).
func readWAL(from, to string) (*walCopy, error) {
	wc := &walCopy{name: filepath.Base(from), path: to}
	f, err := os.Open(from)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	wc.size = fi.Size()
	n, err := dataEnd(f, wc.size)
	if err != nil {
		return nil, err
	}
	// A complete entry may end in zero bytes (its checksum's last byte is
	// 0 once in 256; all four, after a value ending in zeros, far more
	// rarely): read past the last byte that is not zero, or the log's last
	// transaction — a commit reported synced — is cut off
	// (TestWALEndsInZeros).
	wc.data = n
	n = min(wc.size, n+walSlack)
	wc.buf = make([]byte, n)
	if _, err := f.ReadAt(wc.buf, 0); err != nil {
		return nil, err
	}
	return wc, nil
}

// cutAt writes the copy cut at end, where the log's last complete
// transaction ends, and says whether what follows is damage. A log with
// no complete transaction is left out: badger, read-only, can neither
// replay nor drop it.
func (wc *walCopy) cutAt(end int) error {
	if end > len(wc.buf) {
		return fmt.Errorf("%w: log %s ends at %d, before %d", ErrCorrupt, wc.name, len(wc.buf), end)
	}
	wc.end, wc.damage = end, nil
	if at, why, bad := walTail(wc.buf, end, wc.size); bad {
		wc.damage = &Damage{File: wc.name, Detail: fmt.Sprintf("write-ahead log damaged at byte %d of %d (%s): nothing after it can be read", at, wc.size, why), walLoss: true}
	}
	if end <= walHeader {
		if err := os.Remove(wc.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(wc.path, wc.buf[:end], 0o644)
}

// walEnd is where a log's last complete transaction ends, following
// badger's replay: entries of a transaction, then the entry that ends it;
// the first entry that is not whole (or is zeros) ends the log.
func walEnd(b []byte) int {
	const bitTxn, bitFinTxn = 1 << 6, 1 << 7
	end, p, inTxn := walHeader, walHeader, false
	for p < len(b) {
		n, ok := walEntry(b[p:])
		if !ok {
			break
		}
		switch meta := b[p]; {
		case meta&bitTxn != 0:
			inTxn = true
		case meta&bitFinTxn != 0:
			if !inTxn {
				return end
			}
			inTxn, end = false, p+n
		default:
			if inTxn {
				return end
			}
			end = p + n
		}
		p += n
	}
	return end
}

// dataEnd is the offset just past the last byte of f that is not zero:
// holes are skipped (seekData), data regions scanned a page at a time.
func dataEnd(f *os.File, size int64) (int64, error) {
	const page = 64 << 10
	var zero [page]byte
	buf := make([]byte, page)
	end := int64(0)
	for off := int64(0); off < size; {
		d, ok := seekData(f, off)
		if !ok {
			break
		}
		off = d - d%page
		n, err := f.ReadAt(buf, off)
		if n == 0 && err != nil {
			return 0, err
		}
		if !bytes.Equal(buf[:n], zero[:n]) {
			end = off + int64(len(bytes.TrimRight(buf[:n], "\x00")))
		}
		off += int64(n)
	}
	return end, nil
}

// walTail says whether the bytes of a log after end, where its last
// complete transaction ends, are damage. They are not when they are
// complete entries of a transaction whose end was never written, then at
// most one entry being written (in any state: a copy interrupted may have
// written its end before its start), then zeros (badger preallocates its
// logs): what a writer killed, or still writing, leaves. They are damage
// when a whole entry follows one that fails — as after a flipped byte — or
// when the log is shorter than badger makes them (cut short).
func walTail(data []byte, end int, size int64) (at int, why string, bad bool) {
	last := len(data) - 1
	for last >= end && data[last] == 0 {
		last--
	}
	if last < end {
		return 0, "", false
	}
	if size != walFileSize {
		return end, fmt.Sprintf("the file has %d bytes, badger makes them %d: it was cut short", size, walFileSize), true
	}
	p := end
	for p <= last {
		n, ok := walEntry(data[p:])
		if !ok {
			if q := nextEntry(data[:last+1], p+1); q >= 0 {
				return p, fmt.Sprintf("an entry fails its checksum, and a whole entry follows at byte %d", q), true
			}
			return 0, "", false // the entry being written when the writer stopped
		}
		p += n
	}
	return 0, "", false
}

// nextEntry finds the first whole entry of a transaction at or after from
// (-1: none): a header with a transaction's flags and a key of a
// transaction's size, and the checksum holding.
func nextEntry(data []byte, from int) int {
	const bitTxn, bitFinTxn = 1 << 6, 1 << 7
	for q := from; q+2 < len(data); q++ {
		if data[q]&(bitTxn|bitFinTxn) == 0 {
			continue
		}
		if k := data[q+2]; k < 8 || k > 64 {
			continue // keys are our keys (at most 19 bytes) or badger's, with 8 of version
		}
		if _, ok := walEntry(data[q:]); ok {
			return q
		}
	}
	return -1
}

// walEntry reads the log entry at the start of b (badger's layout: meta,
// user meta, key length, value length and expiry as uvarints, key, value,
// CRC-32C of all that, big-endian): its length, and whether it is whole
// and its checksum holds. n is 0 when not even its header reads.
func walEntry(b []byte) (n int, ok bool) {
	if len(b) < 2 {
		return 0, false
	}
	p := 2
	var lens [3]uint64
	for i := range lens {
		v, k := binary.Uvarint(b[p:])
		if k <= 0 {
			return 0, false
		}
		lens[i] = v
		p += k
	}
	if lens[0] > 1<<31 || lens[1] > 1<<31 {
		return 0, false
	}
	n = p + int(lens[0]) + int(lens[1]) + 4
	if n > len(b) {
		return n, false
	}
	want := binary.BigEndian.Uint32(b[n-4:])
	return n, crc32.Checksum(b[:n-4], castagnoli) == want
}

// manifestTable is a table a MANIFEST lists.
type manifestTable struct {
	id          uint64
	compression options.CompressionType
}

// manifestTables lists the tables of a MANIFEST (badger's own reading of
// it).
func manifestTables(path string) ([]manifestTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions("").WithLogger(nil))
	if err != nil {
		return nil, err
	}
	out := make([]manifestTable, 0, len(m.Tables))
	for id, t := range m.Tables {
		out = append(out, manifestTable{id, t.Compression})
	}
	return out, nil
}

// appendManifestDeletes appends to a MANIFEST one change set deleting the
// tables (badger's layout: length and CRC-32C, big-endian, then the
// protocol-buffer ManifestChangeSet, each change {1: id, 2: op DELETE}).
func appendManifestDeletes(man []byte, ids []uint64) []byte {
	var set []byte
	for _, id := range ids {
		var ch []byte
		ch = append(ch, 0x08)
		ch = binary.AppendUvarint(ch, id)
		ch = append(ch, 0x10, 0x01)
		set = append(set, 0x0a)
		set = binary.AppendUvarint(set, uint64(len(ch)))
		set = append(set, ch...)
	}
	out := bytes.Clone(man)
	out = binary.BigEndian.AppendUint32(out, uint32(len(set)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(set, castagnoli))
	return append(out, set...)
}

// validateTable opens a table as badger would and verifies the checksum of
// its index and of every block, turning panics into damage; the damage
// names the table's keys when its index reads. (The table is closed, never
// released: releasing a badger table deletes its file.)
func validateTable(path string, c options.CompressionType) (d Damage, bad bool) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Damage{Detail: fmt.Sprintf("cannot be opened: %v", firstLine(err.Error()))}, true
	}
	defer mf.Close(-1)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // a table truncated meanwhile: see faulted
	defer func() {
		if r := recover(); r != nil {
			// (badger's message is a page of debugging: not shown)
			d, bad = Damage{Detail: "unreadable: its index does not decode (cut short, or damaged)"}, true
		}
	}()
	t, err := table.OpenTable(mf, table.Options{ChkMode: options.NoVerification, BlockSize: 4 << 10, Compression: c})
	if err != nil {
		return Damage{Detail: fmt.Sprintf("unreadable: %v", firstLine(err.Error()))}, true
	}
	if err := t.VerifyChecksum(); err != nil {
		d := Damage{Detail: fmt.Sprintf("a block's checksum fails: %v", firstLine(err.Error()))}
		d.keys = [2][]byte{badgerUserKey(t.Smallest()), badgerUserKey(t.Biggest())}
		return d, true
	}
	return Damage{}, false
}

// badgerUserKey strips the version badger appends to every key it stores.
func badgerUserKey(k []byte) []byte {
	if len(k) < 8 {
		return nil
	}
	return bytes.Clone(k[:len(k)-8])
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
