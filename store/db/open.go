package db

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
)

// Options shape Open.
type Options struct {
	// ReadOnly opens for reading only, through a view (view.go): nothing
	// in the database's directory is written, truncated or rewritten, the
	// database may be open elsewhere for writing (a recording still
	// running: the view holds what it had committed), and a database a
	// killed writer left reads back everything it committed.
	ReadOnly bool
	// Salvage (with ReadOnly) opens a damaged database anyway, leaving out
	// what is damaged (Damage lists it); without it, damage is an error
	// (*DamageError).
	Salvage bool
	// Log receives badger's errors and warnings, one a line, prefixed with
	// the database (nil: standard error).
	Log io.Writer
	// ViewDir is where read-only opens make their views (default: the
	// system's temporary directory). Badger syncs a view's directory as it
	// opens it: a memory file system makes that free. A view holds links,
	// a copy of the MANIFEST and of the logs' committed part — and, of a
	// database being recorded, a copy of its tables: their size, in
	// ViewDir, for as long as the view is open (view.go says why).
	ViewDir string
}

func badgerOptions(dir string, readOnly bool, log *badgerLog) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(log).
		WithReadOnly(readOnly).
		WithMetricsEnabled(false).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithMemTableSize(memTableSize).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithValueLogFileSize(64 << 20).
		WithVerifyValueChecksum(true).
		WithNumCompactors(2)
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
	if _, err := os.Stat(filepath.Join(dir, badger.ManifestFilename)); err != nil {
		return nil, fmt.Errorf("database %s is %w: its MANIFEST is missing", dir, ErrCorrupt)
	}
	log := newBadgerLog(dir, opts.Log)
	if opts.ReadOnly {
		return openRead(dir, opts, log)
	}
	// Opening for writing truncates the logs at their last complete
	// transaction: first make sure that loses nothing but what a killed
	// writer left half-written.
	probe, err := openRead(dir, Options{ReadOnly: true, Log: io.Discard, ViewDir: opts.ViewDir}, log)
	if err != nil {
		return nil, err
	}
	probe.Close()
	bdb, err := openBadger(dir, badgerOptions(dir, false, log))
	if err != nil {
		return nil, err
	}
	d := &DB{dir: dir, bdb: bdb, byName: map[string]*relMeta{}}
	if err := d.load(false); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	return d, nil
}

// openRead opens a database read-only, through a view.
func openRead(dir string, opts Options, log *badgerLog) (*DB, error) {
	bdb, v, dmg, err := openView(dir, opts.ViewDir, opts.Salvage, log)
	if err != nil {
		var de *DamageError
		if errors.As(err, &de) {
			// Name what the damage costs: salvage, and assess.
			if s, serr := Open(dir, Options{ReadOnly: true, Salvage: true, Log: io.Discard, ViewDir: opts.ViewDir}); serr == nil {
				de.Damage = s.Damage()
				s.Close()
			}
		}
		return nil, err
	}
	d := &DB{dir: dir, bdb: bdb, readOnly: true, byName: map[string]*relMeta{}, view: v, damage: dmg}
	if err := d.load(opts.Salvage); err != nil {
		d.Close()
		if len(dmg) > 0 {
			// What was left out held the database's description.
			return nil, damaged(dir, append(dmg, Damage{Detail: fmt.Sprintf("without it: %v: nothing can be read", err)}))
		}
		return nil, fmt.Errorf("database %s: %w", dir, err)
	}
	if opts.Salvage && len(d.damage) > 0 {
		d.damage = d.assess(d.damage)
	}
	return d, nil
}

// writerAlive reports a database a writer holds, as badger's LOCK file
// (the writer's process id, removed when it closes) says, without taking
// the lock: a reader must never make a writer's open fail. A process id
// reused since a writer was killed makes this true wrongly, which costs a
// reader only patience (see openView).
func writerAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "LOCK"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func inUse(dir string) error {
	return fmt.Errorf("database %s is %w: another process has it open for writing (a recording still running?)", dir, ErrInUse)
}

// openBadger opens a badger database, making its panics errors (badger
// reports some damage by panicking in the opening goroutine).
func openBadger(dir string, opts badger.Options) (bdb *badger.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			bdb, err = nil, fmt.Errorf("database %s is %w: %v", dir, ErrCorrupt, firstLine(fmt.Sprint(r)))
		}
	}()
	bdb, err = badger.Open(opts)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, inUse(dir)
		}
		return nil, fmt.Errorf("database %s is %w: %v", dir, ErrCorrupt, err)
	}
	return bdb, nil
}

// Live reports a database opened read-only while a writer had it: it holds
// what the writer had committed when it was opened (its Window says up to
// when that is complete).
func (d *DB) Live() bool { return d.view != nil && d.view.live }

// Damage lists what a salvaging open left out, and what that costs.
func (d *DB) Damage() []Damage { return d.damage }

// Damage is one damaged part of a database and what it costs.
type Damage struct {
	// File is the damaged file, relative to the database ("" for a
	// record found damaged inside badger's files).
	File string
	// Rel is the relation it costs ("": every relation, or unknown).
	Rel string
	// Detail says what is wrong.
	Detail string
	// Lost is the span of Rel's history lost or in doubt (nil: unknown).
	Lost *algebra.Window

	walLoss bool      // a log cut short: what came after its last intact commit is lost
	keys    [2][]byte // a damaged table's first and last keys, when its index reads
}

func (d Damage) String() string {
	var b strings.Builder
	if d.File != "" {
		b.WriteString(d.File + ": ")
	}
	if d.Rel != "" {
		b.WriteString(d.Rel + ": ")
	}
	b.WriteString(d.Detail)
	if d.Lost != nil && !d.walLoss {
		fmt.Fprintf(&b, " (lost: %s to %s)", spanTime(d.Lost.From), spanTime(d.Lost.To))
	}
	return b.String()
}

// spanTime prints a time of a damaged span: wall-clock times as RFC 3339,
// others (small times of tests and examples) as a clock.
func spanTime(t algebra.Time) string { return algebra.FormatTime(t, algebra.TimeAuto) }

// DamageError is a damaged database's refusal to open (it is ErrCorrupt).
type DamageError struct {
	Dir    string
	Damage []Damage
}

func damaged(dir string, dmg []Damage) error {
	return &DamageError{Dir: dir, Damage: dmg}
}

func (e *DamageError) Error() string {
	var parts []string
	for _, d := range e.Damage {
		parts = append(parts, d.String())
	}
	return fmt.Sprintf("database %s is damaged: %s (tqmon db check lists the damage; tqmon db repair copies out what is intact)",
		e.Dir, strings.Join(parts, "; "))
}

func (e *DamageError) Unwrap() error { return ErrCorrupt }

// badgerLog is badger's logger: its errors and warnings go to a writer
// (standard error unless Options.Log says), prefixed with the database;
// its information and debugging messages are dropped. While a view is
// being opened, messages are held, and dropped when that attempt fails
// (the failure itself is reported).
type badgerLog struct {
	mu      sync.Mutex
	w       io.Writer
	dir     string
	holding bool
	held    []string
}

func newBadgerLog(dir string, w io.Writer) *badgerLog {
	if w == nil {
		w = os.Stderr
	}
	return &badgerLog{w: w, dir: dir}
}

func (l *badgerLog) printf(level, format string, args ...any) {
	msg := fmt.Sprintf("tqmon: database %s: badger %s: %s", l.dir, level, strings.TrimSpace(fmt.Sprintf(format, args...)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holding {
		l.held = append(l.held, msg)
		return
	}
	fmt.Fprintln(l.w, msg)
}

func (l *badgerLog) hold() {
	l.mu.Lock()
	l.holding, l.held = true, nil
	l.mu.Unlock()
}

// release stops holding messages, printing those held when keep.
func (l *badgerLog) release(keep bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if keep {
		for _, m := range l.held {
			fmt.Fprintln(l.w, m)
		}
	}
	l.holding, l.held = false, nil
}

func (l *badgerLog) Errorf(f string, a ...any)   { l.printf("error", f, a...) }
func (l *badgerLog) Warningf(f string, a ...any) { l.printf("warning", f, a...) }
func (l *badgerLog) Infof(string, ...any)        {}
func (l *badgerLog) Debugf(string, ...any)       {}
