// Package history reads and writes recorded histories on disk in the CSV
// format of docs/sdl.md: a directory with one sensor-description (.sdl) file and
// one <Relation>.csv per relation. Reading checks everything — header,
// column count, every value against its attribute's type, every time, that
// intervals are not empty, that an entity relation gives each entity one
// state at a time (no two of its rows overlap; the later row is the error,
// naming the other's place) — and reports each problem as file:line:col.
//
// Open reads a directory's sensor description and observation.csv and
// checks its files, reading no relation's file; Dir.Load reads the
// relations named into tables (Load: all of them), and Dir.Source streams
// the relations named in time order — each file read as the stream
// reaches it, so what is held is one record per file and the tuples open
// at the current time, not the history. Each file is read ahead on a
// goroutine of its own, in batches, at most a few thousand tuples ahead
// (batchRows, readAhead), so that reading and the network use the
// machine's cores at once; Close stops the reading. Relation files are expected in
// time order of their starts (from, or at), as Write writes them; a file
// that is not makes the stream fail with an UnsortedError, and the caller
// opens it again with that relation loaded and sorted (subject does, and
// starts its run again). Dir.Extent reads only the files' times.
//
// Files are read through a streaming CSV reader that reads what
// encoding/csv reads, with the same errors at the same places, without
// holding more than a record: a line longer than MaxLine, or a record
// longer than MaxRecord, is an error before it is held. Fields are slices
// of its buffer; integers and times in integer nanoseconds, clock notation
// and RFC 3339 (UTC) are read from the bytes without encoding/csv or
// time.Parse (other notations go to algebra.ParseTime), and short strings
// (entity identifiers, names) are interned, so tuples share one copy.
// Rows whose attribute fields repeat a row read before share its values
// (vectors): a loaded history of the paper's system holds about 1.2× its
// CSV's bytes (TestLoadMemoryBound asserts at most 2×); a row whose values
// are its own holds 40 bytes and 32 a value, as before. A stream holds
// what is open, however long the history (TestSourceHoldsOpenTuples).
// Only regular files are read; the diagnostics about text that may not be
// a history at all do not echo it.
package history
