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
	// ErrChanged: a file a reader was reading was truncated under it (a
	// writer compacting the database deletes the tables it replaced so).
	ErrChanged = errors.New("changed while read")
	// ErrDiskFull: the file system holding a database has too little space
	// left for its writer to go on safely (see DiskReserve).
	ErrDiskFull = errors.New("disk full")
)

// markerFile marks a directory as a tqmon database, so a foreign directory
// is never mistaken for one (nor scribbled into). Create writes it once the
// database's description is durable: a directory a creation was killed in
// the middle of is not taken for a database either.
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
	// observation is the stored Observation (observation.go), when any.
	observation *Observation
	writer      *Writer
	view        *view    // the view a read-only database is read through
	damage      []Damage // what a salvaging open left out, and what that costs
	opened      []Damage // the tables and logs it left out
}

// relMeta is one stored relation.
type relMeta struct {
	id    uint16
	rel   *algebra.Relation
	sch   *schema
	state relState
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
		return initialize(dir, spec, cat, badgerOptions("", false, newBadgerLog(dir, nil)).WithInMemory(true))
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
	d, err := initialize(dir, spec, cat, badgerOptions(dir, false, newBadgerLog(dir, nil)))
	if err != nil {
		return nil, err
	}
	// Marked once its description is durable: a creation killed before
	// leaves a directory that is not taken for a database.
	marker := fmt.Sprintf("tqmon database (badger), format %d\n", FormatVersion)
	tmp := filepath.Join(dir, markerFile+".new")
	if err = d.bdb.Sync(); err == nil {
		if err = os.WriteFile(tmp, []byte(marker), 0o644); err == nil {
			err = os.Rename(tmp, filepath.Join(dir, markerFile))
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	return d, nil
}

// initialize opens a new badger database and writes the format, the spec
// and the relations.
func initialize(dir string, spec Spec, cat *algebra.Catalog, opts badger.Options) (*DB, error) {
	bdb, err := openBadger(dir, opts)
	if err != nil {
		return nil, err
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

// Catalog compiles the sensor description.
func (s Spec) Catalog() (*algebra.Catalog, error) { return compileSpec(s) }

func compileSpec(spec Spec) (*algebra.Catalog, error) {
	// A fleet's recording has a fleet's catalog, as the run had.
	return sensor.CompileText(spec.Name, spec.Text)
}

func isStore(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, markerFile))
	return err == nil
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
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); err == nil {
		return "; it holds a badger database but no tqmon description (a recording killed as it began?)"
	}
	if len(ents) == 0 {
		return "; it is empty"
	}
	return ""
}

// load reads the format, the spec, the relations and the window. With
// salvage, a relation whose state does not read is read from its
// beginning, and a window that does not read is left out (both listed as
// damage); without the rest nothing can be read.
func (d *DB) load(salvage bool) error {
	return guard(d.dir, func() error { return d.bdb.View(func(txn *badger.Txn) error { return d.loadTxn(txn, salvage) }) })
}

func (d *DB) loadTxn(txn *badger.Txn, salvage bool) error {
	{
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
			v, err = get(relKey(pState, m.id))
			if err != nil {
				err = fmt.Errorf("%w: relation %s has no state (%v)", ErrCorrupt, r.Name, err)
			} else {
				m.state, err = decodeState(v)
			}
			if err != nil && salvage {
				m.state = relState{}
				d.damage = append(d.damage, Damage{Rel: r.Name, Detail: fmt.Sprintf("its state: %v: read from its beginning", err)})
				err = nil
			}
			if err != nil {
				return err
			}
		}
		// The window and the observation are optional: none before the
		// first commit that set them. With salvage, one that does not
		// read is left out.
		optional := func(prefix byte, what string, decode func([]byte) error) error {
			v, err := get(singleKey(prefix))
			switch {
			case errors.Is(err, badger.ErrKeyNotFound):
				return nil
			case err != nil:
				return err
			}
			if err := decode(v); err != nil {
				if !salvage {
					return err
				}
				d.damage = append(d.damage, Damage{Detail: fmt.Sprintf("the %s: %v: left out", what, err)})
			}
			return nil
		}
		if err := optional(pWindow, "observation window", func(v []byte) error {
			w, err := decodeWindow(v)
			if err == nil {
				d.window = &w
			}
			return err
		}); err != nil {
			return err
		}
		if err := optional(pObserved, "observation", func(v []byte) error {
			o, err := decodeObservation(v)
			if err == nil {
				d.observation = &o
			}
			return err
		}); err != nil {
			return err
		}
		return nil
	}
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
	d.view.remove()
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

// Summary says what a recording stored over its observation window: the
// tuples in all and per relation that has any, e.g. "recorded 12458
// tuples into run.db, observed 0:00:00 to 0:50:32.46 (Process 96, …)".
func (d *DB) Summary(win algebra.Window) string {
	var tuples uint64
	var rels []string
	for _, s := range d.Stats() {
		if s.Tuples > 0 {
			tuples += s.Tuples
			rels = append(rels, fmt.Sprintf("%s %d", s.Name, s.Tuples))
		}
	}
	return fmt.Sprintf("recorded %d tuples into %s, observed %s to %s (%s)", tuples, d.Dir(),
		algebra.FormatTime(win.From, algebra.TimeAuto), algebra.FormatTime(win.To, algebra.TimeAuto), strings.Join(rels, ", "))
}

// String reports a sync on stderr (tqmon record -v).
func (c CommitInfo) String() string {
	return fmt.Sprintf("synced %d tuples (%d elements) through %s", c.Tuples, c.Elements, algebra.FormatTime(c.Through, algebra.TimeAuto))
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
