// Package ui owns the screen of the animated display as a whole, apart
// from any terminal: the header (title and digital clock), the scene or
// the timeline view, the status line (play state, speed, messages, icons
// out of view above and below, or that did not fit), the help overlay,
// and what each key does. The terminal (display/term) turns tcell events
// into Keys and draws a Model through a draw.Canvas; tests draw it on a
// tcell simulation screen or a draw.Grid.
package ui
