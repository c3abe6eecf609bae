package export

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/internal/testkit"
)

var servedAt = regexp.MustCompile(`serving metrics at (http://\S+/metrics)`)

// metricsURL is where a Set's notes say metrics are served.
func metricsURL(t testing.TB, notes string) string {
	t.Helper()
	m := servedAt.FindStringSubmatch(notes)
	if m == nil {
		t.Fatalf("no metrics address in %q", notes)
	}
	return m[1]
}

// syncBuffer is a bytes.Buffer safe for the exporters' goroutines.
type syncBuffer struct {
	lockedWriter
	b bytes.Buffer
}

func newNotes() *syncBuffer {
	s := &syncBuffer{}
	s.w = &s.b
	return s
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Two result relations: Load(Host, Cpu float, Jobs int) intervals and
// Alarm(Host, Level int, Wait duration) events.
func testRels() []*algebra.Relation {
	return []*algebra.Relation{
		{Name: "Load", Class: algebra.ClassInterval, Attrs: []algebra.Attr{
			{Name: "Host", Type: algebra.TypeString}, {Name: "Cpu", Type: algebra.TypeFloat}, {Name: "Jobs", Type: algebra.TypeInt}}},
		{Name: "Alarm", Class: algebra.ClassEvent, Attrs: []algebra.Attr{
			{Name: "Host", Type: algebra.TypeString}, {Name: "Level", Type: algebra.TypeInt}, {Name: "Wait", Type: algebra.TypeDuration}}},
	}
}

func load(host string, cpu float64, jobs int64, from algebra.Time) *stream.Rec {
	return &stream.Rec{Vals: []algebra.Value{algebra.Str(host), algebra.Float(cpu), algebra.Int(jobs)}, From: from}
}

// TestPrometheusCurrent: the metrics are the current tuples — open counts
// per label set, the most recently begun open tuple's values, a label set
// gone once nothing of it is open — and events counted with their last
// values, the watermark in seconds.
func TestPrometheusCurrent(t *testing.T) {
	notes := newNotes()
	set, err := New(context.Background(), Options{Prometheus: "127.0.0.1:0", Notes: notes}, testRels())
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(context.Background())
	url := metricsURL(t, notes.String())
	a1, a2, b1 := load("a", 0.5, 3, 1e9), load("a", 0.75, 4, 2e9), load("b", 2, 1, 2e9)
	set.Elem(0, stream.Elem{Kind: stream.Begin, T: 1e9, Rec: a1})
	set.Elem(0, stream.Elem{Kind: stream.Begin, T: 2e9, Rec: a2})
	set.Elem(0, stream.Elem{Kind: stream.Begin, T: 2e9, Rec: b1})
	alarm := func(level int64, wait int64) *stream.Rec {
		return &stream.Rec{Vals: []algebra.Value{algebra.Str("a"), algebra.Int(level), algebra.DurationVal(wait)}}
	}
	set.Elem(1, stream.Elem{Kind: stream.Event, T: 2e9, Rec: alarm(1, 5e8)})
	set.Elem(1, stream.Elem{Kind: stream.Event, T: 3e9, Rec: alarm(7, 25e8)})
	set.Watermark(3e9)
	want := map[string]float64{
		`tqmon_Load_open{Host=a}`: 2, `tqmon_Load_Cpu{Host=a}`: 0.75, `tqmon_Load_Jobs{Host=a}`: 4,
		`tqmon_Load_open{Host=b}`: 1, `tqmon_Load_Cpu{Host=b}`: 2, `tqmon_Load_Jobs{Host=b}`: 1,
		`tqmon_Alarm_events_total{Host=a}`: 2, `tqmon_Alarm_Level{Host=a}`: 7, `tqmon_Alarm_Wait_seconds{Host=a}`: 2.5,
		`tqmon_watermark_seconds{}`:                 3,
		`tqmon_export_dropped_total{relation=Load}`: 0, `tqmon_export_dropped_total{relation=Alarm}`: 0,
	}
	check := func(what string) {
		t.Helper()
		if got := testkit.Scrape(t, url); !equalMaps(got, want) {
			t.Errorf("%s:\ngot  %v\nwant %v", what, got, want)
		}
	}
	check("three open, two alarms")

	// The most recent of a's ends: a's gauges fall back to the one still open.
	set.Elem(0, stream.Elem{Kind: stream.End, T: 4e9, Rec: a2})
	want[`tqmon_Load_open{Host=a}`], want[`tqmon_Load_Cpu{Host=a}`], want[`tqmon_Load_Jobs{Host=a}`] = 1, 0.5, 3
	check("a2 ended")
	// Nothing of a is open: its series go.
	set.Elem(0, stream.Elem{Kind: stream.End, T: 5e9, Rec: a1})
	delete(want, `tqmon_Load_open{Host=a}`)
	delete(want, `tqmon_Load_Cpu{Host=a}`)
	delete(want, `tqmon_Load_Jobs{Host=a}`)
	set.Watermark(5e9)
	want[`tqmon_watermark_seconds{}`] = 5
	check("a1 ended")
}

func equalMaps(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPrometheusBounds tries to break MaxSeries and MaxOpen: label sets
// and open tuples past them are dropped and counted, not kept; ends of
// dropped tuples are ignored.
func TestPrometheusBounds(t *testing.T) {
	notes := newNotes()
	set, err := New(context.Background(), Options{Prometheus: "127.0.0.1:0", Notes: notes}, testRels())
	if err != nil {
		t.Fatal(err)
	}
	url := metricsURL(t, notes.String())
	p := set.sinks[0].(*promSink)
	var recs []*stream.Rec
	for i := range MaxSeries + 5 {
		r := load(fmt.Sprint("h", i), 1, 1, 1)
		recs = append(recs, r)
		set.Elem(0, stream.Elem{Kind: stream.Begin, T: 1, Rec: r})
	}
	for i := range 10 { // a label set that exists takes more tuples
		set.Elem(0, stream.Elem{Kind: stream.Begin, T: 2, Rec: load("h0", float64(i), 1, 2)})
	}
	if n := len(p.rels[0].series); n != MaxSeries {
		t.Errorf("%d label sets kept, want %d", n, MaxSeries)
	}
	got := testkit.Scrape(t, url)
	if d := got[`tqmon_export_dropped_total{relation=Load}`]; d != 5 {
		t.Errorf("dropped %v, want 5", d)
	}
	if n := got[`tqmon_Load_open{Host=h0}`]; n != 11 {
		t.Errorf("h0 open %v, want 11", n)
	}
	for _, r := range recs[MaxSeries:] { // ends of dropped tuples
		set.Elem(0, stream.Elem{Kind: stream.End, T: 3, Rec: r})
	}
	for i := range MaxOpen { // fill the open tuples to the bound, in one label set
		set.Elem(0, stream.Elem{Kind: stream.Begin, T: 4, Rec: load("h1", float64(i), 1, 4)})
	}
	if n := len(p.rels[0].open); n != MaxOpen {
		t.Errorf("%d open tuples kept, want %d", n, MaxOpen)
	}
	set.Close(context.Background())
	if !strings.Contains(notes.String(), "tqmon: --prometheus: ") || !strings.Contains(notes.String(), "tuples not exported") {
		t.Errorf("drops not reported: %q", notes.String())
	}
	if _, err := http.Get(url); err == nil {
		t.Error("still serving after Close without Hold")
	}
}

// TestPrometheusHold: with Hold, Close serves until its context ends.
func TestPrometheusHold(t *testing.T) {
	notes := newNotes()
	set, err := New(context.Background(), Options{Prometheus: "127.0.0.1:0", Hold: true, Notes: notes}, testRels())
	if err != nil {
		t.Fatal(err)
	}
	url := metricsURL(t, notes.String())
	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error)
	go func() { closed <- set.Close(ctx) }()
	for !strings.Contains(notes.String(), "still served") {
		time.Sleep(time.Millisecond)
	}
	if got := testkit.Scrape(t, url); len(got) == 0 {
		t.Error("nothing served while held")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned before its context ended: %v", err)
	default:
	}
	cancel()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// execRun is a runner that records each command's environment and the
// most commands running at once; each takes hold to finish.
type execRun struct {
	mu       sync.Mutex
	envs     [][]string
	times    []time.Time
	running  atomic.Int32
	most     atomic.Int32
	hold     time.Duration
	released chan struct{} // when set, commands wait for it
}

func (r *execRun) run(ctx context.Context, env []string) error {
	n := r.running.Add(1)
	for m := r.most.Load(); n > m && !r.most.CompareAndSwap(m, n); m = r.most.Load() {
	}
	r.mu.Lock()
	r.envs = append(r.envs, env)
	r.times = append(r.times, time.Now())
	r.mu.Unlock()
	if r.released != nil {
		<-r.released
	}
	time.Sleep(r.hold)
	r.running.Add(-1)
	return nil
}

func newTestExec(t *testing.T, rate float64, r *execRun, notes io.Writer) *execSink {
	t.Helper()
	x, err := newExec(context.Background(), Options{Exec: "true", ExecRate: rate, Notes: notes}, results(testRels()))
	if err != nil {
		t.Fatal(err)
	}
	x.run = r.run
	return x
}

// TestExecRate: commands start no faster than the rate allows past the
// bucket's burst — measured against a twin whose rate does not limit, in
// the same run — and never more than ExecRunning at once; a queue past
// ExecQueue drops tuples, counts every one and says so.
func TestExecRate(t *testing.T) {
	const n, rate = 30, 20.0 // burst 20: the last 10 wait ≥ 0.5 s in all
	elapsed := func(rate float64) (time.Duration, int32) {
		r := &execRun{hold: 20 * time.Millisecond}
		start := time.Now() // before the bucket fills
		x := newTestExec(t, rate, r, io.Discard)
		for i := range n {
			x.elem(0, stream.Elem{Kind: stream.Begin, T: algebra.Time(i), Rec: load("a", 1, 1, 0)})
		}
		x.close(context.Background())
		if len(r.envs) != n || x.dropped != 0 {
			t.Fatalf("rate %v: %d commands, %d dropped, want %d and 0", rate, len(r.envs), x.dropped, n)
		}
		return r.times[n-1].Sub(start), r.most.Load()
	}
	limited, most := elapsed(rate)
	free, mostFree := elapsed(1e9)
	minimum := time.Duration(float64(n-int(rate)) / rate * float64(time.Second))
	t.Logf("rate %v: %v (at least %v); unlimited twin: %v", rate, limited, minimum, free)
	if limited < minimum {
		t.Errorf("%d commands at %v/s started within %v, want at least %v", n, rate, limited, minimum)
	}
	if most > ExecRunning || mostFree > ExecRunning {
		t.Errorf("%d and %d commands ran at once, want at most %d", most, mostFree, ExecRunning)
	}
	if mostFree < 2 {
		t.Logf("the unlimited twin never ran two commands at once (a loaded machine?)")
	}

	// A stuck command: the queue fills, the rest is dropped and counted.
	r := &execRun{released: make(chan struct{})}
	notes := newNotes()
	x := newTestExec(t, 1e9, r, notes)
	const pushed = 500
	for i := range pushed {
		x.elem(1, stream.Elem{Kind: stream.Event, T: algebra.Time(i), Rec: &stream.Rec{Vals: []algebra.Value{algebra.Str("a"), algebra.Int(1), algebra.DurationVal(0)}}})
	}
	x.mu.Lock()
	accepted, dropped := x.accepted, x.dropped
	x.mu.Unlock()
	if accepted+dropped != pushed || accepted > ExecQueue+ExecRunning+1 {
		t.Errorf("accepted %d, dropped %d of %d: at most %d can be taken", accepted, dropped, pushed, ExecQueue+ExecRunning+1)
	}
	close(r.released)
	x.close(context.Background())
	if uint64(len(r.envs)) != accepted {
		t.Errorf("%d commands ran, %d accepted", len(r.envs), accepted)
	}
	want := fmt.Sprintf("tqmon: --exec: %d of %d tuples not run", dropped, pushed)
	if !strings.Contains(notes.String(), want) {
		t.Errorf("notes %q, want %q", notes.String(), want)
	}
}

// TestExecEnv: the environment of each kind of element.
func TestExecEnv(t *testing.T) {
	r := &execRun{}
	x := newTestExec(t, 1e9, r, io.Discard)
	rec := load("a", 0.5, 3, 1e9)
	x.elem(0, stream.Elem{Kind: stream.Begin, T: 1e9, Rec: rec})
	x.elem(0, stream.Elem{Kind: stream.End, T: 2e9, Rec: rec})
	x.elem(1, stream.Elem{Kind: stream.Event, T: 3e9, Rec: &stream.Rec{Vals: []algebra.Value{algebra.Str("b"), algebra.Int(2), algebra.DurationVal(15e8)}}})
	x.close(context.Background())
	var got []string
	for _, env := range r.envs {
		got = append(got, strings.Join(env, " "))
	}
	slices.Sort(got)
	want := []string{
		"TQMON_REL=Alarm TQMON_KIND=event TQMON_AT=0:00:03 TQMON_Host=b TQMON_Level=2 TQMON_Wait=1.5s",
		"TQMON_REL=Load TQMON_KIND=begin TQMON_FROM=0:00:01 TQMON_TO= TQMON_Host=a TQMON_Cpu=0.5 TQMON_Jobs=3",
		"TQMON_REL=Load TQMON_KIND=end TQMON_FROM=0:00:01 TQMON_TO=0:00:02 TQMON_Host=a TQMON_Cpu=0.5 TQMON_Jobs=3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestElems: a table becomes the elements that build it, in time order.
func TestElems(t *testing.T) {
	tab := &algebra.Table{Rel: testRels()[0]}
	tab.Add([]algebra.Value{algebra.Str("a"), algebra.Float(1), algebra.Int(1)}, 5, 9)
	tab.Add([]algebra.Value{algebra.Str("b"), algebra.Float(1), algebra.Int(1)}, 1, algebra.Forever)
	tab.Add([]algebra.Value{algebra.Str("c"), algebra.Float(1), algebra.Int(1)}, 9, 10)
	var got []string
	for _, e := range Elems(tab) {
		got = append(got, fmt.Sprintf("%v %d %s", e.Kind, e.T, e.Rec.Vals[0].S))
	}
	want := []string{"Begin 1 b", "Begin 5 a", "End 9 a", "Begin 9 c", "End 10 c"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// stuckLogs is an OTLP logs collector whose Export waits for release.
type stuckLogs struct {
	collogspb.UnimplementedLogsServiceServer
	release chan struct{}
	recs    atomic.Int64
}

func (c *stuckLogs) Export(ctx context.Context, r *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for _, rl := range r.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			c.recs.Add(int64(len(sl.LogRecords)))
		}
	}
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// stuckCollector is an OTLP collector whose Export waits for release.
type stuckCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	release chan struct{}
	spans   atomic.Int64
}

func (c *stuckCollector) Export(ctx context.Context, r *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for _, rs := range r.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans.Add(int64(len(ss.Spans)))
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPSlowCollector: a collector that takes nothing does not hold the
// query — far more tuples than OTLPQueue are fed while it is stuck, as
// spans (intervals) and log records (events) — and what it did not take
// is counted and reported.
func TestOTLPSlowCollector(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &stuckCollector{release: make(chan struct{})}
	coltracepb.RegisterTraceServiceServer(srv, col)
	logs := &stuckLogs{release: col.release}
	collogspb.RegisterLogsServiceServer(srv, logs)
	go srv.Serve(lis)
	defer srv.Stop()
	notes := newNotes()
	set, err := New(context.Background(), Options{OTLP: lis.Addr().String(), Notes: notes}, testRels())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20 * OTLPQueue
	fed := make(chan struct{})
	go func() {
		for i := range n {
			set.Elem(1, stream.Elem{Kind: stream.Event, T: algebra.Time(i), Rec: &stream.Rec{Vals: []algebra.Value{algebra.Str("a"), algebra.Int(1), algebra.DurationVal(0)}}})
			rec := load("h", 1, 1, algebra.Time(i))
			set.Elem(0, stream.Elem{Kind: stream.Begin, T: algebra.Time(i), Rec: rec})
			set.Elem(0, stream.Elem{Kind: stream.End, T: algebra.Time(i + 1), Rec: rec})
		}
		close(fed)
	}()
	select {
	case <-fed:
	case <-time.After(2 * time.Minute):
		t.Fatal("feeding waited for a stuck collector")
	}
	close(col.release)
	if err := set.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := col.spans.Load()
	want := fmt.Sprintf("tqmon: --otlp: %d of %d spans not delivered", n-got, n)
	if got >= n || !strings.Contains(notes.String(), want) {
		t.Errorf("collector took %d of %d spans; notes %q, want %q", got, n, notes.String(), want)
	}
	got = logs.recs.Load()
	want = fmt.Sprintf("tqmon: --otlp: %d of %d event log records not delivered", n-got, n)
	if got >= n || !strings.Contains(notes.String(), want) {
		t.Errorf("collector took %d of %d log records; notes %q, want %q", got, n, notes.String(), want)
	}
}

// TestNewFails: an exporter that cannot start is an error, and those
// started before it are closed (without Hold's wait).
func TestNewFails(t *testing.T) {
	notes := newNotes()
	_, err := New(context.Background(), Options{Prometheus: "127.0.0.1:0", Hold: true, OTLP: "localhost:4317/v1/traces", Notes: notes}, testRels())
	if err == nil || !strings.Contains(err.Error(), "--otlp") {
		t.Fatalf("New: %v", err)
	}
	if _, err := http.Get(metricsURL(t, notes.String())); err == nil {
		t.Error("the Prometheus exporter is still serving")
	}
	if _, err := New(context.Background(), Options{Prometheus: "127.0.0.1:99999"}, testRels()); err == nil || !strings.Contains(err.Error(), "--prometheus") {
		t.Errorf("bad address: %v", err)
	}
}
