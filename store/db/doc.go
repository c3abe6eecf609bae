// Package db is tqmon's historical store: primitive and derived relations
// recorded in a badger database, read back as time-ordered element streams
// (whole, or through time windows that touch only the blocks they need),
// exported to and imported from CSV histories.
//
// The key schema is in schema.go and the value encodings in codec.go; a
// database is self-describing (it keeps the SDL text of its relations) and
// carries its format version, checked on Open. Writer (writer.go) records
// elements in time order — intervals when they begin and when they end —
// packing many per block; Source (scan.go) is an exec.Source over any set
// of relations, each read whole or through a window.
package db
