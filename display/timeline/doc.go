// Package timeline owns the timeline view: time running horizontally, one
// row per entity (the icons of the spec's icon relations) or per tuple of a
// chosen relation, intervals as bars (shaded and coloured as the spec
// says), events as ticks, with zoom and scroll — the view that shows
// durations, where the animation shows states. It reads the tuples the
// scene stores (scene.Relation), open and recently closed.
package timeline
