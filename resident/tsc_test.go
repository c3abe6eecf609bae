package resident

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// synthTicks is a synthetic counter and monotonic clock: the counter runs
// at ticksPerNs; the monotonic clock is at mono(tick), which the test may
// make slew. Each sample advances the counter by step ticks.
type synthTicks struct {
	tick uint64
	step uint64
	mono func(tick uint64) int64
}

func (s *synthTicks) sample() (uint64, int64) {
	s.tick += s.step
	return s.tick, s.mono(s.tick)
}

// The TSC clock's function is increasing, continuous across segments,
// and follows the monotonic clock: within the slew limit of a wrong
// initial rate, and to within a few ns once converged, also when the
// monotonic clock changes rate (as NTP slews it) and across long gaps.
func TestTSCClockFollowsMonotonic(t *testing.T) {
	const base = uint64(1) << 40
	// 2.6 ticks per ns; from tick base+26e9 (10 s in) the monotonic clock
	// runs 200 ppm fast.
	slewAt := base + 26_000_000_000
	mono := func(tick uint64) int64 {
		ns := float64(tick-base) / 2.6
		if tick > slewAt {
			ns += float64(tick-slewAt) / 2.6 * 200e-6
		}
		return 1e15 + int64(ns)
	}
	src := &synthTicks{tick: base, step: 2600, mono: mono} // 1 µs a sample
	c := newTSCClock(src.sample, tscSpan, tscCalibrate)
	// (src.tick is the counter now; a sample, taken when a segment is
	// defined, moves it on by a microsecond.)
	prevT, prev := src.tick, c.at(src.tick)
	worst := map[string]float64{}
	// Read every 1.3 ms for 30 s, then once after a gap of an hour.
	for i := 0; i < 23_000; i++ {
		src.tick += 3_380_000
		tick := src.tick
		ns := c.at(tick)
		if ns <= prev {
			t.Fatalf("tick %d: f = %d after f(%d) = %d", tick, ns, prevT, prev)
		}
		// The rate between reads is the true one within the slew bound
		// (plus rounding).
		if r := float64(ns-prev) / float64(tick-prevT); math.Abs(r*2.6-1) > 600e-6 {
			t.Fatalf("tick %d: rate %g ns/tick", tick, r)
		}
		prevT, prev = tick, ns
		off := math.Abs(float64(ns - mono(tick)))
		phase := "converged"
		switch {
		case tick < base+2_600_000_000: // the first second
			phase = "first second"
		case tick > slewAt && tick < slewAt+2_600_000_000:
			phase = "first second of slew"
		}
		worst[phase] = max(worst[phase], off)
	}
	t.Logf("worst |f - monotonic| ns: %v", worst)
	if worst["converged"] > 100 || worst["first second of slew"] > 20_000 {
		t.Fatalf("f strays from the monotonic clock: %v", worst)
	}
	src.tick += 2_600_000_000 * 3600
	tick := src.tick
	if ns := c.at(tick); ns <= prev || math.Abs(float64(ns-mono(tick))) > 1e-3*3600e9 {
		t.Fatalf("after an hour's gap: f = %d, monotonic %d", ns, mono(tick))
	}
	// Same tick, same time; a tick before the segment is clamped.
	s := c.seg.Load()
	if c.at(src.tick) != c.at(src.tick) || c.at(s.t0-5) != s.ns0 {
		t.Fatal("f is not a function of the tick")
	}
}

// On this machine, if it has a usable TSC: the clock never goes back in
// one goroutine, never goes back along a chain of synchronising
// goroutines (RDTSCP reads after the load that saw the other's time), and
// stays within microseconds of nanotime.
func TestTSCClockReal(t *testing.T) {
	if !tscUsable() {
		t.Skip("no usable TSC here (needs amd64, an invariant TSC, RDTSCP and the kernel's clocksource tsc): the resident reads nanotime")
	}
	c := newTSCClock(tscSample, 10*time.Millisecond, tscCalibrate)
	var last atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	stop := time.Now().Add(300 * time.Millisecond)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine int64
			for time.Now().Before(stop) {
				seen := last.Load()
				ns := c.now()
				if ns < mine || ns < seen {
					errs <- "clock went back"
					return
				}
				mine = ns
				for old := last.Load(); old < ns && !last.CompareAndSwap(old, ns); old = last.Load() {
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	// The offset, from the tightest of many brackets (a bracket the
	// thread was descheduled in says nothing).
	var off int64
	width := int64(math.MaxInt64)
	for range 1000 {
		n1 := nanotime()
		ns := c.now()
		n2 := nanotime()
		if n2-n1 < width {
			off, width = ns-(n1+n2)/2, n2-n1
		}
	}
	t.Logf("tsc clock - nanotime = %d ns (±%d) after 300 ms", off, width/2)
	if off > 20_000 || off < -20_000 {
		t.Fatalf("TSC clock %d ns from nanotime", off)
	}
}

func TestMembarrier(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("membarrier is Linux's")
	}
	if !membarrierOK() {
		t.Skip("membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) refused: claims use atomic stores")
	}
	membarrier() // must not fail or hang
	r := New(testSpec(), Options{})
	defer r.Close()
	if r.plain != plainStores {
		t.Fatalf("plain claims %v on an architecture where storeRel is plain: %v", r.plain, plainStores)
	}
}

var clockSink int64

// The clock a packet is stamped with: the TSC clock against the runtime's
// monotonic clock it replaces (same run).
func BenchmarkClockTSC(b *testing.B) {
	if !tscUsable() {
		b.Skip("no usable TSC here")
	}
	c := newTSCClock(tscSample, tscSpan, tscCalibrate)
	for i := 0; i < b.N; i++ {
		clockSink += c.now()
	}
}

func BenchmarkClockNanotime(b *testing.B) {
	for i := 0; i < b.N; i++ {
		clockSink += nanotime()
	}
}

// What the drain pays once a round (1 ms) for fence-free claims.
func BenchmarkMembarrier(b *testing.B) {
	if runtime.GOOS != "linux" || !membarrierOK() {
		b.Skip("no private expedited membarrier here")
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a subject thread running on the other CPU
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for i := 0; i < b.N; i++ {
		membarrier()
	}
}
