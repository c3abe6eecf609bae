package resident

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
)

// Hostile monitors: whatever a monitor does, the subject keeps running,
// its resident's memory stays bounded, an honest monitor is served and
// every loss is counted. The bounds asserted:
//
//   - heap: the growth over the test stays under hostileHeap (the
//     sessions' packets are at most session.MaxHeldTotal, ≈ 80 MB at the
//     worst; these tests hold far fewer);
//   - the subject's rate: its operations go on at least at
//     hostileMinRate of its rate with the honest monitor alone (the same
//     test), and no operation waits more than hostileMaxStall, or three
//     times the longest wait with the honest monitor alone (generous:
//     the machines these tests run on are shared, and a descheduled
//     thread waits tens of milliseconds; before the bounds, a hostile
//     monitor stopped the subject for seconds);
//   - counts: per sensor and session, delivered + dropped = wanted.

const (
	hostileHeap     = 96 << 20
	hostileMinRate  = 0.33
	hostileMaxStall = 250 * time.Millisecond
)

func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// subject runs a subject for d: each operation does some work, fires
// SendMessage and, every 64th, changes an entity's state (an entity
// relation packet, under the resident's lock). It returns the operations
// per second and the longest an operation took.
func subject(r *Resident, d time.Duration) (rate float64, stall time.Duration) {
	send := r.Sensor(sSendMessage)
	p := r.Create(tProcess, fmt.Sprint("subject-", time.Now().UnixNano()), nil)
	m := r.Create(tMailbox, "M", nil)
	defer p.Delete()
	x, n := uint64(1), 0
	start := time.Now()
	last := start
	for {
		for range 64 {
			x = subjectOp(x)
			ev(send, Value{E: p}, Value{E: m})
			n++
		}
		p.SetState([]Value{{N: x & 7}})
		now := time.Now()
		stall = max(stall, now.Sub(last))
		last = now
		if now.Sub(start) >= d {
			benchSink = x
			return float64(n) / now.Sub(start).Seconds(), stall
		}
	}
}

// honest receives a session's batches until it ends, checking their
// order and counting packets per sensor (keeping none: the heap measured
// is the resident's).
type honest struct {
	delivered map[uint16]uint64
	counts    map[uint16]wire.Count
	done      chan error
	err       error
}

func serve(s *Session) *honest {
	h := &honest{delivered: map[uint16]uint64{}, counts: map[uint16]wire.Count{}, done: make(chan error, 1)}
	go func() {
		lastW := int64(-1 << 63)
		for {
			b, err := s.Recv(context.Background())
			if err != nil {
				h.done <- err
				return
			}
			for _, p := range b.Packets {
				if p.TS <= lastW {
					h.done <- fmt.Errorf("packet at %d after watermark %d", p.TS, lastW)
					return
				}
				h.delivered[p.Sensor]++
			}
			lastW = b.Watermark
			for _, c := range b.Counts {
				h.counts[c.Sensor] = c
			}
			s.Release(b)
		}
	}()
	return h
}

// ended waits for the session's end (ErrClosed), then asserts delivered
// + dropped = wanted for each sensor of sids (exact: only this session
// wants their packets).
func (h *honest) ended(t *testing.T, who string, sids ...SensorID) {
	t.Helper()
	if h.done != nil {
		h.err, h.done = <-h.done, nil
	}
	if !errors.Is(h.err, ErrClosed) {
		t.Fatalf("%s: session ended with %v", who, h.err)
	}
	for _, sid := range sids {
		c, n := h.counts[uint16(sid)], h.delivered[uint16(sid)]
		t.Logf("%s: sensor %d: delivered %d, dropped %d, wanted %d", who, sid, n, c.Drops, c.Wanted)
		if n+c.Drops != c.Wanted {
			t.Errorf("%s: sensor %d: delivered %d + dropped %d != wanted %d", who, sid, n, c.Drops, c.Wanted)
		}
		if c.Drops*2 > c.Wanted {
			t.Errorf("%s: sensor %d: lost %d of %d", who, sid, c.Drops, c.Wanted)
		}
	}
}

// baseline is the subject with an honest monitor alone: its session, its
// rate and longest operation, and the heap then.
type baseline struct {
	s     *Session
	rate  float64
	stall time.Duration
	heap  uint64
}

// honestBaseline opens an honest session (SendMessage enabled, its
// batches received) and measures the subject beside it.
func honestBaseline(t *testing.T, r *Resident) (*honest, baseline) {
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	h := serve(s)
	rate, stall := subject(r, 500*time.Millisecond)
	return h, baseline{s, rate, stall, heapInUse()}
}

func checkSubject(t *testing.T, base baseline, rate float64, stall time.Duration) {
	t.Helper()
	t.Logf("subject: %.0f ops/s alone, %.0f with the monitors (%.2f); longest operation %v (%v alone)", base.rate, rate, rate/base.rate, stall, base.stall)
	if rate < hostileMinRate*base.rate {
		t.Errorf("subject ran at %.0f ops/s, under %.0f%% of its %.0f ops/s alone", rate, 100*hostileMinRate, base.rate)
	}
	if bound := max(hostileMaxStall, 3*base.stall); stall > bound {
		t.Errorf("a subject operation took %v (bound %v)", stall, bound)
	}
}

func checkHeap(t *testing.T, before uint64) {
	t.Helper()
	after := heapInUse()
	grew := int64(after) - int64(before)
	t.Logf("heap grew %.1f MB", float64(grew)/(1<<20))
	if grew > hostileHeap {
		t.Errorf("heap grew %d MB (bound %d MB)", grew>>20, hostileHeap>>20)
	}
}

// A monitor that keeps its lease and never reads: what it is not sent is
// dropped and counted, its resident does not grow, an honest monitor
// beside it is served. The subject's rate is compared with its rate with
// the honest monitor alone.
func TestHostileNeverReads(t *testing.T) {
	r := New(testSpec(), Options{})
	defer r.Close()
	h, base := honestBaseline(t, r)
	bad := r.Open()
	mustApply(t, bad, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	send := r.Sensor(sSendMessage)
	// The counts are the sensor's, from the start; the silent session
	// wanted its packets from now on (the subject is not running: exact).
	dropsBefore := send.drops.Load()
	before := send.wanted.Load() + dropsBefore
	rate, stall := subject(r, 2*time.Second)
	if held := r.budget.Held(); held > session.MaxHeldTotal {
		t.Errorf("sessions hold %d packets (at most %d)", held, session.MaxHeldTotal)
	}
	checkHeap(t, base.heap)
	r.Close()
	h.ended(t, "honest", sSendMessage)
	// The silent monitor finally reads: what it held, and its drops.
	st := newStream(t, bad)
	if err := st.toEnd(); !errors.Is(err, ErrClosed) {
		t.Fatalf("silent session ended with %v", err)
	}
	n := uint64(0)
	for _, p := range st.pkts {
		if p.Sensor == uint16(sSendMessage) {
			n++
		}
	}
	c := st.counts[uint16(sSendMessage)]
	c.Wanted -= before
	c.Drops -= dropsBefore
	t.Logf("silent: delivered %d, dropped %d, wanted %d", n, c.Drops, c.Wanted)
	if n+c.Drops != c.Wanted || c.Drops == 0 || n > session.MaxHeld {
		t.Errorf("silent monitor: delivered %d + dropped %d, wanted %d: want drops, and at most %d delivered", n, c.Drops, c.Wanted, session.MaxHeld)
	}
	checkSubject(t, base, rate, stall)
}

// A monitor that pauses (stops reading and renewing) past its lease: its
// session ends, what it enabled is undone, what it held is freed. A lease
// over session.MaxLease is refused.
func TestHostilePausedPastLease(t *testing.T) {
	r := New(testSpec(), Options{})
	defer r.Close()
	h, base := honestBaseline(t, r)
	bad := r.Open()
	if err := bad.Apply(&wire.Command{Kind: wire.CLease, Period: int64(session.MaxLease + 1)}); !isCmdErr(err, "period") {
		t.Errorf("a lease over MaxLease: %v", err)
	}
	mustApply(t, bad, wire.Command{Kind: wire.CLease, Period: int64(200 * time.Millisecond)})
	mustApply(t, bad, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	rate, stall := subject(r, time.Second)
	if _, err := bad.Recv(context.Background()); !errors.Is(err, ErrLeaseExpired) {
		t.Errorf("paused session: %v, want the lease expired", err)
	}
	checkHeap(t, base.heap)
	r.Close()
	h.ended(t, "honest", sSendMessage)
	if held := r.budget.Held(); held != 0 {
		t.Errorf("%d packets still held after every session ended", held)
	}
	checkSubject(t, base, rate, stall)
}

// Sampling: a session asks for 1,000 samplers (more than it may), at the
// shortest periods, over a large state table, then closes; a period
// below the shortest is refused. The subject does not wait on the
// samplers, closing does not wait on a sampling round, and an honest
// monitor is served.
func TestHostileSamplers(t *testing.T) {
	r := New(testSpec(), Options{})
	defer r.Close()
	run := r.Sensor(sRunningOn)
	cpu := r.Create(tProcessor, "CPU", nil)
	p := r.Create(tProcess, "P", nil)
	for range 5000 {
		run.StateBegin([]Value{{E: p}, {E: cpu}})
	}
	h, base := honestBaseline(t, r)
	if err := base.s.Apply(&wire.Command{Kind: wire.CSample, ID: 2, Sensor: uint16(sRunningOn), All: true, Period: minSamplePeriod - 1}); !isCmdErr(err, "period") {
		t.Errorf("a period below the shortest: %v", err)
	}
	bad := r.Open()
	refused := 0
	for i := range 1000 {
		err := bad.Apply(&wire.Command{Kind: wire.CSample, ID: uint64(i), Sensor: uint16(sRunningOn), All: true, Period: minSamplePeriod + int64(i)*1000})
		switch {
		case err == nil:
		case isCmdErr(err, "id"):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if refused != 1000-maxSamplers {
		t.Errorf("%d of 1000 sampling requests refused, want %d", refused, 1000-maxSamplers)
	}
	closed := make(chan time.Duration, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		bad.Close()
		closed <- time.Since(start)
	}()
	rate, stall := subject(r, time.Second)
	took := <-closed
	if took > hostileMaxStall {
		t.Errorf("closing the session with %d samplers took %v", maxSamplers, took)
	}
	checkHeap(t, base.heap)
	sampled := run.wanted.Load()
	r.Close()
	h.ended(t, "honest", sSendMessage)
	t.Logf("%d samples wanted by the sampling session; closing it took %v", sampled, took)
	checkSubject(t, base, rate, stall)
}

// Enables for entities that do not exist: a session holds at most
// session.MaxEnables keys; the rest are refused.
func TestHostileUnknownEnables(t *testing.T) {
	r := New(testSpec(), Options{})
	defer r.Close()
	heap := heapInUse()
	s := r.Open()
	refused := 0
	for i := range 300_000 {
		err := s.Apply(&wire.Command{Kind: wire.CEnable, Sensor: uint16(sSendMessage), Type: uint16(tProcess), Entity: fmt.Sprint("nobody-", i)})
		switch {
		case err == nil:
		case isCmdErr(err, "entity"):
			refused++
		default:
			t.Fatal(err)
		}
	}
	if want := 300_000 - session.MaxEnables; refused != want {
		t.Errorf("%d enables refused, want %d", refused, want)
	}
	checkHeap(t, heap)
	s.Close()
}

// A busy subject: producers on every P flood small rings while a monitor
// reads. Entity operations never wait long on a full ring, and every
// packet is delivered or counted.
func TestHostileBusySubject(t *testing.T) {
	r := New(testSpec(), Options{Slots: 1 << 10})
	defer r.Close()
	s := r.Open()
	mustApply(t, s, wire.Command{Kind: wire.CEnableAll, Sensor: uint16(sSendMessage)})
	h := serve(s)
	var stop atomic.Bool
	var wg sync.WaitGroup
	send := r.Sensor(sSendMessage)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, m := r.Create(tProcess, "flood", nil), r.Create(tMailbox, "M", nil)
			for !stop.Load() {
				for range 1024 {
					ev(send, Value{E: p}, Value{E: m})
				}
				runtime.Gosched()
			}
		}()
	}
	_, stall := subject(r, time.Second)
	stop.Store(true)
	wg.Wait()
	r.Close()
	if err := <-h.done; !errors.Is(err, ErrClosed) {
		t.Fatalf("session ended with %v", err)
	}
	for _, sid := range []SensorID{sSendMessage, sProcess} {
		c, n := h.counts[uint16(sid)], h.delivered[uint16(sid)]
		t.Logf("sensor %d: delivered %d, dropped %d, wanted %d", sid, n, c.Drops, c.Wanted)
		if n+c.Drops != c.Wanted {
			t.Errorf("sensor %d: delivered %d + dropped %d != wanted %d", sid, n, c.Drops, c.Wanted)
		}
	}
	// The flood takes every P from the subject: the bound is that it
	// never stops (before, an entity operation waited on a full ring
	// for as long as the drain took), not its rate.
	if stall > 10*hostileMaxStall {
		t.Errorf("a subject operation took %v (bound %v)", stall, 10*hostileMaxStall)
	}
}
