// Package sdl is the front end of the sensor-description language (see
// docs/sdl.md): it owns the grammar (SDL.g4, with the ANTLR parser generated into
// the gen subpackage by grammar/generate.sh), the syntax tree (ast.go),
// Parse, which turns a spec into a File or into positioned diagnostics, and
// the canonical printers FormatStmt and FormatFile.
//
// Parse checks syntax and literal values only (counters are positive
// integers, clock periods positive durations); whether names resolve,
// types exist and strategies fit their relations is for the spec checker.
//
// Keywords are case-insensitive, names case-sensitive, and every keyword
// may be used as a name (entity types, relations, attributes, enum members,
// and types other than `enum`). Comments run from -- or // to the end of
// the line; ';' may end a statement. Durations are written as in TQuel
// (10ms, 1h30m, 1.5s).
//
// Errors are a source.ErrorList sorted by position, each
// "file:line:col: message" with 1-based line and rune column, at most 20
// then "too many errors", for example:
//
//	os.sdl:9:33: unexpected 'target', expected one of: 'then', 'on'
//	os.sdl:12:45: counter must be a positive integer, not '0'
//
// Binding statements (where a sensor lives: Go code, tracepoints, uprobes,
// procfs) will be further statement alternatives in SDL.g4, each starting
// with its own keyword, with AST nodes of their own.
package sdl
