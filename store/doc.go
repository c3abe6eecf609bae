// Package store owns historical storage. Sub-packages: history reads and
// writes recorded histories in the CSV format of docs/sdl.md; truth records a
// live subject's complete ground truth; db is the badger-backed database
// (key schema, blocks, checkpoints, windowed time-ordered reads, import and
// export); parquet keeps the same streams as Parquet files partitioned
// by relation, host and hour, read through the same time windows; journal
// carries a recording through a JetStream stream so that its writer
// resumes after a kill; record records live residents and query results
// into either store; replay evaluates queries over a database and plays
// it back at any speed.
package store
