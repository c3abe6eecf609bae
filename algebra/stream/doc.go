// Package stream is the vocabulary of tqmon's delta streams, shared by
// everything that produces or consumes them: the interpreter
// (algebra/exec), the store's scans and replays (store/...), the display's
// scene and player (display/...) and the remote monitor.
//
// A stream carries Begin(rec) when a tuple's valid time begins, End(rec)
// when it ends, Event(rec) for an event tuple, and Advance(t): the promise
// that no element with a time ≤ t will follow. Elements of one stream come
// in order of time, and at equal times every End comes before any Begin or
// Event (an interval [b, t) ends before [t, e) begins): Less is that
// order. A Rec is a tuple in flight; its pointer is its identity, so an End
// carries the Rec its Begin carried.
//
// A Receiver consumes a stream, a Tee fans one out, and a Source yields the
// elements of several primitive relations in time order (a store's scan, a
// replay, TableSource over a history's tables). PacketKind names what a
// live sensor packet reports, before the interpreter turns it into
// elements.
//
// The package holds types and small helpers only; it runs nothing.
package stream
