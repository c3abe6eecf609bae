// Package ref owns the reference evaluator: a deliberately simple batch
// evaluator of TQuel's tuple-calculus semantics (docs/tquel.md), used only as a
// test oracle for the incremental interpreter. For each retrieve it loops
// over every binding of the range variables, keeps those satisfying where
// and when, computes valid time and targets, and coalesces. It shares value
// arithmetic with the interpreter (package expr) but implements the temporal
// semantics on its own, straight from the tables of docs/tquel.md.
package ref
