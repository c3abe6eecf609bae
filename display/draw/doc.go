// Package draw owns the drawing surface of the display: Canvas, the small
// interface the scene and the timeline draw through (a tcell screen in the
// terminal, a text grid in tests), Style and Color (plain data, no tcell),
// and the primitives over a canvas: strings, boxes, lines and arrows,
// clipped to the canvas.
package draw
