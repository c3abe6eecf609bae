// Package testkit holds the helpers that the tests of several packages
// share: finding the repository and its testdata, compiling sensor
// descriptions into catalogs, parsing and checking queries, reading the
// query corpora under testdata, and printing results and diagnostics in
// the forms the tests compare.
//
// Every helper that can fail takes a testing.TB and stops the test on
// failure, so a test reads as what it checks.
//
// The package imports the grammar, the sensor compiler and the checker, so
// only tests that can import those use it: the internal tests of sensor and
// algebra/check cannot (an import cycle), and theirs are external tests.
// It is internal, for the tests of this module only.
package testkit
