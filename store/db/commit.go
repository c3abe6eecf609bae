package db

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	badger "github.com/dgraph-io/badger/v4"
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
		if err := w.apply(c); err != nil {
			w.mu.Lock()
			if w.err == nil {
				w.err = fmt.Errorf("database %s: %w", w.d.dir, err)
			}
			w.mu.Unlock()
			continue
		}
		if w.opts.OnCommit != nil {
			w.opts.OnCommit(c.info)
		}
	}
}

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
