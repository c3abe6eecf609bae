// Package record records live subjects into a database: Live runs one
// plain retrieve per chosen relation against residents (so they enable
// exactly those sensors) and writes what the remote monitor's tap sees,
// as the ground truth would have it; Derived writes a program's results
// as they are produced. Both work over any []wire.Conn — Go residents,
// kernel residents — so every way of reaching a subject records the same
// way.
package record
