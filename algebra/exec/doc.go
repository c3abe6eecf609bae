// Package exec is tqmon's incremental interpreter: an update network of
// push-based operators exchanging delta streams.
//
// Operators exchange the delta streams of package algebra/stream: Begin,
// End and Event elements in time order (Ends first at equal times) and
// Advance watermarks.
//
// The operators:
//
//   - Join (join.go) evaluates one select-project-join block of a retrieve:
//     it keeps the tuples of its k inputs that can still take part in a
//     result, forms each binding once (when its last tuple arrives), filters
//     it with the where clause, and decides the when and valid clauses on
//     bounds of the interval ends still unknown (bounds.go). A decision that
//     depends on the future is held until an End or the passing of time
//     settles it; results go out in time order behind an output watermark.
//     Its concerns have a file each: probe planning and hash indexes
//     (join_plan.go), input buffering and storing (join_input.go),
//     enumerating bindings (join_enum.go), deciding candidates
//     (join_decide.go), purging stored tuples (join_purge.go), releasing
//     results behind the output watermark (join_out.go) and existential
//     variables (join_semi.go: the plan's semi-joins; one candidate per
//     binding of the other variables, holding the witnesses that may still
//     decide it, and witness summaries: the earliest or latest begin under
//     precede, a covering set of spans under overlap). The overlap join
//     of two interval inputs on equal columns (or none) under the default
//     when and valid clauses takes a special path (join_sweep.go): a
//     sweep over slot-indexed open tuples, each result emitted as the
//     element that decides it is processed.
//   - Select (select.go) evaluates a block of one variable whose results
//     are valid at their tuples' own times (the default valid clause, a
//     when clause over an event itself, begin of in targets and where) as
//     each tuple comes: no bindings, bounds or output buffer. Network uses
//     it instead of a Join whenever a block qualifies.
//   - Apply (apply.go) evaluates aggregates incrementally and applies
//     them to the outer tuples. Count, sum, avg and any aggregates over
//     one event relation, applied at that relation's own events and read
//     through one shared α (Options.ShareAlphas: the kernel consumer's
//     count of a process's calls) or, over a recording, through its
//     scans (one source stream), run instead in one FusedAgg
//     (count_fused.go): the selections, groups, windows and coalescing in
//     one operator emitting the same elements, nothing allocated per
//     event (Options.NoFused keeps the general operators, for tests).
//   - Coalesce (coalesce.go) makes a result a set: value-equivalent intervals
//     that overlap or meet are merged and equal events at a chronon are one.
//   - SetOp (setops.go) is ∩ and ∪ over entity relations.
//
// Join and SetOp read their inputs through one watermark merge (merge.go):
// buffered elements are processed in time order, Ends first, and none past
// the least input watermark.
//   - Collector (collect.go) materialises a result.
//
// Network (network.go) compiles plans into operators and RunHistory
// (history.go) plays a recorded history into them in time order, exactly as
// live packets will later arrive. RunHistory and RunSource (source.go) do
// not play a tuple that every reader of its relation rejects for its values
// alone (a Select's or a join input's where conjuncts over its variable):
// no reader could act on it or on its End. (RunSource still advances time
// at its instant; RunHistory, which would not, plays every tuple of a run
// with gaps: a Cut must see time pass.)
//
// Representation: Coalesce groups, join indexes and aggregate groups are
// keyed by algebra.HashTuple (the run's hash) and compare keys on a match
// (a collision is told apart); their tables, and every operator's table of
// open tuples (recMap, keyed by record address), are one open-addressing
// hash table (hashMap, recmap.go), not Go maps. Operators take candidates,
// entries, result values and records from blocks (slab), so steady state
// allocates per block, not per tuple. RunHistory sorts ends by a radix sort
// and packs the values of the rows a selective screen keeps in play order
// (play.go), so that operators read them in sequence.
//
// Columnar path (columnar.go, columnar_expr.go, columnar_join.go), for
// recorded histories: a statement that is σ, π and coalescing over one
// recorded relation (a Select feeding its Coalesce, read by nothing but
// its result, no when clause, no begin/end of, no gaps; in RunHistory, no
// streaming output) is evaluated over
// the relation's dictionary-encoded columns (algebra.History.Columns,
// built once per table and kept with the history): conjuncts and targets
// compiled to closures over selection vectors, integer group keys (a dense
// array, else the open-addressing table over a hash of the codes),
// coalescing over codes, values decoded once per group into one block, and
// results handed to the Collector in its table's order. In RunHistory,
// so is the overlap equi-join of two recorded
// relations the join sweep takes (join_sweep.go; columnar_join.go): each
// side's conjuncts as selection vectors, the join columns' codes numbered
// as keys, the sweep over the selected tuples in order of start (those
// that may still be open in reused slots), and the results, whose ends
// are known as they begin, coalesced and decoded as a Select's. What it does not
// support runs on the row operators, and so does a statement whose
// arithmetic fails, so that the error reported is theirs. `tqmon query
// --history` and `--db` (unpaced) run a program whose every statement is
// such (over one relation, without arithmetic) with RunChunks
// (columnar_stream.go): the relation's tuples in chunks of columns
// (ChunkSource: store/history.Source, store/db.Source), each result's
// Begin, End or Event pushed as soon as it is final — the row operators'
// elements, in time order. A program of one statement joining two
// relations, one variable existential and summarized by its earliest or
// latest begin (ResumedbyP1's `S precede end of W`), keyed by equalities,
// runs with RunSemi (columnar_semi.go): one witness per key from the
// existential relation's chunks, then one pass over the other's, its
// results coalesced as RunChunks' are. Other programs over a directory or a
// database, Parquet, paced replays, live and acquisitional runs play
// tuples through the row operators, with watermarks and the
// Begin/End/Event deltas unchanged.
//
// A run may have a memory budget (budget.go): the network checks the
// operators' held tuples, priced by estimated sizes, and the heap size a
// watchdog outside it reports, at every advance of time and inside a
// join's enumeration of bindings, and stops with a *MemoryError naming the
// operators that hold the most.
package exec
