// Package db is tqmon's historical store: primitive and derived relations
// recorded in a badger database, read back as time-ordered element streams
// (whole, or through time windows that touch only the blocks they need),
// exported to and imported from CSV histories.
//
// The key schema is in schema.go and the value encodings in codec.go; a
// database is self-describing (it keeps the SDL text of its relations) and
// carries its format version, checked on Open. Writer (writer.go) records
// elements in time order — intervals when they begin and when they end —
// packing many per block; Source (scan.go) is an stream.Source over any set
// of relations, each read whole or through a window, or (chunks.go) one
// relation's tuples whole, with their ends, in chunks.
//
// Reading never writes. Open with ReadOnly reads through a view (view.go):
// a private directory of links to the database's tables and copies of its
// MANIFEST and write-ahead logs, which badger opens read-only. Nothing in
// the database's directory is written, truncated, compacted or locked, so
// a database may be read while it is being recorded (Live: what the writer
// had committed, its Window saying up to when that is complete), and a
// database whose writer was killed reads back everything it committed,
// intervals then in progress as open. Badger reads tables through memory
// maps, and a writer compacting a database deletes the tables it replaced
// by truncating them: so a view of a live database copies its tables (the
// cost: their size in the view's directory while it is open), and a view
// of a database no writer held links to them — should a writer start and
// compact it meanwhile, a reader meeting a table so deleted gets
// ErrChanged (memory faults are errors while reading), and should read
// again.
//
// Damage is reported, never hidden nor "recovered". Every badger table is
// validated (index and block checksums) before badger opens it, and every
// write-ahead log's tail is examined: a table that does not validate, or a
// log with data after an entry whose checksum fails (or cut shorter than
// badger makes them), makes Open fail with a *DamageError (ErrCorrupt)
// naming the files and, per relation, the span of history lost. What stays
// readable: with Options.Salvage a read-only Open leaves the damaged
// tables and the rest of a damaged log out and reads everything else;
// records are checked as they are read (CRC per value), and a block that
// fails is an error naming the database, the relation and the span the
// block holds — other relations, and windows not reaching that block, read
// as before. Check (check.go) verifies every table, log and record;
// Repair copies what is intact into a new database and reports the spans
// lost. Badger's own warnings and errors go to Options.Log.
//
// Writing stops cleanly before the disk is full. Badger writes through
// memory-mapped files, where a full file system is a fault (SIGBUS), not
// an error; so before each commit a writer checks the space left (statfs)
// against the commit and DiskReserve, what badger may write before the
// next one, and stops with ErrDiskFull when it falls short. Any error
// writing ends the writer the same way: what was committed before stays,
// and the database reads in place.
package db
