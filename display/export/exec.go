package export

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/stream"
)

// Bounds of --exec.
const (
	// DefaultExecRate is the default of Options.ExecRate: commands
	// started per second.
	DefaultExecRate = 10
	// ExecRunning is the most commands running at once.
	ExecRunning = 4
	// ExecQueue is the most tuples waiting for their command; past it a
	// tuple's command is dropped and counted.
	ExecQueue = 64
)

// execSink runs a shell command (sh -c) per result element: when an
// interval tuple begins (TQMON_KIND=begin) and when it ends (end), and
// per event (event). The tuple is in the command's environment:
// TQMON_REL (the relation), TQMON_KIND, TQMON_FROM and TQMON_TO (an
// interval's; TQMON_TO is empty while it is open) or TQMON_AT (an
// event's), and TQMON_<attr> for each attribute, all as the output
// writes them. The command's output goes to tqmon's stderr.
//
// Commands start at most ExecRate per second (a token bucket of
// max(1, ⌈ExecRate⌉) tokens), at most ExecRunning at once; tuples waiting
// for them queue, at most ExecQueue. The query never waits: a tuple that
// finds the queue full is dropped and counted, and the end of the run
// reports the drops and failures. At the end the queue is run out (at
// most ExecQueue commands, at the rate), unless the run was interrupted.
type execSink struct {
	cmd   string
	rels  []result
	tf    algebra.TimeFormat
	rate  float64
	burst float64
	notes io.Writer
	ctx   context.Context
	queue chan []string
	done  chan struct{}
	// run runs one command with env added; tests replace it.
	run func(ctx context.Context, env []string) error

	mu                             sync.Mutex
	closed                         bool
	accepted, dropped, failed, ran uint64
	firstErr                       error
}

// lockedWriter serialises the output of concurrent commands.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newExec(ctx context.Context, o Options, rs []result) (*execSink, error) {
	rate := o.ExecRate
	if rate == 0 {
		rate = DefaultExecRate
	}
	if rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("--exec-rate %v: want a positive number of commands per second", o.ExecRate)
	}
	out := &lockedWriter{w: o.Notes}
	x := &execSink{cmd: o.Exec, rels: rs, tf: o.Time, rate: rate, burst: max(1, math.Ceil(rate)), notes: o.Notes,
		ctx: ctx, queue: make(chan []string, ExecQueue), done: make(chan struct{})}
	x.run = func(ctx context.Context, env []string) error {
		c := exec.CommandContext(ctx, "/bin/sh", "-c", x.cmd)
		c.Env = append(os.Environ(), env...)
		c.Stdout, c.Stderr = out, out
		return c.Run()
	}
	go x.dispatch()
	return x, nil
}

// env is a result element as environment variables.
func (x *execSink) env(i int, e stream.Elem) []string {
	r := &x.rels[i]
	env := make([]string, 0, len(r.rel.Attrs)+4)
	env = append(env, "TQMON_REL="+r.name)
	switch e.Kind {
	case stream.Begin:
		env = append(env, "TQMON_KIND=begin", "TQMON_FROM="+algebra.FormatTime(e.T, x.tf), "TQMON_TO=")
	case stream.End:
		env = append(env, "TQMON_KIND=end", "TQMON_FROM="+algebra.FormatTime(e.Rec.From, x.tf), "TQMON_TO="+algebra.FormatTime(e.T, x.tf))
	default:
		env = append(env, "TQMON_KIND=event", "TQMON_AT="+algebra.FormatTime(e.T, x.tf))
	}
	for j, a := range r.rel.Attrs {
		env = append(env, "TQMON_"+a.Name+"="+e.Rec.Vals[j].Format(x.tf))
	}
	return env
}

func (x *execSink) elem(i int, e stream.Elem) {
	env := x.env(i, e)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	select {
	case x.queue <- env:
		x.accepted++
	default:
		x.dropped++
	}
}

func (x *execSink) watermark(algebra.Time) {}

// dispatch starts the queued commands, as the token bucket and the
// ExecRunning slots allow, until the queue is closed and empty or ctx
// ends.
func (x *execSink) dispatch() {
	defer close(x.done)
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, ExecRunning)
	b := bucket{rate: x.rate, burst: x.burst, tokens: x.burst, last: time.Now()}
	for env := range x.queue {
		if !b.take(x.ctx) {
			x.count(nil, true)
			continue // interrupted: what is queued is dropped
		}
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := x.run(x.ctx, env)
			<-slots
			x.count(err, false)
		}()
	}
}

// bucket is a token bucket: rate tokens a second, at most burst held.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take takes a token, waiting until there is one; false if ctx ended
// first.
func (b *bucket) take(ctx context.Context) bool {
	for {
		now := time.Now()
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
		if b.tokens >= 1 {
			b.tokens--
			return true
		}
		t := time.NewTimer(time.Duration((1 - b.tokens) / b.rate * float64(time.Second)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// count notes how a command went, or that it was dropped.
func (x *execSink) count(err error, dropped bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case dropped:
		x.dropped++
		x.accepted--
	case err != nil:
		x.failed++
		if x.firstErr == nil {
			x.firstErr = err
		}
	default:
		x.ran++
	}
}

// close lets the queue run out (or drops it if ctx has ended), waits for
// the commands, and reports drops and failures.
func (x *execSink) close(ctx context.Context) error {
	x.mu.Lock()
	x.closed = true
	close(x.queue)
	x.mu.Unlock()
	<-x.done
	x.mu.Lock()
	defer x.mu.Unlock()
	total := x.accepted + x.dropped
	noteDrops(x.notes, "--exec", x.dropped, fmt.Sprintf("of %d tuples not run (more than %d waiting, or interrupted; --exec-rate is %g/s)", total, ExecQueue, x.rate))
	if x.failed > 0 {
		fmt.Fprintf(x.notes, "tqmon: --exec: %d of %d commands failed; the first: %v\n", x.failed, x.failed+x.ran, x.firstErr)
	}
	return nil
}
