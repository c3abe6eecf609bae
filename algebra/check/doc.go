// Package check owns the semantic analysis of TQuel: it resolves range
// variables, relations (primitive, derived and Clock[n]) and attributes,
// types every value expression (entity types, enums, numbers, strings, times,
// durations; bare names and quoted literals take the type of what they are
// compared with), gives every temporal expression its kind (event or
// interval), supplies the default when and valid clauses of docs/tquel.md, and
// makes `retrieve [into] NAME` results available to later statements.
//
// A Session carries range declarations and derived relations from one file
// (or shell statement) to the next. Every error is positioned in the
// checked file's text (so it shows its own line), and a run reports as many
// as it can find; errors.go lists every message. Arithmetic in a checked
// expression carries its text too (expr.Binary.Src), so a runtime error
// there names the file it was written in.
package check
