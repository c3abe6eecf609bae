// Package front is the grammar-independent part of the ANTLR front ends
// grammar/tquel, grammar/sdl and grammar/display. It owns:
//
//   - the parse harness (Parse): lexer and parser wiring, the token
//     filter, the nesting bound, recovery of panics and of the error cap;
//   - diagnostics (Diag): collecting, sorting and capping them at
//     MaxErrors, then "too many errors", and token positions (TokPos);
//     each diagnostic carries the parsed text (a source.File), which the
//     syntax tree keeps too (Input.Src);
//   - syntax error messages: the ANTLR error listener that turns syntax
//     errors into "unexpected X, expected Y" and renders expected-token
//     sets (Syntax, Expected);
//   - error recovery that keeps keywords usable as names from being
//     misread (Recovery);
//   - the literal syntax the languages share: numbers, durations and
//     strings (CheckNumber, ParseDuration, Unquote, Quote).
//
// Each front end describes itself in a Language: its generated lexer and
// parser, its token types, what may follow a statement, how its tokens are
// named in messages, and how its parse tree becomes its syntax tree. The
// grammars, syntax trees, converters and printers stay in the front ends;
// ANTLR types never leave them or this package.
package front
