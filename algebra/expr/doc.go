// Package expr owns tqmon's typed expressions, bound to the range variables
// of one retrieve: value expressions (Expr: constants, attribute references,
// arithmetic, comparisons, logic), temporal expressions (TExpr: a variable's
// valid time, constants, begin of, end of, overlap, extend), temporal
// predicates (Pred: precede, overlap, equal, and, or, not) and the valid
// clause (Valid). It also holds the value semantics shared by every
// evaluator: arithmetic and comparison of values (Arith, CompareOp), a tree
// walking evaluator (Eval) and a compiler to closures (Compile). A runtime
// error of arithmetic (division by zero) is a source.Error at the operator,
// in the text the checker found it in (Binary.Src).
//
// The semantics of temporal expressions on exact times is implemented twice
// on purpose, independently: in the reference evaluator (algebra/ref) and,
// over bounds on unknown interval ends, in the interpreter (algebra/exec).
package expr
