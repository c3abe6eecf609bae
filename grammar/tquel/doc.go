// Package tquel is the front end of TQuel, tqmon's query language (see
// docs/tquel.md): it owns the grammar (TQuel.g4, with the ANTLR parser generated
// into the gen subpackage by grammar/generate.sh), the syntax tree (ast.go),
// Parse, which turns text into a File or into positioned diagnostics, and
// the canonical printers FormatExpr, FormatStmt, FormatTarget and
// FormatFile.
//
// Parse checks syntax only, plus the rules that need no catalog: each
// clause at most once, Var.all only as a whole target, value operators only
// in value contexts (target list, where, aggregate argument, by and where)
// and temporal ones only in temporal contexts (when, valid, as of,
// aggregate when), comparisons not chained, integer indexes, well-formed
// literals. Names, types, relation classes and whether a temporal
// expression is used where a predicate is needed are the semantic checker's
// business.
//
// # Expressions
//
// One precedence-climbing grammar rule covers value expressions, temporal
// expressions and predicates; the context decides which AST nodes an
// operator becomes (see the comment on Expr). Binding, loosest first:
//
//	or                                  left-associative
//	and                                 left-associative
//	not X                               prefix
//	= != <> < <= > >= precede equal      non-associative: a = b = c is an error
//	overlap extend                      left-associative
//	+ -                                 left-associative
//	* / %                               left-associative
//	-X                                  prefix
//	begin of X, end of X                prefix
//
// So `a precede b overlap c` is `a precede (b overlap c)`, `a overlap b
// overlap c` is `(a overlap b) overlap c`, `end of w - begin of w` is
// `(end of w) - (begin of w)` and `not a = b` is `not (a = b)`. A prefix
// operator takes as operand everything up to the first infix operator
// looser than itself: `a * not b = c` is `a * (not (b = c))`.
//
// # Lexical rules
//
// Keywords (and aggregate names) are case-insensitive, names
// case-sensitive. Most keywords may also serve as names where that is
// unambiguous (see TQuel.g4). Strings are double-quoted with the escapes
// \" \\ \n \t \r; numbers are 12, 1.5 or 1e-3; durations are number-unit
// groups such as 10s, 5ms, 250us (or µs), 7ns, 2m, 1h30m, 1.5s, exact to the
// nanosecond; $name is a parameter. Comments run from -- to the end of the
// line, so `a--b` is `a` followed by a comment: write `a - -b`.
//
// # Diagnostics
//
// Errors are a source.ErrorList sorted by position, each
// "file:line:col: message" with 1-based line and rune column, at most 20
// then "too many errors"; each carries the text, so it shows its own line.
// A parsed File keeps its text too (File.Src), and File.StmtText cuts a
// statement's text out of it by position. Typical messages:
//
//	q.tq:1:15: unexpected '+', expected one of: ')', ','
//	q.tq:3:7: unexpected end of input, expected an expression
//	q.tq:5:1: duplicate where clause (first at 3:1)
//	q.tq:2:6: 'p.State' is not allowed in a temporal expression; use a range variable, a quoted time, begin of or end of
package tquel
