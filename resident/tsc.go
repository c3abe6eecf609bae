package resident

import (
	"math"
	"math/bits"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The TSC clock: the resident's monotonic clock, read from the CPU's
// time-stamp counter with LFENCE; RDTSC where LFENCE is dispatch
// serializing, else RDTSCP, instead of the runtime's nanotime (the vDSO's
// ordered TSC read, a seqlock and a conversion): 18 against 22 ns on the
// reference VM (BenchmarkClockTSC, BenchmarkClockNanotime). Both reads are ordered after every earlier load, as
// the kernel's are: a time read after observing another goroutine's
// write is not before that goroutine's time read before the write, so
// timestamps respect causality.
//
// It is used when the counter can be trusted as one clock for every CPU:
// amd64 with an invariant TSC and RDTSCP, and the kernel itself using the
// TSC as its clocksource (so it has found the CPUs' counters in step).
// Otherwise, or with Options.Clock, the resident reads nanotime.
//
// Ticks become nanoseconds through a continuous, increasing,
// piecewise-linear function f, fixed once defined: segment k covers ticks
// [t0, t0+span) with its own rate (32.32 fixed-point ns per tick). A
// segment is defined, once, by whoever first reads a tick past the end of
// the previous one (a compare-and-swap publishes it; losers use the
// winner's): it starts where the previous one ends (continuity) and takes
// the rate that brings f to the monotonic clock's estimate at its end,
// within ±tscSlew of the measured rate (the estimate: the tick rate
// measured against nanotime since the previous segment was defined). So f is
// monotonic, two reads of the same tick give the same time, and f stays
// within microseconds of CLOCK_MONOTONIC, slewing toward it as NTP slews
// the kernel's clock. A read of a tick before the current segment (not
// possible with an ordered read, which reads after the load of the
// segment) is clamped to the segment's start.
//
// The fast path, with no clock segment to define, is a load, the counter
// read, a subtraction, a compare, and a 64×64-bit multiply.

// tscSpan is a segment's length on the monotonic clock.
const tscSpan = 100 * time.Millisecond

// tscSlew bounds how far a segment's rate may differ from the measured
// rate: 500 ppm, 50 µs of correction per segment.
const tscSlew = 500e-6

// tscCalibrate is how long newTSCClock measures the tick rate before the
// first segment.
const tscCalibrate = 200 * time.Microsecond

// tscSeg is one segment of f.
type tscSeg struct {
	t0   uint64 // first tick covered
	span uint64 // ticks covered: [t0, t0+span)
	ns0  int64  // f(t0)
	mult uint64 // ns per tick, 32.32 fixed point
	// st, sn is the (tick, nanotime) sample taken when the segment was
	// defined: the next segment measures the recent rate from it.
	st uint64
	sn int64
}

// at returns f(t) for t in the segment.
func (s *tscSeg) at(t uint64) int64 {
	hi, lo := bits.Mul64(t-s.t0, s.mult)
	return s.ns0 + int64(hi<<32|lo>>32)
}

// tscClock is f and what defines its next segments.
type tscClock struct {
	seg atomic.Pointer[tscSeg]
	// sample reads a (tick, nanotime) pair; baseT, baseN is the first.
	sample func() (uint64, int64)
	lf     bool // read with LFENCE; RDTSC, not RDTSCP
	baseT  uint64
	baseN  int64
	spanNs int64
}

// tscSample reads a tick and nanotime together: nanotime between two
// tick reads, the tick their midpoint; the tightest of a few tries, so
// that a thread descheduled mid-sample does not skew the rate.
func tscSample() (uint64, int64) {
	var bt uint64
	var bn int64
	width := uint64(math.MaxUint64)
	for i := 0; i < 8 && (i < 2 || width > 2000); i++ {
		t1 := rdtscp()
		n := nanotime()
		t2 := rdtscp()
		if t2-t1 < width {
			bt, bn, width = t1+(t2-t1)/2, n, t2-t1
		}
	}
	return bt, bn
}

// tscUsable reports whether the TSC clock can be used here (see above).
var tscUsable = sync.OnceValue(func() bool {
	inv, p, _ := cpuTSC()
	if !inv || !p {
		return false
	}
	b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource")
	return err == nil && strings.TrimSpace(string(b)) == "tsc"
})

// newTSCClock measures the tick rate against the monotonic clock for
// calibrate (spinning) and returns the clock, its first segment starting
// at the end of the measurement.
func newTSCClock(sample func() (uint64, int64), span, calibrate time.Duration) *tscClock {
	c := &tscClock{sample: sample, spanNs: int64(span)}
	_, _, c.lf = cpuTSC()
	c.baseT, c.baseN = sample()
	t1, n1 := sample()
	for n1-c.baseN < int64(calibrate) || t1 == c.baseT {
		t1, n1 = sample()
	}
	rate := float64(n1-c.baseN) / float64(t1-c.baseT)
	c.seg.Store(&tscSeg{t0: t1, span: spanTicks(rate, c.spanNs), ns0: n1, mult: fixed(rate), st: t1, sn: n1})
	return c
}

// fixed converts ns per tick to 32.32 fixed point.
func fixed(rate float64) uint64 { return uint64(rate*(1<<32) + 0.5) }

// spanTicks returns how many ticks ns nanoseconds take at rate (at least
// 1).
func spanTicks(rate float64, ns int64) uint64 {
	return max(1, uint64(float64(ns)/rate))
}

// now reads the clock. (Sensor.putEvent1 has a copy of it.)
func (c *tscClock) now() int64 {
	s := c.seg.Load()
	var t uint64
	if c.lf {
		t = rdtscLfence()
	} else {
		t = rdtscp()
	}
	if t-s.t0 < s.span {
		return s.at(t)
	}
	return c.slow(t)
}

// at returns f(t) for a tick read earlier (tests).
func (c *tscClock) at(t uint64) int64 {
	s := c.seg.Load()
	if t-s.t0 < s.span {
		return s.at(t)
	}
	return c.slow(t)
}

// slow returns f(t) for a tick outside the current segment: before it
// (clamped), or after it (defining segments until one covers t). It takes
// no lock: producers call it pinned to their P.
func (c *tscClock) slow(t uint64) int64 {
	for {
		s := c.seg.Load()
		d := int64(t - s.t0)
		if d < 0 {
			return s.ns0
		}
		if uint64(d) < s.span {
			return s.at(t)
		}
		c.seg.CompareAndSwap(s, c.next(s, t))
	}
}

// next defines the segment after s, long enough to cover t.
func (c *tscClock) next(s *tscSeg, t uint64) *tscSeg {
	t0 := s.t0 + s.span
	ns0 := s.at(t0)
	tn, nn := c.sample()
	// The rate since the previous segment was defined, if that is long
	// enough ago to measure it well, else since the clock was made.
	rate := float64(nn-c.baseN) / float64(tn-c.baseT)
	if nn-s.sn >= c.spanNs/2 {
		rate = float64(nn-s.sn) / float64(tn-s.st)
	}
	span := spanTicks(rate, c.spanNs)
	if t-t0 >= span {
		span += t - t0 // a long gap between reads: one segment covers it
	}
	// The monotonic clock's estimate at the segment's end, less f(t0).
	want := float64(nn-ns0) + float64(int64(t0+span-tn))*rate
	r := min(max(want/float64(span), rate*(1-tscSlew)), rate*(1+tscSlew))
	return &tscSeg{t0: t0, span: span, ns0: ns0, mult: fixed(r), st: tn, sn: nn}
}
