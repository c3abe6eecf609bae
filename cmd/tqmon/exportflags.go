package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/pflag"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/display/export"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/subject"
)

// exportFlags are --prometheus, --prometheus-hold, --otlp, --exec and
// --exec-rate (query, demo, replay, view, record, shell).
type exportFlags struct{ export.Options }

func addExportFlags(fl *pflag.FlagSet, x *exportFlags) {
	fl.StringVar(&x.Prometheus, "prometheus", "", "serve the results' current tuples as Prometheus metrics at `ADDR`/metrics, e.g. --prometheus :9464 (see docs/exports.md)")
	fl.BoolVar(&x.Hold, "prometheus-hold", false, "with --prometheus: keep serving the final metrics after the run ends, until interrupted, e.g. --prometheus 127.0.0.1:9464 --prometheus-hold")
	fl.StringVar(&x.OTLP, "otlp", "", "send result tuples to the collector as OpenTelemetry spans (intervals) and log records (events) at OTLP/gRPC `ENDPOINT` (host:port; https:// for TLS), e.g. --otlp localhost:4317")
	fl.StringVar(&x.Exec, "exec", "", "run the shell command `CMD` per result tuple, the tuple in $TQMON_REL, $TQMON_KIND, $TQMON_FROM/$TQMON_TO or $TQMON_AT and $TQMON_<attr>, e.g. --exec 'notify-send \"$TQMON_REL $TQMON_Process\"'")
	fl.Float64Var(&x.ExecRate, "exec-rate", export.DefaultExecRate, "with --exec: start at most `N` commands a second (4 at most at once, 64 waiting; the rest are dropped and counted), e.g. --exec-rate 0.5")
}

// check checks the export flags (usage errors); refuse is set where
// there are no results to export (demo --subject runs no queries).
func (x *exportFlags) check(refuse bool) error {
	switch {
	case refuse && x.Given():
		return usageErr(errors.New("--prometheus, --otlp and --exec export query results: demo --subject runs none (give them to the monitor)"))
	case x.Hold && x.Prometheus == "":
		return usageErr(errors.New("--prometheus-hold goes with --prometheus ADDR"))
	case x.ExecRate <= 0:
		return usageErr(errors.New("--exec-rate must be positive"))
	}
	return nil
}

// display makes the animated display o export its queries' results as
// they are computed (view, replay --display, query --display, demo),
// times printed in zone tz; what the exporters say (where metrics are
// served, --exec's output) is held until flush, to be called once the
// display has given the terminal back.
func (x *exportFlags) display(ctx context.Context, o *subject.DisplayOptions, tz string, stderr io.Writer) (flush func()) {
	if x == nil || !x.Given() {
		return func() {}
	}
	notes := &heldNotes{max: 64 << 10}
	tf, _ := algebra.WithTZ(algebra.TimeAuto, tz) // the commands check --tz first
	o.Export = func(rels []*algebra.Relation) (subject.DisplayExporter, error) {
		return x.startRels(ctx, rels, tf, notes)
	}
	return func() { notes.flush(stderr) }
}

// start starts the exporters for prog's results (nil when none is asked
// for); errors are usage errors (an address that does not listen).
func (x *exportFlags) start(ctx context.Context, prog *query.Program, tf algebra.TimeFormat, stderr io.Writer) (*export.Set, error) {
	if x == nil || !x.Given() {
		return nil, nil
	}
	var rels []*algebra.Relation
	for _, s := range prog.Stmts {
		rels = append(rels, s.Result)
	}
	return x.startRels(ctx, rels, tf, stderr)
}

// startRels starts the exporters for results of relations rels (nil
// when none is asked for).
func (x *exportFlags) startRels(ctx context.Context, rels []*algebra.Relation, tf algebra.TimeFormat, stderr io.Writer) (*export.Set, error) {
	if x == nil || !x.Given() {
		return nil, nil
	}
	o := x.Options
	o.Time, o.Notes = tf, stderr
	set, err := export.New(ctx, o, rels)
	if err != nil {
		return nil, usageErr(err)
	}
	return set, nil
}

// heldNotes keeps what is written to it (up to max bytes; the rest is
// counted) until flush: the exporters' notes while a display owns the
// terminal.
type heldNotes struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int
}

func (h *heldNotes) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := min(len(p), h.max-h.buf.Len())
	h.buf.Write(p[:max(n, 0)])
	h.dropped += len(p) - max(n, 0)
	return len(p), nil
}

// flush writes what was kept to w.
func (h *heldNotes) flush(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.Write(h.buf.Bytes())
	if h.dropped > 0 {
		fmt.Fprintf(w, "tqmon: %d more bytes of the exporters' notes were not kept\n", h.dropped)
	}
}
