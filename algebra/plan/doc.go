// Package plan owns the logical temporal relational algebra: the operators
// (scan of a recorded or derived relation, Clock[n], the unit relation, ×,
// ⋈, σ, σT, πT, π, ∩/∪ over entity relations, γ and apply for aggregates,
// and α for a sensed relation, with the entity relations and clocks it
// takes as arguments), the translation of a checked TQuel retrieve into an
// expression over them — as in the paper, the product of the variables'
// relations, σ of where, σT of when, πT of valid, π of the target list —
// and the α operators replacing sensed relations (WithAlphas), the printers
// (one line and tree), structural equality (Equal), and what a plan reads
// from storage (ReadsOf).
//
// Plans are plain data: the rewriter transforms them (Map, WithChildren),
// the interpreter (algebra/exec) compiles them into an update network.
package plan
