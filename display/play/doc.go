// Package play owns time for recorded data: Player plays a time-ordered
// source of elements (a recorded history, a store's replay) into an update
// network at a chosen speed, against an injectable real-time Clock, with
// pause, faster and slower, step and seek; HistorySource turns a recorded
// history into such a source.
//
// A Player is an exec.Source: run it with Network.RunSource. It releases
// an element once the play position (subject time) has reached the
// element's time, and while it waits it hands out heartbeats — elements of
// no relation, which RunSource reads as the passing of time — so that the
// network's results up to the play position come out without waiting for
// the next element.
package play
