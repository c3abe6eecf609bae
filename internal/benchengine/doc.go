// Command benchengine is `make bench-engine`: tqmon's query engine against
// DuckDB on the same recorded histories, whole command against whole
// command.
//
// # What it measures
//
// For each size (tuples in the history, all relations together; -sizes,
// make variable ENGINE_SIZES) it generates a history of the paper's system
// (testdata/paper/os.sdl: processors, processes, mailboxes, sends, runs,
// waits) with algebra/histgen — 3 processors, 8 processes, 8 mailboxes,
// each process sending to the two mailboxes after its own, as tqmon demo
// runs it — and writes it as a history directory (integer-nanosecond
// times) under -dir, where later runs find it again. Then, for each query,
// in rounds (-rounds), it runs one after the other, for each SQL
// formulation of the query:
//
//	tqmon query --history DIR -f QUERY.tq --format csv --time-format ns > out
//	node duck.mjs SCRIPT.sql
//
// Each formulation is compared with the tqmon run just before it, so that
// a long formulation (DuckDB's naive join of ResumedbyP1: minutes at 5M
// tuples) does not put minutes of a shared machine's changing load
// between two runs compared.
//
// SCRIPT.sql declares a view per relation over its CSV file (read_csv with
// the catalog's types; an open "to" reads as forever, 2⁶³−1) and COPYs the
// query's result to a CSV file. Both commands read the CSV files, run the
// query and write its result: start-up, loading, the query and output are
// all in the time, as a user meets them. DuckDB uses its default threads
// (every core); tqmon is the command as shipped.
//
// The queries (queries/, and the paper's own files in testdata/paper):
//
//   - P1's sends: σ and π over SendMessage.
//   - ResumedbyP1, the paper's question (testdata/paper/resumed_by_p1.tq),
//     against three SQL formulations: the naive join of every send with
//     every wait on its mailbox; a semi-join (EXISTS), which is what the
//     query means — S is in no target and no valid clause; and the
//     semi-join on a witness, P1's first send to each mailbox (DuckDB does
//     not find it from EXISTS, whose inequality makes it materialise the
//     join: 33 s and 10 GB at 1M tuples against 1 s). EXISTS is not run
//     above 2M tuples, where it would take the machine's memory; its line
//     says so.
//   - An overlap join with no key: who ran while each process waited,
//     intersections coalesced per pair.
//   - The paper's queue length (testdata/paper/queue_length.tq): a count by
//     mailbox at every instant, as maximal intervals.
//
// The SQL gives TQuel's meaning: intervals are [from, to), an event at t is
// [t, t+1), an open interval ends at forever, and results are sets —
// value-equivalent intervals that overlap or meet are coalesced (gaps and
// islands over window functions), equal events are one.
//
// Every run's result is checked against tqmon's first: the rows, sorted,
// with "forever" and an empty field (SQL's NULL) the same. A difference
// stops the benchmark; a benchmark whose answers differ measures nothing.
//
// # How to read it
//
// One line per query and SQL formulation: the medians over the rounds of
// wall time, the median CPU time (user+system; DuckDB's exceeds its wall
// time when it uses both cores), the peak resident set size of each
// command (the largest over the rounds, from getrusage of the child), the
// result rows, and tqmon/DuckDB — the ratio of wall-time medians: below 1
// tqmon is faster. cpu' is the ratio of CPU times with DuckDB's start-up
// taken from its own: DuckDB runs inside node, whose start with DuckDB
// loaded costs a fixed half second of CPU (measured on SELECT 1 and
// printed first) that a DuckDB linked into its program would not pay, so
// at small sizes cpu' is the fairer figure, and CPU times vary less than
// wall times on a shared machine. The runs of one round follow each other, so a busy
// machine slows both alike; on a shared machine the ratios are the point.
// A command that runs past -timeout is killed, shown as "> timeout", and
// not run again at that size.
//
// A SQL file may begin with settings (statements ending a line with ";")
// before its query: the overlap join sets DuckDB's merge_join_threshold to
// 0, without which DuckDB misjudges the CSV views' sizes and runs a
// quadratic piecewise merge join instead of its IEJoin.
package main
