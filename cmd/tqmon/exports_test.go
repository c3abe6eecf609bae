package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"

	"github.com/tqmon/tqmon/internal/testkit"
)

const (
	sendsQuery = `range of s is SendMessage retrieve Sends (s.Process, s.Mailbox)`
	p2States   = `range of p is Process retrieve P2 (p.State) where p.Process = P2`
)

// jsonRow is one JSONL row, numbers kept as written.
type jsonRow map[string]any

func readJSONL(t *testing.T, out string) []jsonRow {
	t.Helper()
	var rows []jsonRow
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		var r jsonRow
		if err := d.Decode(&r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

func (r jsonRow) str(k string) string { return fmt.Sprint(r[k]) }

// labelKey is a row's labels (its attributes other than those named in
// nums) as the scrape writes them.
func (r jsonRow) labelKey(nums ...string) string {
	var ls []string
	for k, v := range r {
		switch {
		case k == "relation", k == "from", k == "to", k == "at", slices.Contains(nums, k):
		default:
			ls = append(ls, k+"="+fmt.Sprint(v))
		}
	}
	slices.Sort(ls)
	return "{" + strings.Join(ls, ",") + "}"
}

// TestPrometheusExport runs the demo with --prometheus and
// --prometheus-hold, scrapes the metrics once the run has ended and
// checks them against the run's own JSONL output: per mailbox, the queue
// lengths still open and the most recently begun one's Length; per
// sender and mailbox, the sends counted.
func TestPrometheusExport(t *testing.T) {
	bin := binary(t)
	cmd := exec.Command(bin, "demo", "--headless", "--duration", "1500ms", "--seed", "3",
		"-f", filepath.Join(paper, "queue_length.tq"), "-e", sendsQuery,
		"--format", "jsonl", "--time-format", "ns", "--prometheus", "127.0.0.1:0", "--prometheus-hold")
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var url string
	var notes []string
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		notes = append(notes, sc.Text())
		if m := regexp.MustCompile(`metrics still served at (\S+) `).FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
			break
		}
	}
	if url == "" {
		t.Fatalf("no 'still served' note; stderr:\n%s", strings.Join(notes, "\n"))
	}
	go io.Copy(io.Discard, errPipe)
	got := testkit.Scrape(t, url)

	want := map[string]float64{}
	lastBegun := map[string]float64{}
	for _, r := range readJSONL(t, stdout.String()) {
		switch r.str("relation") {
		case "QueueLength":
			if r["to"] != nil {
				continue
			}
			k := r.labelKey("Length")
			want["tqmon_QueueLength_open"+k]++
			// Open tuples print in the order they began: the last is the most recent.
			n, _ := r["Length"].(json.Number).Float64()
			lastBegun[k] = n
		case "Sends":
			want["tqmon_Sends_events_total"+r.labelKey()]++
		}
	}
	for k, n := range lastBegun {
		want["tqmon_QueueLength_Length"+k] = n
	}
	if len(lastBegun) == 0 || len(want) == len(lastBegun)*2 {
		t.Fatalf("the run gave no open queue length or no send:\n%s", stdout.String())
	}
	for k, v := range got {
		if strings.HasPrefix(k, "tqmon_QueueLength_") || strings.HasPrefix(k, "tqmon_Sends_") {
			if w, ok := want[k]; !ok || w != v {
				t.Errorf("scraped %s %v, the output says %v (present: %v)", k, v, w, ok)
			}
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("%s %v is not served", k, w)
		}
	}
	if wm := got["tqmon_watermark_seconds{}"]; wm <= 0 {
		t.Errorf("watermark %v", wm)
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after an interrupt: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("--prometheus-hold did not end on an interrupt")
	}
}

// collector is an in-process OTLP trace and logs collector.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	req  []*coltracepb.ExportTraceServiceRequest
	logs []*collogspb.ExportLogsServiceRequest
}

// logsCollector is the collector's logs service.
type logsCollector struct {
	collogspb.UnimplementedLogsServiceServer
	c *collector
}

func (l logsCollector) Export(_ context.Context, r *collogspb.ExportLogsServiceRequest) (*collogspb.ExportLogsServiceResponse, error) {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	l.c.logs = append(l.c.logs, r)
	return &collogspb.ExportLogsServiceResponse{}, nil
}

// received lists what the collector received: a line per span ("REL
// attrs FROM-TO" or FROM-open) and per log record ("REL attrs AT log"),
// attributes sorted, without tqmon.relation (checked against the span's
// name and the record's event name).
func (c *collector) received(t *testing.T) []string {
	t.Helper()
	var got []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, req := range c.req {
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					var attrs []string
					rel, open := "", false
					for _, kv := range sp.Attributes {
						switch kv.Key {
						case "tqmon.relation":
							rel = kv.Value.GetStringValue()
						case "tqmon.open":
							open = kv.Value.GetBoolValue()
						default:
							attrs = append(attrs, kv.Key+"="+attrString(kv.Value))
						}
					}
					slices.Sort(attrs)
					if rel != sp.Name {
						t.Errorf("span %s has tqmon.relation %q", sp.Name, rel)
					}
					end := strconv.FormatUint(sp.EndTimeUnixNano, 10)
					if open {
						end = "open"
					}
					got = append(got, fmt.Sprintf("%s %s %d-%s", rel, strings.Join(attrs, ","), sp.StartTimeUnixNano, end))
				}
			}
		}
	}
	for _, req := range c.logs {
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					var attrs []string
					rel := ""
					for _, kv := range lr.Attributes {
						if kv.Key == "tqmon.relation" {
							rel = kv.Value.GetStringValue()
							continue
						}
						attrs = append(attrs, kv.Key+"="+attrString(kv.Value))
					}
					slices.Sort(attrs)
					if rel != lr.EventName || rel != lr.Body.GetStringValue() {
						t.Errorf("log record %q (body %v) has tqmon.relation %q", lr.EventName, lr.Body, rel)
					}
					got = append(got, fmt.Sprintf("%s %s %d log", rel, strings.Join(attrs, ","), lr.TimeUnixNano))
				}
			}
		}
	}
	return got
}

func (c *collector) Export(_ context.Context, r *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.req = append(c.req, r)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func startCollector(t *testing.T) (string, *collector) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	c := &collector{}
	coltracepb.RegisterTraceServiceServer(srv, c)
	collogspb.RegisterLogsServiceServer(srv, logsCollector{c: c})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String(), c
}

func attrString(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return v.GetStringValue()
}

// TestOTLPExport runs the demo with --otlp to an in-process collector:
// what it receives is the run's JSONL rows — an interval a span over its
// valid time, an event a log record at its time (named after its
// relation), the relation in tqmon.relation, tuples open at the end
// marked tqmon.open.
func TestOTLPExport(t *testing.T) {
	addr, col := startCollector(t)
	code, out, errs := tqmon(t, "demo", "--headless", "--duration", "1s", "--seed", "4",
		"-e", sendsQuery, "-e", p2States, "--format", "jsonl", "--time-format", "ns", "--otlp", addr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	if strings.Contains(errs, "--otlp") {
		t.Errorf("stderr: %s", errs)
	}
	var want []string
	for _, r := range readJSONL(t, out) {
		var attrs []string
		for k, v := range r {
			if k != "relation" && k != "from" && k != "to" && k != "at" {
				attrs = append(attrs, k+"="+fmt.Sprint(v))
			}
		}
		slices.Sort(attrs)
		key := r.str("relation") + " " + strings.Join(attrs, ",")
		switch _, interval := r["to"]; {
		case !interval:
			key += fmt.Sprintf(" %s log", r.str("at"))
		case r["to"] == nil:
			key += fmt.Sprintf(" %s-open", r.str("from"))
		default:
			key += fmt.Sprintf(" %s-%s", r.str("from"), r.str("to"))
		}
		want = append(want, key)
	}
	got := col.received(t)
	slices.Sort(got)
	slices.Sort(want)
	if len(want) == 0 {
		t.Fatal("the run gave no result")
	}
	if !slices.Equal(got, want) {
		t.Errorf("spans received:\n%s\nrows printed:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExec: --exec runs the command once per event and at the begin and
// the end of each interval, the tuple in its environment as the output
// writes it; a usage error with demo --subject, which runs no queries.
func TestExec(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	code, out, errs := tqmon(t, "query", "--history", paper, "-e", sendsQuery+` where s.Process = P1`, "-e", p2States,
		"--format", "jsonl", "--exec-rate", "1000",
		"--exec", `echo "$TQMON_REL $TQMON_KIND $TQMON_FROM/$TQMON_TO/$TQMON_AT $TQMON_Process $TQMON_Mailbox $TQMON_State" >> `+log)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	var want []string
	for _, r := range readJSONL(t, out) {
		if r["at"] != nil {
			want = append(want, fmt.Sprintf("Sends event //%s %s %s ", r.str("at"), r.str("Process"), r.str("Mailbox")))
			continue
		}
		want = append(want, fmt.Sprintf("P2 begin %s//   %s", r.str("from"), r.str("State")))
		want = append(want, fmt.Sprintf("P2 end %s/%s/   %s", r.str("from"), r.str("to"), r.str("State")))
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if len(want) != 15 || !slices.Equal(got, want) {
		t.Errorf("commands saw:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, args := range [][]string{
		{"demo", "--subject", "--listen", filepath.Join(dir, "sock"), "--exec", "true"},
		{"demo", "--headless", "--prometheus-hold", "-e", sendsQuery},
		{"query", "--history", paper, "-e", sendsQuery, "--exec", "true", "--exec-rate", "0"},
	} {
		if code, _, errs := tqmon(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errs)
		}
	}
}

// TestStreamNamesRelations: a live stream of two retrieves can be split by
// relation — JSONL rows carry "relation", CSV rows a relation column — and
// each part is the retrieve's result over the run's ground truth.
func TestStreamNamesRelations(t *testing.T) {
	q := filepath.Join(paper, "resumed_by_p1.tq")
	// The demo runs in real time: on a loaded machine its second may
	// hold no resumption, and an empty answer equal to an empty truth
	// shows nothing. Then the demo runs again, twice as long (three runs
	// at most).
	for run, d := 1, time.Second; ; run, d = run+1, 2*d {
		if streamParts(t, q, d, run == 3) {
			break
		}
		t.Logf("run %d (%v): a retrieve's truth is empty; again", run, d)
	}
	// JSONL: every row names its relation; one retrieve alone has no relation column in CSV.
	code, out, errs := tqmon(t, "demo", "--headless", "--duration", "300ms", "-f", q, "-e", sendsQuery, "--format", "jsonl")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	for _, r := range readJSONL(t, out) {
		if n := r.str("relation"); n != "ResumedbyP1" && n != "Sends" {
			t.Errorf("row %v: relation %q", r, n)
		}
	}
	code, out, errs = tqmon(t, "demo", "--headless", "--duration", "300ms", "-e", sendsQuery, "--format", "csv")
	if code != 0 || !strings.HasPrefix(out, "Process,Mailbox,at\n") {
		t.Errorf("one retrieve: exit %d, %s\n%s", code, errs, out)
	}
}

// streamParts runs TestStreamNamesRelations' demo for d and checks each
// relation's part of its CSV stream against the retrieve over the run's
// truth; it reports false, unless last, when a truth's answer is empty
// and so is the stream's part.
func streamParts(t *testing.T, q string, d time.Duration, last bool) bool {
	t.Helper()
	dir := t.TempDir()
	truth := filepath.Join(dir, "truth")
	code, out, errs := tqmon(t, "demo", "--headless", "--duration", d.String(), "--seed", "5", "--truth", truth,
		"-f", q, "-e", sendsQuery, "--format", "csv", "--time-format", "ns")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	parts := map[string][]string{}
	headers := 0
	cr := csv.NewReader(strings.NewReader(out))
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r[0] == "relation" {
			headers++
			continue
		}
		parts[r[0]] = append(parts[r[0]], strings.Join(r[1:], ","))
	}
	if headers != 2 {
		t.Errorf("%d headers, want one per relation", headers)
	}
	wants := map[string][]string{}
	for rel, src := range map[string][]string{"ResumedbyP1": {"-f", q}, "Sends": {"-e", sendsQuery}} {
		code, want, errs := tqmon(t, append([]string{"query", "--history", truth, "--format", "csv", "--time-format", "ns"}, src...)...)
		if code != 0 {
			t.Fatalf("%s over the truth: %s", rel, errs)
		}
		if wants[rel] = sortedRows(want); len(wants[rel]) == 0 && len(parts[rel]) == 0 && !last {
			return false
		}
	}
	for rel, w := range wants {
		got := slices.Sorted(slices.Values(parts[rel]))
		if len(w) == 0 || !slices.Equal(got, w) {
			t.Errorf("%s: the stream's rows\n%s\nthe truth's\n%s", rel, strings.Join(got, "\n"), strings.Join(w, "\n"))
		}
	}
	return true
}

// TestLiveNoEventAtForever: a live run's answers are about what was
// observed, so ResumedbyP1 ("valid at end of W") has no process resumed
// at forever when a wait is still open at the end (before, most of these
// runs had one), and the same query over the run's ground truth — a
// history with a window, an observation too — agrees.
func TestLiveNoEventAtForever(t *testing.T) {
	q := filepath.Join(paper, "resumed_by_p1.tq")
	for _, seed := range []string{"2", "3", "4"} {
		truth := filepath.Join(t.TempDir(), "truth")
		code, out, errs := tqmon(t, "demo", "--headless", "--duration", "1s", "--seed", seed, "--truth", truth,
			"-f", q, "--format", "csv", "--time-format", "ns")
		if code != 0 {
			t.Fatalf("seed %s: exit %d:\n%s", seed, code, errs)
		}
		if strings.Contains(out, "forever") {
			t.Errorf("seed %s:\n%s", seed, out)
		}
		code, want, errs := tqmon(t, "query", "--history", truth, "-f", q, "--format", "csv", "--time-format", "ns")
		if code != 0 {
			t.Fatalf("seed %s over the truth: %s", seed, errs)
		}
		if g, w := sortedRows(out), sortedRows(want); !slices.Equal(g, w) {
			t.Errorf("seed %s: live\n%s\ntruth\n%s", seed, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
}
