// Package check owns the semantic analysis of TQuel: it resolves range
// variables, relations (primitive, derived and Clock[n]) and attributes,
// types every value expression (entity types, enums, numbers, strings, times,
// durations; bare names and quoted literals take the type of what they are
// compared with), gives every temporal expression its kind (event or
// interval), supplies the default when and valid clauses of TQUEL.md, and
// makes `retrieve [into] NAME` results available to later statements.
//
// A Session carries range declarations and derived relations from one file
// (or shell statement) to the next. Every error is positioned, and a run
// reports as many as it can find.
package check
