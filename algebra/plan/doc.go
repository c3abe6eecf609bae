// Package plan owns the logical temporal relational algebra: the operators
// (scan of a recorded or derived relation, Clock[n], the unit relation, ×,
// ⋈, σ, σT, πT, π, and ∩/∪ over entity relations), the translation of a
// checked TQuel retrieve into an expression over them — as in the paper, the
// product of the variables' relations, σ of where, σT of when, πT of valid, π
// of the target list — and the printers (one line and tree).
//
// Plans are plain data: the rewriter transforms them, the interpreter
// (algebra/exec) compiles them into an update network.
package plan
