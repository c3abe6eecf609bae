package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
)

// Bounds of what the exporters keep, per result relation.
const (
	// MaxSeries bounds the label sets Prometheus keeps for one relation:
	// a tuple with a new label set past it is not exported (counted in
	// tqmon_export_dropped_total).
	MaxSeries = 10000
	// MaxOpen bounds the open (begun, not ended) tuples Prometheus and
	// OTLP each remember for one relation; a Begin past it is dropped and
	// counted, and its End ignored.
	MaxOpen = 100000
)

// Options say where to export.
type Options struct {
	// Prometheus is the address to serve /metrics at (host:port; ":0"
	// picks a port), "" for none.
	Prometheus string
	// Hold keeps the metrics served after the run, until ctx of Close ends.
	Hold bool
	// OTLP is the collector's OTLP/gRPC endpoint (host:port, plaintext;
	// an https:// prefix asks for TLS), "" for none.
	OTLP string
	// Exec is a shell command run per result tuple, "" for none.
	Exec string
	// ExecRate is the most commands started per second (a token bucket
	// holding ExecRate tokens, at least one); 0 means DefaultExecRate.
	ExecRate float64
	// Time is how times are written where they are text (labels, the
	// command's environment).
	Time algebra.TimeFormat
	// Notes receives what the exporters have to say: where metrics are
	// served, what was dropped, command output and failures.
	Notes io.Writer
}

// Given reports whether o asks for any export.
func (o Options) Given() bool { return o.Prometheus != "" || o.OTLP != "" || o.Exec != "" }

// A sink is one exporter. Its methods are called with the Set's lock
// held, so a sink sees one element at a time, in the order produced; none
// may block on anything outside the process.
type sink interface {
	elem(i int, e stream.Elem)
	watermark(t algebra.Time)
	// close ends the export: tuples still open stay open (Prometheus) or
	// are sent as open (OTLP); it may wait, for Hold, until ctx ends.
	close(ctx context.Context) error
}

// A Set is the exporters of one run, fed by subject.Print (it is a
// subject.Exporter). Its methods may be called from several goroutines.
type Set struct {
	mu     sync.Mutex
	sinks  []sink
	closed bool
}

// result is what the exporters know of a result relation.
type result struct {
	rel   *algebra.Relation
	name  string // format.RelName
	event bool
}

func results(rels []*algebra.Relation) []result {
	rs := make([]result, len(rels))
	for i, rel := range rels {
		rs[i] = result{rel: rel, name: format.RelName(rel, i), event: rel.IsEvent()}
	}
	return rs
}

// New starts the exporters o asks for, for the results of rels (a
// program's statements, in order). An address that does not listen or an
// endpoint that does not parse is an error; a collector that is not there
// is not (its spans are counted as undelivered).
func New(ctx context.Context, o Options, rels []*algebra.Relation) (*Set, error) {
	if o.Notes == nil {
		o.Notes = io.Discard
	}
	s := &Set{}
	rs := results(rels)
	starts := []struct {
		on    bool
		start func() (sink, error)
	}{
		{o.Prometheus != "", func() (sink, error) { return newPrometheus(o, rs) }},
		{o.OTLP != "", func() (sink, error) { return newOTLP(ctx, o, rs) }},
		{o.Exec != "", func() (sink, error) { return newExec(ctx, o, rs) }},
	}
	for _, st := range starts {
		if !st.on {
			continue
		}
		k, err := st.start()
		if err != nil {
			ended, cancel := context.WithCancel(context.Background())
			cancel() // no Hold: the run never started
			s.Close(ended)
			return nil, err
		}
		s.sinks = append(s.sinks, k)
	}
	return s, nil
}

// Elem exports result element e of statement i.
func (s *Set) Elem(i int, e stream.Elem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, k := range s.sinks {
		k.elem(i, e)
	}
}

// Watermark notes that every element up to t has been fed.
func (s *Set) Watermark(t algebra.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, k := range s.sinks {
		k.watermark(t)
	}
}

// Table exports a result computed whole as the elements that would have
// produced it, in time order (ends before begins at equal times), then a
// watermark at its last finite time. Tuples valid until forever stay open.
func (s *Set) Table(i int, t *algebra.Table) {
	els := Elems(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	last := algebra.Beginning
	for _, e := range els {
		for _, k := range s.sinks {
			k.elem(i, e)
		}
		last = max(last, e.T)
	}
	if last != algebra.Beginning {
		for _, k := range s.sinks {
			k.watermark(last)
		}
	}
}

// Elems turns a table into the stream elements that build it: an Event per
// event tuple, a Begin per interval tuple and an End per one that ends
// before forever, sorted by stream.Compare. Tuples valid from the
// beginning begin at algebra.Beginning.
func Elems(t *algebra.Table) []stream.Elem {
	var els []stream.Elem
	for j := range t.Rows {
		row := &t.Rows[j]
		rec := &stream.Rec{Vals: row.Vals, From: row.From}
		if t.Rel.IsEvent() {
			els = append(els, stream.Elem{Kind: stream.Event, T: row.From, Rec: rec})
			continue
		}
		els = append(els, stream.Elem{Kind: stream.Begin, T: row.From, Rec: rec})
		if row.To < algebra.Forever {
			els = append(els, stream.Elem{Kind: stream.End, T: row.To, Rec: rec})
		}
	}
	slices.SortStableFunc(els, stream.Compare)
	return els
}

// Close ends every exporter (see Options.Hold) and returns their errors
// joined. Later calls and later elements do nothing.
func (s *Set) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	for _, k := range s.sinks {
		if err := k.close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// seconds is a time or duration in seconds, as Prometheus and the command
// environment want them.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// noteDrops reports on w what a sink dropped, if anything.
func noteDrops(w io.Writer, what string, n uint64, why string) {
	if n > 0 {
		fmt.Fprintf(w, "tqmon: %s: %d %s\n", what, n, why)
	}
}
