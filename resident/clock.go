package resident

import (
	"time"
	_ "unsafe" // for go:linkname
)

// The resident's clock is a monotonic clock: the TSC clock (tsc.go) where
// the time-stamp counter can be trusted, else the runtime's monotonic
// clock, read with runtime.nanotime through go:linkname: it is what
// time.Since uses underneath, without the time.Time construction (≈ 24 ns
// against ≈ 26 ns for time.Since and ≈ 48 ns for time.Now on a
// 2-vCPU VM, BenchmarkClock). runtime.nanotime is one of the
// runtime symbols Go keeps linkname-able for existing users, so this
// builds with Go 1.26's linkname checks. The TSC clock follows it within
// microseconds. Its zero is arbitrary (boot time on Linux); Hello maps it
// to the global clock (MonoBase, WallBase).

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// now reads the clock packets are stamped with: the TSC clock, or else
// Options.Clock when set (tests) or nanotime (r.clock: one indirect call).
// Producers call it pinned to their P (ring.go): it must not block.
func (r *Resident) now() int64 {
	if r.tsc != nil {
		return r.tsc.now()
	}
	return r.clock()
}

// Now returns the resident's monotonic clock in ns: the clock packets,
// intervals and truth reports are stamped with.
func (r *Resident) Now() int64 { return r.now() }

// global converts a monotonic time to the global clock (ns since the Unix
// epoch): WallBase + (mono − MonoBase).
func (r *Resident) global(mono int64) int64 { return r.wallBase + (mono - r.monoBase) }

// mono converts a global time to the monotonic clock.
func (r *Resident) mono(global int64) int64 { return global - r.wallBase + r.monoBase }

// initClock sets the clock and the mono ↔ global mapping from opts: with
// Options.Clock, MonoBase is 0 (Clock's zero) and WallBase is
// Options.Wall() (default: the wall clock now); without it, MonoBase is the
// monotonic clock now and WallBase is Options.Wall() (default: the wall
// clock now).
func (r *Resident) initClock(opts Options) {
	r.clock = opts.Clock
	if r.clock == nil {
		r.clock = nanotime
		if tscUsable() && !opts.NoTSC {
			r.tsc = newTSCClock(tscSample, tscSpan, tscCalibrate)
			r.clock = r.tsc.now
		}
	}
	wall := opts.Wall
	if wall == nil {
		wall = func() int64 { return time.Now().UnixNano() }
	}
	if opts.Clock != nil {
		r.monoBase = 0
	} else {
		r.monoBase = r.now()
	}
	r.wallBase = wall()
}

// ceilMultiple returns the smallest multiple of p that is ≥ t (p > 0).
func ceilMultiple(t, p int64) int64 {
	q := t / p
	if q*p < t {
		q++
	}
	return q * p
}
