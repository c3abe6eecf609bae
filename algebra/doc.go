// Package algebra owns tqmon's data model and its temporal relational
// algebra: time (int64 nanoseconds, half-open intervals, Beginning and
// Forever), values and types, relation schemas and the catalog, recorded
// histories as tables of tuples with valid time.
//
// Sub-packages hold the rest of the algebra:
//
//   - expr: typed value expressions, temporal expressions and predicates,
//     bound to range variables;
//   - check: semantic analysis of TQuel (name resolution, types, temporal
//     kinds, default clauses) producing checked statements;
//   - plan: the logical operators (scan, Clock, ×, ⋈, σ, σT, πT, π, ∩, ∪),
//     the TQuel→algebra translation and the plan printers;
//   - exec: the incremental interpreter: push-based operators over delta
//     streams (Begin, End, Event, Advance) and the history driver;
//   - ref: a deliberately simple batch evaluator of the tuple-calculus
//     semantics, used only as a test oracle.
//
// Nothing here reads the clock or imports terminal, storage, eBPF or RPC
// packages.
package algebra
