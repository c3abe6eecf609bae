// Package export hands a run's results to the tools around a monitor: a
// Prometheus scrape endpoint (current tuples as gauges), an OpenTelemetry
// collector (intervals as spans, events as log records, over OTLP/gRPC)
// and a command run per tuple (an alert hook). A Set is fed by
// subject.Print, so every command that prints results (query, demo,
// replay) exports them alike; view (the display's queries), record (the
// recorded relations) and the shell (each statement) feed one too.
//
// None of them may slow the query down: each keeps a bounded state, stated
// where it is kept, and what does not fit — a label set past MaxSeries, an
// open tuple past MaxOpen, a span the exporter's queue has no room for, a
// command past the queue of ExecQueue — is dropped, counted, and reported
// on stderr when the run ends (Prometheus also serves the count). A slow
// scraper, collector or command delays only its own goroutine.
package export
