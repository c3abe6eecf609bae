// Package histgen owns synthetic histories: small random ones over any
// catalog, for the differential tests that hold the incremental interpreter
// to the reference evaluator (with Config.Edges, also across the epoch and
// at both ends of the time line), and large ones for benchmarks.
package histgen
