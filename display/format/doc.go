// Package format owns the text forms of result relations: aligned tables
// for people, CSV and JSON Lines for programs, with times printed as clock
// offsets, RFC 3339 or nanoseconds.
package format
