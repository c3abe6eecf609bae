// Package record records live subjects into a database: Live runs one
// plain retrieve per chosen relation against residents (so they enable
// exactly those sensors) and writes what the remote monitor's tap sees,
// as the ground truth would have it. Both Live and Derived — which writes
// a program's results as they are produced, or whole — work over any
// []wire.Conn or run (Go residents, kernel residents, recordings), so
// every way of reaching a subject records the same way. ResultDB opens
// (or creates) the database results go into (tqmon query --record, the
// shell's \record).
package record
