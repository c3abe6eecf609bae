// Package testkit holds the helpers that the tests of several packages
// share: finding the repository and its testdata, compiling sensor
// descriptions into catalogs, parsing and checking queries, reading the
// query corpora under testdata, and printing results and diagnostics in
// the forms the tests compare.
//
// Every helper that can fail takes a testing.TB and stops the test on
// failure, so a test reads as what it checks.
//
// The package imports the grammars, algebra, the checker and the sensor
// compiler, so a test of one of those packages uses it only from the
// external test package (package sensor_test, not package sensor): an
// internal test would make an import cycle. For the same reason it loads
// no histories (store/history's tests use it).
package testkit
