package export

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Attribute keys tqmon adds to every span, beside the tuple's attributes.
const (
	AttrRelation = "tqmon.relation" // the result relation's name
	AttrOpen     = "tqmon.open"     // true on a tuple still open when the run ended
)

// OTLPQueue is the most spans waiting for the collector; past it, spans
// are dropped (the SDK's batch processor does not block) and counted.
const OTLPQueue = 2048

// otlpShutdown bounds how long the end of a run waits for the collector.
const otlpShutdown = 10 * time.Second

// otlpSink sends result tuples over OTLP/gRPC: an interval tuple is a
// span over its valid time [from, to), sent once it ends; an event is a
// log record at its time (otlplog.go). Each span is named
// after its relation and carries the tuple's attributes (ints, floats,
// bools as such; durations in nanoseconds; the others as text), plus
// tqmon.relation. Tuples still open when the run ends are sent ending at
// the last watermark, with tqmon.open = true. Times before the epoch (a
// tuple valid from the beginning) are sent as the epoch.
//
// State: at most MaxOpen open tuples per relation (their Recs), and the
// SDK's queue of OTLPQueue spans; the batch goroutine alone waits for the
// collector.
type otlpSink struct {
	mu      sync.Mutex
	rels    []result
	tf      algebra.TimeFormat
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	open    []map[*stream.Rec]struct{}
	mark    algebra.Time
	dropped uint64 // open tuples past MaxOpen
	ended   uint64 // spans handed to the SDK
	sent    *countingExporter
	notes   io.Writer
	logs    *otlpLogs // event tuples (otlplog.go)
}

// delivery counts what the collector accepted (spans, log records) and
// keeps the last error, which the exporters do not pass on: the SDK would
// print it through OpenTelemetry's global handler, and close reports
// what was lost once.
type delivery struct {
	sent    atomic.Uint64
	lastErr atomic.Pointer[error]
}

// note counts an export of n items that ended with err.
func (d *delivery) note(n int, err error) {
	if err == nil {
		d.sent.Add(uint64(n))
	} else {
		d.lastErr.Store(&err)
	}
}

// report says on notes how many of the handed items (what they are) the
// collector did not take, and why (its last error, else shutdown's).
func (d *delivery) report(notes io.Writer, handed uint64, what string, shutdown error) {
	lost := handed - min(handed, d.sent.Load())
	if lost == 0 {
		return
	}
	why := "the queue was full or the collector did not take them"
	if e := d.lastErr.Load(); e != nil {
		why = (*e).Error()
	} else if shutdown != nil {
		why = shutdown.Error()
	}
	fmt.Fprintf(notes, "tqmon: --otlp: %d of %d %s not delivered: %s\n", lost, handed, what, why)
}

// countingExporter is a span exporter that notes its deliveries.
type countingExporter struct {
	sdktrace.SpanExporter
	delivery
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.note(len(spans), c.SpanExporter.ExportSpans(ctx, spans))
	return nil
}

func newOTLP(ctx context.Context, o Options, rs []result) (*otlpSink, error) {
	endpoint, secure := strings.CutPrefix(o.OTLP, "https://")
	endpoint = strings.TrimPrefix(endpoint, "http://")
	if endpoint == "" || strings.Contains(endpoint, "/") {
		return nil, fmt.Errorf("--otlp %q: want host:port (the collector's OTLP/gRPC port, usually 4317)", o.OTLP)
	}
	opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithTimeout(5 * time.Second)}
	if !secure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "tqmon"))
	x := &otlpSink{rels: rs, tf: o.Time, sent: &countingExporter{SpanExporter: exp}, notes: o.Notes, mark: algebra.Beginning}
	x.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(x.sent, sdktrace.WithMaxQueueSize(OTLPQueue), sdktrace.WithBatchTimeout(time.Second)))
	x.tracer = x.tp.Tracer("github.com/tqmon/tqmon")
	if x.logs, err = newOTLPLogs(ctx, endpoint, secure, res); err != nil {
		x.tp.Shutdown(ctx)
		return nil, err
	}
	for range rs {
		x.open = append(x.open, map[*stream.Rec]struct{}{})
	}
	return x, nil
}

// attrs are a tuple's span attributes.
func (x *otlpSink) attrs(r *result, vals []algebra.Value, open bool) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, len(vals)+2)
	kv = append(kv, attribute.String(AttrRelation, r.name))
	for j, a := range r.rel.Attrs {
		v := vals[j]
		switch v.K {
		case algebra.KindInt, algebra.KindDuration:
			kv = append(kv, attribute.Int64(a.Name, v.N))
		case algebra.KindFloat:
			kv = append(kv, attribute.Float64(a.Name, v.F()))
		case algebra.KindBool:
			kv = append(kv, attribute.Bool(a.Name, v.B()))
		default:
			kv = append(kv, attribute.String(a.Name, v.Format(x.tf)))
		}
	}
	if open {
		kv = append(kv, attribute.Bool(AttrOpen, true))
	}
	return kv
}

// spanTime is t as a span timestamp, not before the epoch.
func spanTime(t algebra.Time) time.Time { return time.Unix(0, max(t, 0)) }

// span sends one span of relation i over [from, to).
func (x *otlpSink) span(i int, rec *stream.Rec, from, to algebra.Time, open bool) {
	r := &x.rels[i]
	kv := x.attrs(r, rec.Vals, open)
	_, sp := x.tracer.Start(context.Background(), r.name, trace.WithTimestamp(spanTime(from)),
		trace.WithAttributes(kv...), trace.WithSpanKind(trace.SpanKindInternal))
	if r.event {
		sp.AddEvent(r.name, trace.WithTimestamp(spanTime(from)), trace.WithAttributes(kv[1:]...))
	}
	sp.End(trace.WithTimestamp(spanTime(max(to, from))))
	x.ended++
}

func (x *otlpSink) elem(i int, e stream.Elem) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch e.Kind {
	case stream.Begin:
		if len(x.open[i]) >= MaxOpen {
			x.dropped++
			return
		}
		x.open[i][e.Rec] = struct{}{}
	case stream.End:
		if _, ok := x.open[i][e.Rec]; !ok {
			return // dropped at its Begin
		}
		delete(x.open[i], e.Rec)
		x.span(i, e.Rec, e.Rec.From, e.T, false)
	case stream.Event:
		x.event(i, e.Rec.Vals, e.T)
	}
}

func (x *otlpSink) watermark(t algebra.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.mark = t
}

// close sends the tuples still open, ending at the last watermark (or at
// their start, when none came), then waits up to otlpShutdown for the
// collector to take what is queued.
func (x *otlpSink) close(ctx context.Context) error {
	x.mu.Lock()
	for i, open := range x.open {
		for rec := range open {
			x.span(i, rec, rec.From, max(x.mark, rec.From), true)
		}
		clear(open)
	}
	ended, dropped := x.ended, x.dropped
	x.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), otlpShutdown)
	defer cancel()
	err := x.tp.Shutdown(sctx)
	x.logs.close(sctx, x.notes)
	noteDrops(x.notes, "--otlp", dropped, fmt.Sprintf("tuples not exported (past %d open tuples of a relation)", MaxOpen))
	x.sent.report(x.notes, ended, "spans", err)
	return nil
}
