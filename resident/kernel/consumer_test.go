package kernel_test

import (
	"context"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/algebra"
	"github.com/tqmon/tqmon/algebra/check"
	"github.com/tqmon/tqmon/algebra/stream"
	"github.com/tqmon/tqmon/display/format"
	"github.com/tqmon/tqmon/query"
	"github.com/tqmon/tqmon/remote"
	"github.com/tqmon/tqmon/resident/kernel"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/subject"
)

// BenchmarkConsumer measures the user-space consumer of kernel events
// for a σ/π query — ring records read and decoded by the drain, handed to
// the in-process remote, run through the query's network and printed (to
// io.Discard, as subject.Print does) — with synthetic ring records (no BPF): b.N getppid records
// written into an 8 MiB ring as fast as the consumer frees room. It
// reports events/s (wall clock) and the process's CPU time per event
// (the writer's share is a copy of a few bytes).
func BenchmarkConsumer(b *testing.B) {
	s, err := kernel.NewSynthetic(8 << 20)
	if err != nil {
		b.Skip(err)
	}
	defer s.Close()
	prog, err := query.Compile(s.R.Catalog(), []query.Source{{Name: "q", Text: `range of s is Syscall retrieve (s.Name, s.Thread) where s.Process = $target`}},
		check.Options{Params: map[string]string{"target": strconv.Itoa(kernel.SynthPid)}})
	if err != nil {
		b.Fatal(err)
	}
	out, _ := format.ParseOptions("table", "", "utc")
	var seen atomic.Int64
	all := make(chan struct{})
	ready := make(chan struct{})
	pr := subject.NewPrinter(io.Discard, out, prog.Stmts)
	defer pr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, err := remote.RunLive(ctx, prog, []wire.Conn{s.Local()}, remote.LiveOptions{
			Ready:    func() { close(ready) },
			Discard:  true,
			Progress: func(algebra.Time) { pr.Settle() },
			OnElem: func(i int, e stream.Elem) {
				pr.Elem(i, e)
				if seen.Add(1) == int64(b.N) {
					close(all)
				}
			}})
		if err != nil {
			b.Error(err)
		}
	}()
	<-ready
	cpu0 := cpuTime()
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; {
		k := s.Write(min(1024, b.N-n))
		if k == 0 {
			time.Sleep(20 * time.Microsecond)
		}
		n += k
	}
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		b.Fatalf("%d of %d events printed", seen.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/event")
	cancel()
	s.Close()
	wg.Wait()
}

// cpuTime is the process's CPU time (user and system), in ns.
func cpuTime() int64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
