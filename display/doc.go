// Package display owns what results look like. Sub-package format writes
// result relations as aligned tables, CSV or JSON Lines. The animated
// terminal display is the other sub-packages: spec (display specs checked
// against the relations), scene (the model drawn from result deltas),
// timeline (the timeline view), draw (the canvas interface and drawing
// primitives), ui (the screen as a whole and its keys), play (pacing
// recorded data), term (tcell), show (wiring a spec to a run: display
// feeds, History and Live), defaults (the paper's spec and query, embedded).
package display
