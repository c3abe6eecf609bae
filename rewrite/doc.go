// Package rewrite owns the rule-based rewriter: it turns the initial algebra
// of a retrieve (the paper's translation, with an α operator for every
// sensed relation and entity sources as α arguments) into an equivalent plan
// that enables as few sensors as possible.
//
// Rules are data (Rule: a name, a class, the rule sets it belongs to, a
// prose justification and a function), one file per class. A rule matches
// one operator: its function takes that plan node type, and the driver
// calls it only at nodes of that type. One table lists every rule; the
// rule sets are selections of it — Live (Rules, Rewrite: plans with α
// operators) and Stored (StoredRules, RewriteStored: plans over stored
// relations, where the scan class narrows what is read). A set applies
// class by class in the paper's order — traditional, α, entity sources,
// clock, operator variants, then scans — each class repeatedly until no
// rule of it changes the plan, and the whole sequence again until a round
// changes nothing. Whether a rule changed the plan is decided by
// structural equality (plan.Equal), not from what the rule reports. Every
// application is recorded for --explain.
//
// Every rule is exact: the rewritten plan, executed acquisitionally (only
// enabled sensors deliver packets), gives the same result as the naive
// evaluation over the complete history. The differential tests in
// algebra/exec and here arbitrate. Rules rely on two properties of subject
// systems, stated once here: referential integrity (a tuple that names an
// entity lies within that entity's lifetime) and the delivery model of
// algebra/exec's acquisitional driver (an event is delivered when its flag
// holder is enabled at its instant; an interval's begin when enabled at its
// first chronon, its end when enabled at its last chronon or when its begin
// was delivered; a traced-then-disabled interval once, whole, at its end; a
// sampled relation's tuples valid at each sampling instant of an enabled
// flag holder).
package rewrite
