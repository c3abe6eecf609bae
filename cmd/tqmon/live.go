package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/exec"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
)

// streamer prints a live program's results as they are produced.
type streamer struct {
	s *format.Stream
}

func newStreamer(w io.Writer, o format.Options, prog *query.Program) *streamer {
	var rels []*algebra.Relation
	for _, r := range prog.Stmts {
		rels = append(rels, r.Result)
	}
	return &streamer{s: format.NewStream(w, o, rels)}
}

func (st *streamer) elem(i int, e exec.Elem) {
	switch e.Kind {
	case exec.Begin:
		st.s.Begin(i, e.Rec, e.Rec.Vals, e.T)
	case exec.End:
		st.s.End(i, e.Rec, e.T)
	case exec.Event:
		st.s.Event(i, e.Rec.Vals, e.T)
	}
}

func printLiveStats(w io.Writer, st remote.LiveStats) {
	total := 0
	for _, n := range st.Packets {
		total += n
	}
	fmt.Fprintf(w, "packets: %d\n", total)
	names := make([]string, 0, len(st.Packets))
	for n := range st.Packets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "packets %s: %d\n", n, st.Packets[n])
	}
	dropped := 0
	for _, n := range st.Dropped {
		dropped += int(n)
	}
	if dropped > 0 {
		fmt.Fprintf(w, "dropped: %d (buffers full)\n", dropped)
	}
	fmt.Fprintf(w, "peak held: %d\n", st.PeakHeld)
	for _, v := range st.Widened {
		fmt.Fprintf(w, "note: residents cannot compute what α %s needs; its sensor is enabled for every entity and α keeps what it needs\n", v)
	}
}
