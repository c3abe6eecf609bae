// Package query compiles TQuel text into programs and runs them where
// nothing is remote: Compile parses every source, checks them in one
// session (range declarations and derived relations carry from one to the
// next) and translates each retrieve into its initial algebra; Rewritten
// adds the α operators and rewrites the plans; RunHistory and RunAcquire
// build the interpreter's network and run it over a recorded history
// (acquisitionally: only the packets enabled sensors would deliver).
// Live runs against residents are package remote's (remote.RunLive);
// runs over a database are package replay's.
//
// A program runs within a memory budget when given one (WithBudget): Watch
// is the watchdog that measures the heap for it, DefaultMaxMemory the
// budget commands default to, ParseBytes reads sizes such as 512MiB.
package query
