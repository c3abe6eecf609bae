package kernel_test

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/subject"
)

// consumer is a live run of a σ/π query over a synthetic resident's
// getppid records, printed (to io.Discard) as subject.Print prints: on a
// goroutine of its own (subject.LiveOutput).
type consumer struct {
	seen   atomic.Int64
	losses atomic.Int64 // packets the run was told it lost
	stats  remote.LiveStats
	err    error
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// consume starts the run; it returns once the resident has been told
// what to enable. each, if set, is called after each result printed.
func consume(tb testing.TB, s *kernel.Synthetic, lease time.Duration, each func(n int64)) *consumer {
	return consumeQuery(tb, s, selectCalls, lease, each)
}

// The consumer's queries: a σ/π of the target's system calls (each
// printed), and a count of its getppid calls (each new count a result).
const (
	selectCalls  = `range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target`
	countGetppid = `range of s is Syscall retrieve (N = count(s.Name for ever)) where s.Process = $target and s.Name = "getppid"`
	// The target's getppid calls counted (TestKernelCountsEveryCall's
	// query): the count's own where clause names them (an aggregate does
	// not see the retrieve's: countGetppid counts every process's calls).
	countTargetGetppid = `range of s is Syscall retrieve (N = count(s.Name for ever where s.Process = $target and s.Name = "getppid")) where s.Process = $target and s.Name = "getppid"`
	// (a fragment: the drain evaluates the session's selection on every
	// packet, which passes it)
	selectGetppid = `range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target and s.Name = "getppid"`
)

// consumeQuery is consume for the query text.
func consumeQuery(tb testing.TB, s *kernel.Synthetic, text string, lease time.Duration, each func(n int64)) *consumer {
	return consumeVia(tb, s, text, lease, each, s.Local(), true)
}

// consumeVia is consumeQuery through conn, a connection to s; print
// false counts the results without printing them (as
// TestKernelCountsEveryCall does).
func consumeVia(tb testing.TB, s *kernel.Synthetic, text string, lease time.Duration, each func(n int64), conn wire.Conn, print bool) *consumer {
	prog, err := query.Compile(s.R.Catalog(), []query.Source{{Name: "q", Text: text}},
		check.Options{Params: map[string]string{"target": strconv.Itoa(kernel.SynthPid)}})
	if err != nil {
		tb.Fatal(err)
	}
	out, _ := format.ParseOptions("table", "", "utc")
	c := &consumer{}
	ready := make(chan struct{})
	pr := subject.NewPrinter(io.Discard, out, prog.Stmts)
	lo := subject.NewLiveOutput(pr, nil, nil, nil) // as subject.Print prints a live run's
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	ended := make(chan struct{})
	go func() {
		defer c.wg.Done()
		defer close(ended)
		defer pr.Close()
		defer lo.Wait()
		_, c.stats, c.err = remote.RunLive(ctx, prog, []wire.Conn{conn}, remote.LiveOptions{
			Lease:    lease,
			Ready:    func() { close(ready) },
			Discard:  true,
			Borrow:   !print, // (counted only: kept by nothing)
			Progress: lo.Settle,
			OnLoss:   func(l remote.Loss) { c.losses.Add(int64(l.Lost)) },
			OnElem: func(i int, e stream.Elem) {
				if print {
					lo.Elem(i, e)
				}
				n := c.seen.Add(1)
				if each != nil {
					each(n)
				}
			}})
	}()
	select {
	case <-ready:
	case <-ended: // (before, a run that failed to start hung here)
		tb.Fatalf("the run ended before it was ready: %v", c.err)
	}
	return c
}

// write writes n records into s's ring as room frees (a producer that
// waits rather than drops).
func write(s *kernel.Synthetic, n int) {
	for k := 0; k < n; {
		w := s.Write(min(1024, n-k))
		if w == 0 {
			time.Sleep(20 * time.Microsecond)
		}
		k += w
	}
}

// wait waits until n results were printed, or until none came for
// stall; it reports whether all came.
func (c *consumer) wait(n int64, stall time.Duration) bool {
	last, at := c.seen.Load(), time.Now()
	for c.seen.Load() < n {
		if k := c.seen.Load(); k != last {
			last, at = k, time.Now()
		} else if time.Since(at) > stall {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// stop ends the run (after the resident closed) and waits for it.
func (c *consumer) stop() {
	c.cancel()
	c.wg.Wait()
}

// BenchmarkConsumer measures the user-space consumer of kernel events
// for a σ/π query — ring records read and decoded by the drain, handed to
// the in-process remote, run through the query's network and printed (to
// io.Discard, as subject.Print does) — with synthetic ring records (no
// BPF): b.N getppid records written into an 8 MiB ring as fast as the
// consumer frees room. It reports events/s (wall clock) and the
// process's CPU time per event (the writer's share is a copy of a few
// bytes).
//
// Sub-benchmarks: select, the σ/π (a result per event); count, a count of
// the calls (a result per event: each count as it ends, the last as it
// begins); selected, the σ/π with a selection on the name, which the
// drain evaluates for the session (its sieve; every record passes it);
// count-bare, TestKernelCountsEveryCall's count of the target's calls,
// its results counted and not printed (as that test does).
func BenchmarkConsumer(b *testing.B) {
	for _, q := range []struct {
		name, text string
		print      bool
	}{{"select", selectCalls, true}, {"count", countGetppid, true}, {"selected", selectGetppid, true}, {"count-bare", countTargetGetppid, false}} {
		b.Run(q.name, func(b *testing.B) { benchConsumer(b, q.text, q.print) })
	}
}

func benchConsumer(b *testing.B, text string, print bool) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	c := consumeVia(b, s, text, 0, nil, s.Local(), print)
	defer c.stop()
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	write(s, b.N)
	if !c.wait(int64(b.N), 10*time.Second) { // one result element per event
		b.Fatalf("%d of %d result elements printed", c.seen.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/event")
}

// A consumer that falls far behind — it stops for two leases while
// 300,000 records come through an 8 MiB ring, far more than its session
// may hold (session.MaxHeld) — loses nothing: what its session cannot
// hold waits in the drain and then in the ring (the producer here waits
// for room, as programs cannot: they would count drops), and its lease,
// renewed beside the busy consumer, does not expire. Before, the
// session dropped what did not fit (256,310 printed of 300,000) and the
// lease, renewed only between batches, ran out.
//
// The lease is 1 s (it was 200 ms, with a stop of five leases): a
// renewal goes every lease/3, so a lease expires only when the renewing
// goroutine gets no turn for 2/3 of it, which at a load of 25 on two
// cores happened within 133 ms (the lease ran out while the consumer
// caught up, 81,920 of 300,000 printed). A stop of two leases still
// outlasts the lease, so a consumer renewing only between batches loses
// its session as before.
func TestConsumerBehindLosesNothing(t *testing.T) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	const n, lease = 300000, time.Second
	c := consume(t, s, lease, func(k int64) {
		if k == 20000 {
			time.Sleep(2 * lease)
		}
	})
	write(s, n)
	ok := c.wait(n, 10*time.Second)
	s.Close()
	c.stop()
	if !ok {
		t.Errorf("%d of %d results printed", c.seen.Load(), n)
	}
	if c.err != nil {
		t.Errorf("the run ended with %v", c.err)
	}
	if d, l := c.stats.Dropped["Syscall"], c.losses.Load(); d != 0 || l != 0 {
		t.Errorf("%d packets dropped, %d reported lost", d, l)
	}
}

// cpuTime is the process's CPU time (user and system), in ns.
func cpuTime() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// A drain whose session is full leaves the records in the ring, holding
// only notes of them: filled while the consumer is stopped — its session
// full (session.MaxHeld), the ring full — the drain holds at most the
// records the ring holds, in at most RingBytes of notes (25 bytes a
// record, with the slack of growth; before, it copied the records it
// held into arenas: at least the ring's size once it was full, up to
// three times).
func TestDrainHoldsNoBytes(t *testing.T) {
	const ringBytes = 1 << 20
	s, err := kernel.NewSynthetic(ringBytes)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	hold := make(chan struct{})
	c := consume(t, s, 0, func(k int64) {
		if k == 1 {
			<-hold
		}
	})
	defer c.stop()
	defer close(hold)
	// Write until no room comes for a while: the session and the ring
	// are full.
	for idle := time.Now(); time.Since(idle) < 300*time.Millisecond; {
		if s.Write(1024) > 0 {
			idle = time.Now()
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	records, bytes := s.DrainHeld()
	t.Logf("the drain holds %d records in %d bytes; the ring holds %d records in %d bytes", records, bytes, ringBytes/s.RecordBytes(), ringBytes)
	if records == 0 || records > ringBytes/s.RecordBytes() {
		t.Errorf("the drain holds %d records; the ring holds %d", records, ringBytes/s.RecordBytes())
	}
	if bytes > ringBytes {
		t.Errorf("the drain holds %d bytes for them, more than the ring's %d", bytes, ringBytes)
	}
}

// dropping is a connection whose every batch says one more Syscall packet
// was dropped: a loss that goes on rising.
type dropping struct {
	wire.Conn
	sensor uint16
	drops  uint64
}

func (c *dropping) Recv() (*wire.Batch, error) {
	b, err := c.Conn.Recv()
	if b != nil {
		c.drops++
		b.Counts = append(b.Counts, wire.Count{Sensor: c.sensor, Wanted: c.drops, Drops: c.drops})
	}
	return b, err
}

func (c *dropping) Release(b *wire.Batch) { c.Conn.(wire.Releaser).Release(b) }

// A loss that keeps rising holds the watermark back until it is
// reported — at most a second (flushEvery) — but the inputs it holds
// back are bounded: it is reported once 32,768 wait (and a chunk of a
// batch), not after a second's worth of packets (before, 300,000 records
// in under a second all waited).
func TestLossHoldsBackBounded(t *testing.T) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	conn := &dropping{Conn: s.Local(), sensor: uint16(slices.Index(s.R.Hello().Sensors, "Syscall"))}
	c := consumeVia(t, s, selectCalls, 0, nil, conn, true)
	const n = 300000
	start := time.Now()
	write(s, n)
	took := time.Since(start)
	time.Sleep(50 * time.Millisecond)
	s.Close()
	c.stop()
	const bound = 1<<15 + 4096
	t.Logf("%d records written in %v; at most %d inputs waited; %d losses reported", n, took, c.stats.PeakQueued, c.losses.Load())
	if c.stats.PeakQueued == 0 || c.stats.PeakQueued > bound {
		t.Errorf("%d inputs waited at once; bound %d", c.stats.PeakQueued, bound)
	}
}

// The drain allocates nothing per event in steady state: a session whose
// receiver takes and releases its batches, now and then rounds behind,
// gets each round's packets and values in the storage its released
// batches gave back (Handoff, session.MaxFree), and
// the drain's notes, packets and arena keep their capacity from round to
// round. Before, each event cost ≈90 bytes (the mailbox's copies into
// batches merged while the receiver was behind, and their growth).
func TestDrainAllocations(t *testing.T) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		t.Skip(err)
	}
	defer s.Close()
	conn := s.Local()
	id := slices.Index(s.R.Hello().Sensors, "Syscall")
	if err := conn.Send(&wire.Command{Kind: wire.CEnable, Sensor: uint16(id), Entity: strconv.Itoa(kernel.SynthPid)}); err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	go func() {
		batches := 0
		for {
			b, err := conn.Recv()
			if err != nil {
				return
			}
			got.Add(int64(len(b.Packets)))
			if batches++; batches%4 == 0 {
				time.Sleep(3 * time.Millisecond) // behind by a few rounds
			}
			conn.(wire.Releaser).Release(b)
		}
	}()
	feed := func(n int) {
		want := got.Load() + int64(n)
		write(s, n)
		for deadline := time.Now().Add(10 * time.Second); got.Load() < want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if got.Load() < want {
			t.Fatalf("%d of %d packets received", got.Load(), want)
		}
	}
	feed(1000000) // warm up: the storage grows to its steady size
	// The median of five spans of 200,000 events: a span in which the
	// receiver, descheduled on a loaded machine, fell further behind (its
	// rounds copied into one batch, grown) is not the steady state.
	const n = 200000
	var allocs, bytes []float64
	for range 5 {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		feed(n)
		runtime.ReadMemStats(&m1)
		allocs = append(allocs, float64(m1.Mallocs-m0.Mallocs)/n)
		bytes = append(bytes, float64(m1.TotalAlloc-m0.TotalAlloc)/n)
	}
	t.Logf("allocations an event %.4f, bytes an event %.2f (spans: %.2f)", median(allocs), median(bytes), bytes)
	if a, b := median(allocs), median(bytes); a > 0.01 || b > 4 {
		t.Errorf("%.4f allocations, %.2f bytes an event (medians); bound 0.01, 4 bytes", a, b)
	}
}
