package db

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/tqmon/tqmon/algebra"
)

// commit is one flush: keys to set, key ranges to delete, and what it
// makes durable.
type commit struct {
	sets  []kv
	drops []keyRange
	sync  bool
	info  CommitInfo
}

// setOrder writes blocks, then checkpoints, then ends, then states and the
// window: should a commit too big for one transaction be cut short, what
// is written points only at what was written before it.
func setOrder(k []byte) int {
	switch k[0] {
	case pBlock:
		return 0
	case pCheck:
		return 1
	case pEnds:
		return 2
	}
	return 3
}

func (w *Writer) commitLoop() {
	defer close(w.done)
	for c := range w.q {
		if w.bgErr() != nil {
			continue // drain; the error is reported by the next call
		}
		err := w.room(c)
		if err == nil {
			err = w.apply(c)
		}
		if err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = fmt.Errorf("database %s: %w", w.d.dir, err)
			}
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		w.through = c.info.Through
		w.mu.Unlock()
		if w.opts.OnCommit != nil {
			w.opts.OnCommit(c.info)
		}
	}
}

// DiskReserve is the space a writer keeps free beyond each commit (twice
// its size: badger's log, and perhaps its value log): what badger may
// write before the next commit — a full memtable flushed to a table, the
// flush when the database is closed, and a compaction of level 0 — each
// up to two memtables. Badger writes through memory-mapped files, where a
// full disk is a fault (SIGBUS), not an error: the writer stops first.
const DiskReserve = 4 * memTableSize

// room checks, before a commit, that the file system has the space it and
// the reserve need.
func (w *Writer) room(c *commit) error {
	free, ok := freeSpace(w.d.dir)
	if !ok {
		return nil // in memory, or unknown here: write errors end the writer
	}
	need := uint64(DiskReserve)
	for _, s := range c.sets {
		need += 2 * uint64(len(s.k)+len(s.v)+32)
	}
	if free >= need {
		return nil
	}
	w.mu.Lock()
	through := w.through
	w.mu.Unlock()
	kept := "nothing was committed yet"
	switch through {
	case algebra.Beginning:
	case algebra.Forever:
		kept = "everything committed before is kept"
	default:
		kept = "everything committed before, through " + algebra.FormatTime(through, algebra.TimeAuto) + ", is kept"
	}
	return fmt.Errorf("%w: %s free on its file system, and a writer keeps %s free for the storage library: the writer stopped; %s",
		ErrDiskFull, mib(free), mib(DiskReserve), kept)
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func (w *Writer) apply(c *commit) error {
	bdb := w.d.bdb
	slices.SortStableFunc(c.sets, func(a, b kv) int { return setOrder(a.k) - setOrder(b.k) })
	txn := bdb.NewTransaction(true)
	for _, s := range c.sets {
		err := txn.Set(s.k, s.v)
		if errors.Is(err, badger.ErrTxnTooBig) {
			if err := txn.Commit(); err != nil {
				return err
			}
			txn = bdb.NewTransaction(true)
			err = txn.Set(s.k, s.v)
		}
		if err != nil {
			txn.Discard()
			return err
		}
	}
	if err := txn.Commit(); err != nil {
		return err
	}
	for _, r := range c.drops {
		if err := deleteRange(bdb, r.from, r.to); err != nil {
			return err
		}
	}
	if c.sync {
		return bdb.Sync()
	}
	return nil
}

// deleteRange deletes the keys in [from, to).
func deleteRange(bdb *badger.DB, from, to []byte) error {
	var keys [][]byte
	err := bdb.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(from); it.Valid() && bytes.Compare(it.Item().Key(), to) < 0; it.Next() {
			keys = append(keys, it.Item().KeyCopy(nil))
		}
		return nil
	})
	if err != nil {
		return err
	}
	wb := bdb.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return err
		}
	}
	return wb.Flush()
}
