// Package histgen owns synthetic histories: small random ones over any
// catalog, for the differential tests that hold the incremental interpreter
// to the reference evaluator, and large ones for benchmarks.
package histgen
