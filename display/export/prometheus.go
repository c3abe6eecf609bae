package export

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// promSink serves each result relation's current tuples as metrics named
// tqmon_<relation>_…: each numeric target (int, float; durations in
// seconds, named …_seconds) is a gauge, the other targets are its labels.
//
//   - An interval relation has tqmon_<R>_open, the number of its tuples
//     open now per label set, and a gauge per numeric target holding the
//     value of the most recently begun of them. A label set with no open
//     tuple is no longer served (unless the relation has no labels: its
//     one series stays, at 0 open).
//   - An event relation has tqmon_<R>_events_total, the events seen per
//     label set, and a gauge per numeric target holding the last value.
//
// tqmon_watermark_seconds is the time up to which every result is known;
// tqmon_export_dropped_total counts, per relation, the tuples not exported
// because of MaxSeries or MaxOpen.
//
// State: per relation at most MaxSeries label sets and MaxOpen open
// tuples (list elements of their series). A scrape holds the lock while
// it copies that state into metrics (bounded by MaxSeries × targets); the
// network write happens after, so a slow scraper never holds the query.
type promSink struct {
	mu       sync.Mutex
	rels     []*promRel
	mark     algebra.Time
	haveMark bool
	markDesc *prometheus.Desc
	dropDesc *prometheus.Desc
	srv      *http.Server
	addr     string
	hold     bool
	tf       algebra.TimeFormat
	notes    io.Writer
	served   chan error
}

type promRel struct {
	result
	labels  []int // indexes of the label attributes
	nums    []int // indexes of the numeric attributes
	descs   []*prometheus.Desc
	count   *prometheus.Desc // _open or _events_total
	series  map[string]*series
	open    map[*stream.Rec]*list.Element // open tuple → its place in its series' list
	dropped uint64
}

// series is one label set of a relation.
type series struct {
	key    string // the label values joined by NULs
	labels []string
	open   *list.List // intervals: the open tuples (*openRec), oldest first
	events uint64     // events: how many
	last   []float64  // events: the last values
}

type openRec struct {
	s    *series
	rec  *stream.Rec
	vals []float64
}

func newPrometheus(o Options, rs []result) (*promSink, error) {
	p := &promSink{hold: o.Hold, tf: o.Time, notes: o.Notes, served: make(chan error, 1),
		markDesc: prometheus.NewDesc("tqmon_watermark_seconds", "time up to which every result is known (seconds since the epoch, or since the subject's start)", nil, nil),
		dropDesc: prometheus.NewDesc("tqmon_export_dropped_total", fmt.Sprintf("tuples not exported: past %d label sets or %d open tuples of one relation", MaxSeries, MaxOpen), []string{"relation"}, nil)}
	for _, r := range rs {
		p.rels = append(p.rels, newPromRel(r))
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(p); err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	ln, err := net.Listen("tcp", o.Prometheus)
	if err != nil {
		return nil, fmt.Errorf("--prometheus: %w", err)
	}
	p.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { p.served <- p.srv.Serve(ln) }()
	fmt.Fprintf(p.notes, "tqmon: serving metrics at http://%s/metrics\n", p.addr)
	return p, nil
}

// metricName makes s a valid Prometheus metric or label name: letters,
// digits and underscores, not starting with a digit.
func metricName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= '0' && r <= '9' && i > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// numeric reports whether attributes of kind k are gauges (not labels).
func numeric(k algebra.Kind) bool {
	return k == algebra.KindInt || k == algebra.KindFloat || k == algebra.KindDuration
}

func newPromRel(r result) *promRel {
	pr := &promRel{result: r, series: map[string]*series{}, open: map[*stream.Rec]*list.Element{}}
	prefix := "tqmon_" + metricName(r.name)
	var labelNames []string
	for j, a := range r.rel.Attrs {
		if !numeric(a.Type.Kind) {
			pr.labels = append(pr.labels, j)
			name := metricName(a.Name)
			if strings.HasPrefix(name, "__") { // reserved by Prometheus
				name = "a" + name
			}
			labelNames = append(labelNames, name)
		}
	}
	countName, countHelp := prefix+"_open", "tuples of "+r.name+" open now"
	if r.event {
		countName, countHelp = prefix+"_events_total", "events of "+r.name+" seen"
	}
	pr.count = prometheus.NewDesc(countName, countHelp, labelNames, nil)
	taken := map[string]bool{countName: true}
	which := "the most recently begun open tuple"
	if r.event {
		which = "the last event"
	}
	for j, a := range r.rel.Attrs {
		if !numeric(a.Type.Kind) {
			continue
		}
		name := prefix + "_" + metricName(a.Name)
		if a.Type.Kind == algebra.KindDuration {
			name += "_seconds"
		}
		for taken[name] {
			name += "_value"
		}
		taken[name] = true
		pr.nums = append(pr.nums, j)
		pr.descs = append(pr.descs, prometheus.NewDesc(name, fmt.Sprintf("%s of %s, in %s of each label set", a.Name, r.name, which), labelNames, nil))
	}
	if len(pr.labels) == 0 && !r.event {
		pr.series[""] = &series{open: list.New()}
	}
	return pr
}

// Describe sends no descriptions: the collector is unchecked, its series
// come and go with the tuples.
func (p *promSink) Describe(chan<- *prometheus.Desc) {}

// Collect copies the current state into metrics.
func (p *promSink) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.haveMark {
		ch <- prometheus.MustNewConstMetric(p.markDesc, prometheus.GaugeValue, seconds(p.mark))
	}
	for _, r := range p.rels {
		ch <- prometheus.MustNewConstMetric(p.dropDesc, prometheus.CounterValue, float64(r.dropped), r.name)
		for _, s := range r.series {
			var vals []float64
			if r.event {
				ch <- prometheus.MustNewConstMetric(r.count, prometheus.CounterValue, float64(s.events), s.labels...)
				vals = s.last
			} else {
				ch <- prometheus.MustNewConstMetric(r.count, prometheus.GaugeValue, float64(s.open.Len()), s.labels...)
				if b := s.open.Back(); b != nil {
					vals = b.Value.(*openRec).vals
				}
			}
			if vals == nil {
				continue
			}
			for k, d := range r.descs {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, vals[k], s.labels...)
			}
		}
	}
}

// values are the label values and the gauge values of a tuple.
func (r *promRel) values(vals []algebra.Value, tf algebra.TimeFormat) (string, []string, []float64) {
	labels := make([]string, len(r.labels))
	for k, j := range r.labels {
		labels[k] = vals[j].Format(tf)
	}
	nums := make([]float64, len(r.nums))
	for k, j := range r.nums {
		v := vals[j]
		if v.K == algebra.KindDuration {
			nums[k] = seconds(v.N)
		} else {
			nums[k] = v.F()
		}
	}
	return strings.Join(labels, "\x00"), labels, nums
}

// seriesFor finds or makes the series of a label set; nil past MaxSeries.
func (r *promRel) seriesFor(key string, labels []string) *series {
	s := r.series[key]
	if s == nil {
		if len(r.series) >= MaxSeries {
			return nil
		}
		s = &series{key: key, labels: labels, open: list.New()}
		r.series[key] = s
	}
	return s
}

func (p *promSink) elem(i int, e stream.Elem) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rels[i]
	switch e.Kind {
	case stream.Begin:
		if len(r.open) >= MaxOpen {
			r.dropped++
			return
		}
		key, labels, nums := r.values(e.Rec.Vals, p.tf)
		s := r.seriesFor(key, labels)
		if s == nil {
			r.dropped++
			return
		}
		r.open[e.Rec] = s.open.PushBack(&openRec{s: s, rec: e.Rec, vals: nums})
	case stream.End:
		el := r.open[e.Rec]
		if el == nil {
			return // dropped at its Begin
		}
		delete(r.open, e.Rec)
		o := el.Value.(*openRec)
		o.s.open.Remove(el)
		if o.s.open.Len() == 0 && len(r.labels) > 0 {
			delete(r.series, o.s.key)
		}
	case stream.Event:
		key, labels, nums := r.values(e.Rec.Vals, p.tf)
		s := r.seriesFor(key, labels)
		if s == nil {
			r.dropped++
			return
		}
		s.events++
		s.last = nums
	}
}

func (p *promSink) watermark(t algebra.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mark, p.haveMark = t, true
}

func (p *promSink) close(ctx context.Context) error {
	var dropped uint64
	p.mu.Lock()
	for _, r := range p.rels {
		dropped += r.dropped
	}
	p.mu.Unlock()
	noteDrops(p.notes, "--prometheus", dropped, fmt.Sprintf("tuples not exported (past %d label sets or %d open tuples of a relation)", MaxSeries, MaxOpen))
	if p.hold && ctx.Err() == nil {
		fmt.Fprintf(p.notes, "tqmon: the run has ended; metrics still served at http://%s/metrics until interrupted\n", p.addr)
		select {
		case <-ctx.Done():
		case err := <-p.served:
			return fmt.Errorf("--prometheus: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := p.srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.srv.Close() // a scrape still writing: cut it
	}
	if err != nil {
		return fmt.Errorf("--prometheus: %w", err)
	}
	return nil
}
