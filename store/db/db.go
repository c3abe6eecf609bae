package db

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/grammar/sdl"
	"github.com/tqmon/tqmon/sensor"
)

// Errors Open and Create return (wrapped, with the directory and details).
var (
	// ErrNotStore: the directory is not a tqmon database.
	ErrNotStore = errors.New("not a tqmon database")
	// ErrVersion: the database has an on-disk format this build does not read.
	ErrVersion = errors.New("unsupported database format version")
	// ErrCorrupt: a record does not decode (checksum, structure, schema).
	ErrCorrupt = errors.New("corrupt")
	// ErrInUse: another process has the database open for writing.
	ErrInUse = errors.New("in use")
	// ErrExists: the directory already holds something.
	ErrExists = errors.New("already exists")
)

// markerFile marks a directory as a tqmon database before badger writes
// anything into it, so a foreign directory is never mistaken for one (nor
// scribbled into).
const markerFile = "TQMON"

// Spec is a database's sensor description: the SDL text of its relations
// (primitive ones, then those recorded from queries) and the file name it is
// exported under.
type Spec struct {
	Name string
	Text string
}

// DB is an open tqmon database.
type DB struct {
	dir      string
	bdb      *badger.DB
	readOnly bool
	spec     Spec
	cat      *algebra.Catalog
	rels     []*relMeta
	byName   map[string]*relMeta
	window   *algebra.Window
	writer   *Writer
}

// relMeta is one stored relation.
type relMeta struct {
	id    uint16
	rel   *algebra.Relation
	sch   *schema
	state relState
}

// Options shape Open.
type Options struct {
	// ReadOnly opens for reading only; several readers may share a
	// database. A database left by a killed writer is opened for writing
	// once, to recover, when read-only opening cannot.
	ReadOnly bool
}

func badgerOptions(dir string, readOnly bool) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithReadOnly(readOnly).
		WithMetricsEnabled(false).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithMemTableSize(32 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2)
}

// Create makes a new database in dir (which must not exist or be empty)
// for the relations of a sensor description.
func Create(dir string, spec Spec) (*DB, error) {
	return create(dir, spec, false)
}

// CreateInMemory makes a database that lives only in memory (gone when
// closed): to replay or query a history through the store's machinery
// without a directory, and for tests.
func CreateInMemory(spec Spec) (*DB, error) {
	return create("(memory)", spec, true)
}

// create is Create, or with inMemory a database that lives only in memory.
func create(dir string, spec Spec, inMemory bool) (*DB, error) {
	cat, err := compileSpec(spec)
	if err != nil {
		return nil, err
	}
	if len(cat.Relations) > 1<<16 {
		return nil, fmt.Errorf("%s: %d relations; a database holds at most %d", dir, len(cat.Relations), 1<<16)
	}
	if inMemory {
		return initialize(dir, spec, cat, badgerOptions("", false).WithInMemory(true))
	}
	ents, err := os.ReadDir(dir)
	switch {
	case err == nil && len(ents) > 0:
		if isStore(dir) {
			return nil, fmt.Errorf("database %s %w: record into a new directory", dir, ErrExists)
		}
		return nil, fmt.Errorf("%s %w and is not empty: a new database needs a new or empty directory", dir, ErrExists)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	marker := fmt.Sprintf("tqmon database (badger), format %d\n", FormatVersion)
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte(marker), 0o644); err != nil {
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	return initialize(dir, spec, cat, badgerOptions(dir, false))
}

// initialize opens a new badger database and writes the format, the spec
// and the relations.
func initialize(dir string, spec Spec, cat *algebra.Catalog, opts badger.Options) (*DB, error) {
	bdb, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	d := &DB{dir: dir, bdb: bdb, spec: spec, cat: cat, byName: map[string]*relMeta{}}
	txn := bdb.NewTransaction(true)
	defer txn.Discard()
	set := func(k, v []byte) {
		if err == nil {
			err = txn.Set(k, v)
		}
	}
	set(singleKey(pFormat), encodeFormat())
	set(singleKey(pSpec), encodeSpec(spec.Name, spec.Text))
	for _, r := range cat.Relations {
		m := d.addMeta(r)
		set(relKey(pRelation, m.id), encodeRelation(m.id, r.Name, r.Signature()))
		set(relKey(pState, m.id), encodeState(&m.state))
	}
	if err == nil {
		err = txn.Commit()
	}
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	return d, nil
}

func (d *DB) addMeta(r *algebra.Relation) *relMeta {
	m := &relMeta{id: uint16(len(d.rels)), rel: r, sch: schemaOf(r)}
	d.rels = append(d.rels, m)
	d.byName[r.Name] = m
	return m
}

func compileSpec(spec Spec) (*algebra.Catalog, error) {
	f, err := sdl.Parse(spec.Name, spec.Text)
	if err != nil {
		return nil, err
	}
	return sensor.Compile(f)
}

func isStore(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, markerFile))
	return err == nil
}

// Open opens an existing database.
func Open(dir string, opts Options) (*DB, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no database at %s", dir)
		}
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is %w: it is a file, not a directory", dir, ErrNotStore)
	}
	if !isStore(dir) {
		return nil, fmt.Errorf("%s is %w (it has no %s file)%s", dir, ErrNotStore, markerFile, foreignHint(dir))
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		return nil, fmt.Errorf("database %s is %w: its MANIFEST is missing", dir, ErrCorrupt)
	}
	bdb, err := openBadger(dir, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	d := &DB{dir: dir, bdb: bdb, readOnly: opts.ReadOnly, byName: map[string]*relMeta{}}
	if err := d.load(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	return d, nil
}

// foreignHint says what a directory that is not a database looks like.
func foreignHint(dir string) string {
	ents, _ := os.ReadDir(dir)
	var sdl, csv bool
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".sdl":
			sdl = true
		case ".csv":
			csv = true
		}
	}
	if sdl || csv {
		return "; it looks like a CSV history: read it with --history, or load it with tqmon import"
	}
	if len(ents) == 0 {
		return "; it is empty"
	}
	return ""
}

// openBadger opens the badger database, read-only when asked, recovering
// (by opening for writing once) a database a killed writer left.
func openBadger(dir string, readOnly bool) (bdb *badger.DB, err error) {
	// badger reports some corruptions by panicking in the opening
	// goroutine; make those errors too.
	defer func() {
		if r := recover(); r != nil {
			bdb, err = nil, fmt.Errorf("database %s is %w: %v", dir, ErrCorrupt, r)
		}
	}()
	bdb, err = badger.Open(badgerOptions(dir, readOnly))
	if readOnly && err != nil && (errors.Is(err, badger.ErrTruncateNeeded) || strings.Contains(err.Error(), badger.ErrTruncateNeeded.Error())) {
		bdb, err = badger.Open(badgerOptions(dir, false))
		if err == nil {
			// Recovered; reopen as asked so others may read too.
			if err = bdb.Close(); err == nil {
				bdb, err = badger.Open(badgerOptions(dir, true))
			}
		}
	}
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("database %s is %w: another process has it open (a recording still running?)", dir, ErrInUse)
		}
		return nil, fmt.Errorf("database %s is %w: %v", dir, ErrCorrupt, err)
	}
	return bdb, nil
}

// load reads the format, the spec, the relations and the window.
func (d *DB) load() error {
	return d.bdb.View(func(txn *badger.Txn) error {
		get := func(k []byte) ([]byte, error) {
			it, err := txn.Get(k)
			if err != nil {
				return nil, err
			}
			return it.ValueCopy(nil)
		}
		v, err := get(singleKey(pFormat))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return fmt.Errorf("%w: no format record", ErrCorrupt)
		}
		if err != nil {
			return err
		}
		ver, err := decodeFormat(v)
		if err != nil {
			return err
		}
		if ver != FormatVersion {
			return fmt.Errorf("%w %d: this tqmon reads format %d", ErrVersion, ver, FormatVersion)
		}
		if v, err = get(singleKey(pSpec)); err != nil {
			return fmt.Errorf("%w: no sensor description (%v)", ErrCorrupt, err)
		}
		name, text, err := decodeSpec(v)
		if err != nil {
			return err
		}
		d.spec = Spec{Name: name, Text: text}
		if d.cat, err = compileSpec(d.spec); err != nil {
			return fmt.Errorf("%w: its sensor description does not compile: %v", ErrCorrupt, err)
		}
		for i, r := range d.cat.Relations {
			m := d.addMeta(r)
			v, err := get(relKey(pRelation, m.id))
			if err != nil {
				return fmt.Errorf("%w: relation %s (%d) has no descriptor (%v)", ErrCorrupt, r.Name, i, err)
			}
			id, name, sig, err := decodeRelation(v)
			if err != nil {
				return err
			}
			if id != m.id || name != r.Name || sig != r.Signature() {
				return fmt.Errorf("%w: relation %d is stored as %q, the description says %q", ErrCorrupt, m.id, sig, r.Signature())
			}
			if v, err = get(relKey(pState, m.id)); err != nil {
				return fmt.Errorf("%w: relation %s has no state (%v)", ErrCorrupt, r.Name, err)
			}
			if m.state, err = decodeState(v); err != nil {
				return err
			}
		}
		v, err = get(singleKey(pWindow))
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
		case err != nil:
			return err
		default:
			w, err := decodeWindow(v)
			if err != nil {
				return err
			}
			d.window = &w
		}
		return nil
	})
}

// Close closes the database (and its writer, if any).
func (d *DB) Close() error {
	var err error
	if d.writer != nil {
		err = d.writer.Close()
	}
	if cerr := d.bdb.Close(); err == nil {
		err = cerr
	}
	return err
}

// Dir is the database's directory.
func (d *DB) Dir() string { return d.dir }

// Catalog is the database's catalog, compiled from its spec.
func (d *DB) Catalog() *algebra.Catalog { return d.cat }

// Spec is the database's sensor description.
func (d *DB) Spec() Spec { return d.spec }

// Window is the span the recording observed, when known.
func (d *DB) Window() *algebra.Window {
	if d.window == nil {
		return nil
	}
	w := *d.window
	return &w
}

// Extent is as algebra.History.Extent: the window if there is one, else
// from the earliest time to the latest finite time of any tuple.
func (d *DB) Extent() (start, end algebra.Time, ok bool) {
	if d.window != nil {
		return d.window.From, d.window.To, true
	}
	start, end = algebra.Forever, algebra.Beginning
	for _, m := range d.rels {
		if m.state.extOK {
			ok = true
			start = min(start, m.state.extStart)
			end = max(end, m.state.extEnd)
		}
	}
	if !ok {
		return 0, 0, false
	}
	if end == algebra.Beginning {
		end = start
	}
	return start, end, true
}

// RelationStats describe one stored relation.
type RelationStats struct {
	Name     string
	Tuples   uint64 // tuples recorded (interval and event)
	Elements uint64 // elements: begins, ends and events
	Blocks   uint64 // blocks written
}

// Stats describe every stored relation, in catalog order.
func (d *DB) Stats() []RelationStats {
	out := make([]RelationStats, len(d.rels))
	for i, m := range d.rels {
		out[i] = RelationStats{Name: m.rel.Name, Tuples: m.state.tuples, Elements: m.state.elements, Blocks: m.state.blocks}
	}
	return out
}

func (d *DB) meta(name string) (*relMeta, error) {
	m := d.byName[name]
	if m == nil {
		names := make([]string, 0, len(d.byName))
		for n := range d.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("the database has no relation %s (it has %s)", name, strings.Join(names, ", "))
	}
	return m, nil
}
