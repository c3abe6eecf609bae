// Package store owns historical storage. Sub-package history reads and
// writes recorded histories in the CSV format of SDL.md; badger-backed
// recording, time-slice scans and replay will live here too.
package store
