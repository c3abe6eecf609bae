// Package history reads and writes recorded histories on disk in the CSV
// format of docs/sdl.md: a directory with one sensor-description (.sdl) file and
// one <Relation>.csv per relation. Reading checks everything — header,
// column count, every value against its attribute's type, every time, that
// intervals are not empty — and reports each problem as file:line:col.
package history
