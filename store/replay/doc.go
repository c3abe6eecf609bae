// Package replay evaluates TQuel over a database and plays stored
// relations back in time order. Plan rewrites a program's plans with the
// scan rules (temporal selections become time windows, so a timeslice
// reads only the blocks it needs); Run reads each relation through its
// window into the same update network live monitoring uses, optionally
// paced by a play.Player (the display's paced player, draining the run's
// span) that may be paused, stepped, sped up, slowed down or stopped
// while the run goes on. An unpaced run whose statements are all σ/π over
// one relation reads it as chunks of whole tuples (db.Source.Chunk) into
// the columnar path (exec.Network.RunChunks), as query --history does. Controls steers the player of a run from other
// goroutines (keys, through play.Player's Key, and a progress bar).
package replay
