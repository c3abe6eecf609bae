// Package term runs a display in a terminal through tcell: it owns the
// screen's life (the terminal is restored however the display ends — a
// key, the context, an error from the goroutines feeding it, or a panic),
// the frame loop (deltas applied, then a frame drawn, 30 times a second),
// resizing, and the mapping of tcell's keys onto the display's commands.
// Canvas adapts a tcell.Screen to draw.Canvas; Dump renders a tcell
// simulation screen as text for golden files.
package term
