// Package demo is the paper's example subject system as a real concurrent
// Go program, instrumented with sensors generated from os.sdl: processor
// goroutines run processes; a running process works for a while, sends a
// message to a mailbox and then receives from its own mailbox, blocking
// while it is empty; a scheduler (the ready queue) moves processes between
// Ready, Running, Waiting and Done. Entities are named as in the paper:
// processors A, B, C…, processes P1, P2…, mailboxes M1, M2….
//
// Time runs fast: the resident's clock (Clock) reports subject time, one
// subject second per real millisecond by default, starting at 0, so
// results read like the paper's (2:00:05 is two subject hours in).
package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tqmon/tqmon/resident"
	"github.com/tqmon/tqmon/resident/demo/ossensors"
)

// Config shapes a run.
type Config struct {
	Seed       uint64
	Processors int
	Processes  int
	Mailboxes  int
	// Sends is how many messages each process sends before it is done
	// (0: no limit; the system runs until stopped).
	Sends int
	// Fanout, when positive, makes Pi send only to the Fanout mailboxes
	// after its own; 0 sends anywhere.
	Fanout int
	// Burst bounds a running burst in subject seconds (default 5).
	Burst int
	// Scale is subject seconds per real second (default 1000).
	Scale float64
}

// DefaultConfig is the demo's default workload.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Processors: 3, Processes: 8, Mailboxes: 8, Sends: 0, Fanout: 2, Burst: 5, Scale: 1000}
}

func (c *Config) fill() {
	if c.Processors <= 0 {
		c.Processors = 3
	}
	if c.Processes <= 0 {
		c.Processes = 8
	}
	if c.Mailboxes <= 0 {
		c.Mailboxes = c.Processes
	}
	if c.Burst <= 0 {
		c.Burst = 5
	}
	if c.Scale <= 0 {
		c.Scale = 1000
	}
}

// SubjectClock is the demo's clock: subject nanoseconds since it was
// made, scale times faster than real time, until Stop freezes it (so the
// resident's last watermark is the end of the observation).
type SubjectClock struct {
	start   time.Time
	scale   float64
	stopped atomic.Int64 // frozen time + 1, or 0
}

// NewClock starts a subject clock.
func NewClock(scale float64) *SubjectClock {
	if scale <= 0 {
		scale = 1000
	}
	return &SubjectClock{start: time.Now(), scale: scale}
}

// Now is the subject time.
func (c *SubjectClock) Now() int64 {
	if s := c.stopped.Load(); s != 0 {
		return s - 1
	}
	return int64(float64(time.Since(c.start)) * c.scale)
}

// Stop freezes the clock and returns the time it stopped at.
func (c *SubjectClock) Stop() int64 {
	t := c.Now()
	c.stopped.CompareAndSwap(0, t+1)
	return c.stopped.Load() - 1
}

// Options returns resident options for a demo run on clock: subject time
// starting at global time 0.
func Options(clock *SubjectClock, truth resident.TruthSink) resident.Options {
	return resident.Options{
		Name:  "demo",
		Truth: truth,
		Clock: clock.Now,
		Wall:  func() int64 { return 0 },
	}
}

type process struct {
	id    int
	h     ossensors.Process
	sent  int
	home  int
	wait  ossensors.WaitingTuple
	state ossensors.ProcessState
}

type mailbox struct {
	h       ossensors.Mailbox
	pending int
	blocked []*process
}

// System is a running demo subject.
type System struct {
	cfg   Config
	s     *ossensors.Sensors
	rng   *rand.Rand
	mu    sync.Mutex // guards the whole system state
	procs []*process
	mbox  []*mailbox
	cpus  []ossensors.Processor
	ready chan *process
	quit  chan struct{} // closed when every process is done
	busy  int           // processes running or ready
	done  int
	// bursts counts the running bursts completed: the subject's work,
	// whose rate says how fast it runs.
	bursts atomic.Int64
}

// Bursts returns how many running bursts the system has completed.
func (sys *System) Bursts() int64 { return sys.bursts.Load() }

// New creates the subject's entities (processors, mailboxes, processes,
// all Ready) and returns the system, not yet running.
func New(s *ossensors.Sensors, cfg Config) *System {
	cfg.fill()
	sys := &System{cfg: cfg, s: s, rng: rand.New(rand.NewPCG(cfg.Seed, 0xdeca)),
		ready: make(chan *process, cfg.Processes), quit: make(chan struct{})}
	for i := 0; i < cfg.Processors; i++ {
		sys.cpus = append(sys.cpus, s.NewProcessor(cpuName(i)))
	}
	for i := 0; i < cfg.Mailboxes; i++ {
		sys.mbox = append(sys.mbox, &mailbox{h: s.NewMailbox(fmt.Sprintf("M%d", i+1))})
	}
	for i := 0; i < cfg.Processes; i++ {
		p := &process{id: i, home: i % cfg.Mailboxes, state: ossensors.ProcessStateReady}
		p.h = s.NewProcess(fmt.Sprintf("P%d", i+1), ossensors.ProcessStateReady)
		sys.procs = append(sys.procs, p)
		sys.ready <- p
		sys.busy++
	}
	return sys
}

func cpuName(i int) string {
	if i < 26 {
		return string(rune('A' + i))
	}
	return fmt.Sprintf("CPU%d", i+1)
}

func (sys *System) setState(p *process, st ossensors.ProcessState) {
	if p.state != st {
		p.state = st
		sys.s.SetProcessState(p.h, st)
	}
}

// Run runs the system until every process is done or ctx ends; processors
// stop between bursts, leaving blocked processes Waiting.
func (sys *System) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for c := range sys.cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sys.processor(ctx, c)
		}()
	}
	wg.Wait()
}

func (sys *System) processor(ctx context.Context, c int) {
	cpu := sys.cpus[c]
	for {
		var p *process
		select {
		case <-ctx.Done():
			return
		case <-sys.quit:
			return
		case p = <-sys.ready:
		}
		sys.mu.Lock()
		if ctx.Err() != nil {
			sys.ready <- p // leave it ready
			sys.mu.Unlock()
			return
		}
		sys.setState(p, ossensors.ProcessStateRunning)
		run := sys.s.RunningOnBegin(p.h, cpu)
		burst := 1 + sys.rng.IntN(sys.cfg.Burst)
		sys.mu.Unlock()

		// Work: a burst of subject seconds.
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(float64(burst) * float64(time.Second) / sys.cfg.Scale)):
		}

		sys.mu.Lock()
		sys.bursts.Add(1)
		sys.s.RunningOnEnd(run)
		sys.send(p)
		sys.after(p)
		if sys.busy == 0 {
			close(sys.quit)
		}
		sys.mu.Unlock()
	}
}

// send: the burst ends with a message to a mailbox; it resumes the first
// process blocked there, if any.
func (sys *System) send(p *process) {
	to := sys.rng.IntN(sys.cfg.Mailboxes)
	if sys.cfg.Fanout > 0 {
		to = (p.home + 1 + sys.rng.IntN(sys.cfg.Fanout)) % sys.cfg.Mailboxes
	}
	m := sys.mbox[to]
	sys.s.SendMessage(p.h, m.h)
	p.sent++
	if len(m.blocked) > 0 {
		w := m.blocked[0]
		m.blocked = m.blocked[1:]
		sys.s.WaitingEnd(w.wait)
		sys.setState(w, ossensors.ProcessStateReady)
		sys.busy++
		sys.ready <- w
		return
	}
	m.pending++
}

// after: the process receives from its own mailbox (blocking if it is empty
// and someone could still wake it) or is done.
func (sys *System) after(p *process) {
	home := sys.mbox[p.home]
	switch {
	case sys.cfg.Sends > 0 && p.sent >= sys.cfg.Sends:
		sys.setState(p, ossensors.ProcessStateDone)
		sys.busy--
		sys.done++
	case home.pending > 0:
		home.pending--
		sys.setState(p, ossensors.ProcessStateReady)
		sys.ready <- p
	case sys.busy <= 1:
		// Nobody else is ready or running: blocking would deadlock.
		sys.setState(p, ossensors.ProcessStateReady)
		sys.ready <- p
	default:
		sys.setState(p, ossensors.ProcessStateWaiting)
		p.wait = sys.s.WaitingBegin(p.h, home.h)
		home.blocked = append(home.blocked, p)
		sys.busy--
	}
}
