// Package play owns time for recorded data: Player plays a time-ordered
// source of elements (a recorded history, a store's replay) into an update
// network at a chosen speed or as fast as it is read, against an
// injectable real-time Clock (FakeClock for tests), with pause, resume,
// faster and slower, step, seek and stop; HistorySource turns a recorded
// history into such a source. The display and tqmon replay (through
// store/replay's Run) both play through it.
//
// A Player is a stream.Source: run it with the interpreter's RunSource.
// It releases an element once the play position (subject time) has
// reached the element's time, and while it waits it hands out heartbeats —
// elements of no relation, which RunSource reads as the passing of time —
// so that the network's results up to the play position come out without
// waiting for the next element. A display's player holds at its End; a
// replay's drains (Options.Drain): what lies beyond End comes at once and
// the run ends there.
package play
