// Package replay evaluates TQuel over a database and plays stored
// relations back in time order. Plan rewrites a program's plans with the
// scan rules (temporal selections become time windows, so a timeslice
// reads only the blocks it needs); Run reads each relation through its
// window into the same update network live monitoring uses, optionally
// paced by a Player: a time-ordered exec.Source that delivers elements no
// sooner than their recorded time at a chosen speed, with pause, step,
// speed changes and stop, and an injectable clock — a display can be fed
// from it exactly as from a live run. Player.Key maps an interactive
// replay's keys onto those controls; Controls steers the player of a run
// from other goroutines (keys, a progress bar).
package replay
