// Package journal carries a recording through a NATS JetStream stream,
// so that what writes it (a Parquet recording, store/parquet) can stop
// and resume from where its files end without losing or repeating a
// tuple.
//
// A Publisher is a recorder's sink (record.Sink): each call the recorder
// makes — a tuple's begin or end, an event, the recording's time, window
// and observation — is one message on the subject tqmon.journal.<host>
// of the stream Stream, in order. Consume replays a host's messages from
// a stream position into a Parquet writer, telling the writer each
// message's position (parquet.Writer.At); the writer's manifest then
// says from which position a restarted consumer must read again
// (parquet.Writer.Resume: the least position of a tuple still open or
// held when its last files were written), and the writer drops what its
// files already hold (parquet.Append). So a consumer killed at any point
// and restarted reads each tuple into the files exactly once
// (TestResumeAfterKill).
//
// Bounds: the stream keeps at most MaxAge (default 24 h) and MaxBytes
// (default 256 MiB) of messages, the oldest dropped first; a consumer
// that resumes from a position the stream no longer holds stops with
// ErrGone, naming the span lost, rather than recording with a hole.
// A publisher has at most 4000 messages unacknowledged (nats.go's
// PublishAsync window): past it a publish waits up to 200 ms for the
// stream, then the recording stops with the error. Sync (the recorder's,
// every --sync) waits for all of them.
package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/store/db"
	"github.com/tqmon/tqmon/store/parquet"
	"github.com/tqmon/tqmon/store/record"
)

// Stream is the JetStream stream journals go into.
const Stream = "TQMON_JOURNAL"

// Subject is the subject of host's journal.
func Subject(host string) string { return "tqmon.journal." + host }

// Options shape the stream.
type Options struct {
	// MaxAge and MaxBytes bound what the stream keeps (defaults 24 h and
	// 256 MiB).
	MaxAge   time.Duration
	MaxBytes int64
	// Replicas is the stream's replication in a cluster (default 1).
	Replicas int
}

// Ensure creates the stream, or updates its limits.
func Ensure(ctx context.Context, js jetstream.JetStream, o Options) (jetstream.Stream, error) {
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.Replicas <= 0 {
		o.Replicas = 1
	}
	return js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: Stream, Subjects: []string{"tqmon.journal.>"},
		Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld, MaxAge: o.MaxAge, MaxBytes: o.MaxBytes,
		Storage: jetstream.FileStorage, Replicas: o.Replicas})
}

// msg is one journal message: Op says which call.
type msg struct {
	Op   byte            `json:"o"`
	Rel  string          `json:"r,omitempty"`
	Key  uint64          `json:"k,omitempty"`
	T    int64           `json:"t,omitempty"`
	From int64           `json:"f,omitempty"`
	Vals []algebra.Value `json:"v,omitempty"`
	Win  *algebra.Window `json:"w,omitempty"`
	Obs  *db.Observation `json:"b,omitempty"`
	Spec *db.Spec        `json:"s,omitempty"`
}

// The ops.
const (
	opSpec    = 'S' // the sensor description, first
	opBegin   = 'b'
	opEnd     = 'e'
	opEvent   = 'v'
	opWhole   = 'w'
	opAdvance = 'a'
	opWindow  = 'W'
	opObserve = 'O'
	opClose   = 'x' // the recording ended
)

// Publisher journals a recording: a record.Sink.
type Publisher struct {
	js   jetstream.JetStream
	subj string
	open map[string]map[uint64]bool
	err  error
}

// NewPublisher starts host's journal in the stream (Ensure it first),
// its first message the sensor description.
func NewPublisher(js jetstream.JetStream, host string, spec db.Spec) (*Publisher, error) {
	p := &Publisher{js: js, subj: Subject(host), open: map[string]map[uint64]bool{}}
	p.send(msg{Op: opSpec, Spec: &spec})
	return p, p.err
}

func (p *Publisher) send(m msg) {
	if p.err != nil {
		return
	}
	data, err := json.Marshal(m)
	if err == nil {
		_, err = p.js.PublishMsgAsync(&nats.Msg{Subject: p.subj, Data: data})
	}
	if err != nil {
		p.err = fmt.Errorf("journal %s: %w", p.subj, err)
	}
}

// Relation is a relation's journal.
func (p *Publisher) Relation(name string) (record.RelSink, error) {
	if p.open[name] == nil {
		p.open[name] = map[uint64]bool{}
	}
	return pubRel{p, name}, nil
}

func (p *Publisher) Advance(t algebra.Time)          { p.send(msg{Op: opAdvance, T: t}) }
func (p *Publisher) SetWindow(w algebra.Window)      { p.send(msg{Op: opWindow, Win: &w}) }
func (p *Publisher) SetObservation(o db.Observation) { p.send(msg{Op: opObserve, Obs: &o}) }

// Sync waits until the stream has every message sent.
func (p *Publisher) Sync() error {
	if p.err != nil {
		return p.err
	}
	select {
	case <-p.js.PublishAsyncComplete():
		return nil
	case <-time.After(30 * time.Second):
		p.err = fmt.Errorf("journal %s: the stream acknowledged nothing for 30 s", p.subj)
		return p.err
	}
}

// Close ends the journal (a consumer reaching it closes its files) and
// waits for the stream.
func (p *Publisher) Close() error {
	p.send(msg{Op: opClose})
	return p.Sync()
}

type pubRel struct {
	p   *Publisher
	rel string
}

func (r pubRel) Begin(key uint64, from algebra.Time, vals []algebra.Value) error {
	r.p.open[r.rel][key] = true
	r.p.send(msg{Op: opBegin, Rel: r.rel, Key: key, T: from, Vals: vals})
	return r.p.err
}

func (r pubRel) End(key uint64, to algebra.Time) (bool, error) {
	if !r.p.open[r.rel][key] {
		return false, r.p.err
	}
	delete(r.p.open[r.rel], key)
	r.p.send(msg{Op: opEnd, Rel: r.rel, Key: key, T: to})
	return true, r.p.err
}

func (r pubRel) Event(at algebra.Time, vals []algebra.Value) error {
	r.p.send(msg{Op: opEvent, Rel: r.rel, T: at, Vals: vals})
	return r.p.err
}

func (r pubRel) Whole(from, to algebra.Time, vals []algebra.Value) error {
	r.p.send(msg{Op: opWhole, Rel: r.rel, From: from, T: to, Vals: vals})
	return r.p.err
}

// ErrGone: the stream no longer holds the position a consumer must
// resume from (its retention dropped it).
var ErrGone = errors.New("journal: the stream no longer holds what the recording needs")

// Consume replays host's journal into the Parquet recording dir: a new
// one (created with the journal's sensor description) or one a consumer
// before wrote (resumed from its Resume position). It returns when the
// journal's recording ends (its files closed: nil) or the context does
// (what was written stays, and a later Consume resumes it), or on an
// error.
func Consume(ctx context.Context, js jetstream.JetStream, host, dir string, opts parquet.Options) error {
	st, err := js.Stream(ctx, Stream)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w, err := parquet.Append(dir, opts)
	fresh := errors.Is(err, parquet.ErrNoRecording)
	if err != nil && !fresh {
		return err
	}
	start := uint64(1)
	if !fresh {
		start = max(w.Resume(), 1)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if first := info.State.FirstSeq; !fresh && start < first {
		return fmt.Errorf("%w: %s resumes from position %d, the stream's first is %d", ErrGone, dir, start, first)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{Subject(host)},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start})
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	rels := map[string]*parquet.RelWriter{}
	rel := func(name string) (*parquet.RelWriter, error) {
		if r := rels[name]; r != nil {
			return r, nil
		}
		r, err := w.Relation(name)
		rels[name] = r
		return r, err
	}
	for {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("journal: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		var x msg
		if err := json.Unmarshal(m.Data(), &x); err != nil {
			return fmt.Errorf("journal %s position %d: %w", Subject(host), meta.Sequence.Stream, err)
		}
		if x.Op == opSpec {
			if w == nil {
				if w, err = parquet.Create(dir, *x.Spec, opts); err != nil {
					return err
				}
			}
			continue
		}
		if w == nil {
			return fmt.Errorf("%w: %s is new and the stream's first message for %s is not a recording's start", ErrGone, dir, host)
		}
		w.At(meta.Sequence.Stream)
		if err := apply(w, rel, x); err != nil {
			return fmt.Errorf("journal %s position %d: %w", Subject(host), meta.Sequence.Stream, err)
		}
		if x.Op == opClose {
			return w.Close()
		}
	}
}

// apply makes one message's call.
func apply(w *parquet.Writer, rel func(string) (*parquet.RelWriter, error), x msg) error {
	switch x.Op {
	case opAdvance:
		w.Advance(x.T)
		return w.Sync()
	case opWindow:
		w.SetWindow(*x.Win)
		return nil
	case opObserve:
		w.SetObservation(*x.Obs)
		return nil
	case opClose:
		return nil
	}
	r, err := rel(x.Rel)
	if err != nil {
		return err
	}
	switch x.Op {
	case opBegin:
		return r.Begin(x.Key, x.T, x.Vals)
	case opEnd:
		_, err := r.End(x.Key, x.T)
		return err
	case opEvent:
		return r.Event(x.T, x.Vals)
	case opWhole:
		return r.Whole(x.From, x.T, x.Vals)
	}
	return fmt.Errorf("unknown message %q", x.Op)
}
