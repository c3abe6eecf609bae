// Command instrument is the example program of docs/instrument.md: a small
// job runner — jobs submitted to a queue, workers running them — whose
// sensors tqmon monitors live. Its sensors are generated from jobs.sdl
// (go generate); one call, jobsensors.Serve, is all the glue it needs.
//
//	go run ./docs/examples/instrument -listen /tmp/jobs.sock &
//	tqmon query --connect /tmp/jobs.sock --duration 2s \
//	    -e 'range of r is Runs retrieve (r.Job, r.Worker)'
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tqmon/tqmon/docs/examples/instrument/jobsensors"
)

func main() {
	listen := flag.String("listen", "/tmp/jobs.sock", "where monitors connect: a unix socket path, or host:port with $TQMON_TOKEN set")
	workers := flag.Int("workers", 3, "number of workers")
	every := flag.Duration("every", 20*time.Millisecond, "a job is submitted this often; a job of size n runs n times this long")
	duration := flag.Duration("duration", 0, "stop after this long (0: until interrupted)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	// The glue: a resident monitor for the sensors, served at -listen until
	// ctx ends. Sensors cost one atomic load each until a monitor's query
	// enables them.
	sensors, err := jobsensors.Serve(ctx, *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "instrument:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "instrument: serving monitors at %s\n", *listen)
	run(ctx, sensors, *workers, *every)
}

// run submits a job every tick and has workers run them until ctx ends.
func run(ctx context.Context, s *jobsensors.Sensors, workers int, every time.Duration) {
	queue := make(chan jobsensors.Job, 64)
	var wg sync.WaitGroup
	for i := 1; i <= workers; i++ {
		w := s.NewWorker(fmt.Sprintf("W%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.DeleteWorker(w)
			for job := range queue {
				t := s.RunsBegin(job, w) // an interval of Runs begins…
				time.Sleep(time.Duration(size(job)) * every)
				s.RunsEnd(t) // …and ends
				s.DeleteJob(job)
			}
		}()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			close(queue)
			wg.Wait()
			return
		case <-tick.C:
		}
		sz := int64(1 + n%4)
		job := s.NewJob(fmt.Sprintf("J%d", n), sz)
		s.Submitted(job, sz) // an event
		select {
		case queue <- job:
		default: // the queue is full: the job is dropped
			s.DeleteJob(job)
		}
	}
}

// size is a job's size, kept in its ID's number (J7 → 1 + 7%4).
func size(j jobsensors.Job) int64 {
	var n int64
	fmt.Sscanf(j.ID(), "J%d", &n)
	return 1 + n%4
}
