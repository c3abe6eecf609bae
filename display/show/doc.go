// Package show wires a display spec to a run of the monitor: Compile checks
// the spec against the catalog and the user's queries and adds, for each
// primitive relation the spec draws, a retrieve of that relation compiled
// with the user's queries — so its α operators enable exactly the sensors
// the display needs, and derived relations (`retrieve NAME`) are drawn from
// the queries' own results; Feed routes each statement's result deltas
// into a scene from whichever goroutine produces them.
//
// The entry points run a display in the terminal: History plays a
// time-ordered source of primitive elements (a recorded history, a store's
// replay) through the update network at a chosen speed (display/play),
// Live runs the program against resident monitors with the subject's
// clock. Both return once the user quits, the context ends or the run
// fails, with the terminal restored.
package show
