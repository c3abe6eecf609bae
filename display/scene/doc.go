// Package scene owns the animated picture of a display spec: a model of
// the displayed relations' tuples, updated from the Begin/End/Event deltas
// of the update network, laid out to a size and drawn at an instant.
//
// It keeps the paper's three kinds of aspects apart so that only what
// changed is recomputed:
//
//   - fixed aspects come from the spec (shape, side, which icons a
//     relationship joins) and are set up once per spec;
//   - attribute-dependent aspects (label, shade, colour, order) are
//     computed when a tuple begins or ends, for that icon only; a change
//     that moves icons (a new entity, an icon that goes, a longer label, a
//     new order, a box that must hold more) marks the layout stale, and
//     only then is the layout recomputed (also on resize);
//   - time-dependent aspects (the fading of past states under
//     animationtrace, events shown for the decay, flashing) are computed
//     when a frame is drawn, from the times the model recorded.
//
// Icons that do not fit the area are scrolled to rather than hidden: the
// layout may be taller than the area (columns the width cannot wrap any
// further grow instead), ScrollRows moves the view over it without a new
// layout, and a frame draws and routes only what is in view, arrows to
// icons out of view running to its edge.
//
// Relation is the store of one relation's tuples (open ones and a bounded
// history, which the timeline view reads); feeds push deltas into it and it
// passes them to the spec's views over that relation. SetSpec replaces the
// spec while running, rebuilding the views from the stored tuples.
package scene
