package export

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/tqmon/tqmon/algebra"
)

// Event tuples go over OTLP as log records, the OpenTelemetry signal for
// things that happen at an instant (interval tuples are spans, otlp.go):
// one record per event, timestamped at the event, its body the relation's
// name, its attributes the tuple's (as a span's) and tqmon.relation. They
// share the spans' endpoint, queue bound (OTLPQueue records) and end: at
// most otlpShutdown waiting for the collector, then what was not
// delivered is reported.

// otlpLogs is an otlpSink's logger.
type otlpLogs struct {
	lp      *sdklog.LoggerProvider
	logger  otellog.Logger
	sent    *countingLogExporter
	emitted uint64 // records handed to the SDK (the sink's lock)
}

// countingLogExporter is a log exporter that notes its deliveries.
type countingLogExporter struct {
	sdklog.Exporter
	delivery
}

func (c *countingLogExporter) Export(ctx context.Context, recs []sdklog.Record) error {
	c.note(len(recs), c.Exporter.Export(ctx, recs))
	return nil
}

func newOTLPLogs(ctx context.Context, endpoint string, secure bool, res *resource.Resource) (*otlpLogs, error) {
	opts := []otlploggrpc.Option{otlploggrpc.WithEndpoint(endpoint), otlploggrpc.WithTimeout(5 * time.Second)}
	if !secure {
		opts = append(opts, otlploggrpc.WithInsecure())
	}
	exp, err := otlploggrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--otlp: %w", err)
	}
	l := &otlpLogs{sent: &countingLogExporter{Exporter: exp}}
	l.lp = sdklog.NewLoggerProvider(sdklog.WithResource(res),
		sdklog.WithProcessor(sdklog.NewBatchProcessor(l.sent, sdklog.WithMaxQueueSize(OTLPQueue), sdklog.WithExportInterval(time.Second))))
	l.logger = l.lp.Logger("github.com/tqmon/tqmon")
	return l, nil
}

// event sends one event tuple of relation i as a log record.
func (x *otlpSink) event(i int, vals []algebra.Value, at algebra.Time) {
	r := &x.rels[i]
	var rec otellog.Record
	rec.SetTimestamp(spanTime(at))
	rec.SetObservedTimestamp(time.Now())
	rec.SetSeverity(otellog.SeverityInfo)
	rec.SetEventName(r.name)
	rec.SetBody(attribute.StringValue(r.name))
	rec.AddAttributes(x.attrs(r, vals, false)...)
	x.logs.logger.Emit(context.Background(), rec)
	x.logs.emitted++
}

// close waits for the collector to take the queued records (ctx bounds
// it) and reports those not delivered.
func (l *otlpLogs) close(ctx context.Context, notes io.Writer) {
	l.sent.report(notes, l.emitted, "event log records", l.lp.Shutdown(ctx))
}
