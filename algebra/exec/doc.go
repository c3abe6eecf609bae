// Package exec is tqmon's incremental interpreter: an update network of
// push-based operators exchanging delta streams.
//
// A stream carries Begin(rec) when a tuple's valid time begins, End(rec) when
// it ends, Event(rec) for an event tuple, and Advance(t): the promise that no
// element with a time ≤ t will follow. Elements of one stream come in order
// of time, and at equal times every End comes before any Begin or Event (an
// interval [b, t) ends before [t, e) begins).
//
// The operators:
//
//   - Join (join.go) evaluates one select-project-join block of a retrieve:
//     it keeps the tuples of its k inputs that can still take part in a
//     result, forms each binding once (when its last tuple arrives), filters
//     it with the where clause, and decides the when and valid clauses on
//     bounds of the interval ends still unknown (bounds.go). A decision that
//     depends on the future is held until an End or the passing of time
//     settles it; results go out in time order behind an output watermark.
//   - Coalesce (coalesce.go) makes a result a set: value-equivalent intervals
//     that overlap or meet are merged and equal events at a chronon are one.
//   - SetOp (setops.go) is ∩ and ∪ over entity relations.
//   - Collector (collect.go) materialises a result.
//
// Network (network.go) compiles plans into operators and RunHistory
// (history.go) plays a recorded history into them in time order, exactly as
// live packets will later arrive.
package exec
