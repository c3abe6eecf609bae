// Package subject opens what tqmon monitors, one way for every command:
// Open takes Options naming one subject — a recorded history directory,
// a database, a Parquet recording, live resident monitors (several, by
// address or as the hosts of a NATS fleet), the paper's demo system run
// in this process, or this machine's Linux kernel — and returns a
// Subject. A Subject has a catalog and a sensor description, says what
// "now" is and whether it is live, runs compiled programs (package query)
// over itself — whole tables from a recording, result elements streamed
// as produced from a live subject — explains their plans, reports what a
// run cost, and closes.
//
// A history directory is read as it is used: a query streams only the
// relations it reads from their files (history.Dir.Source), "now" and
// Clock ticks take the span from observation.csv or else from the files'
// times, and what needs the whole history (acquisitional runs, explain,
// the display) loads it once.
//
// Live subjects share one session primitive (a subject's residents, and
// the callback that starts a paused subject once they know what to
// enable); recording (Record, Results) and the animated display (Show)
// use it as queries do. Dial is the one place residents are dialled,
// their hellos checked and their description compiled into a catalog.
//
// Options.MaxMemory gives every run over a subject a memory budget: Open
// wraps the subject so that each Run makes one, watches the heap for it
// (query.Watch) and runs the program within it.
package subject
