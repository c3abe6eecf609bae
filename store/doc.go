// Package store owns historical storage. Sub-packages: history reads and
// writes recorded histories in the CSV format of docs/sdl.md; truth records a
// live subject's complete ground truth; db is the badger-backed database
// (key schema, blocks, checkpoints, windowed time-ordered reads, import and
// export); record records live residents and query results into it; replay
// evaluates queries over it and plays it back at any speed.
package store
