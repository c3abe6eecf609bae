//go:build unix

package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"syscall"
)

// resetPeakRSS lowers this process's peak resident set size to what it
// holds now, after returning freed memory to the system. A child shares
// its parent's memory until it execs, and Linux counts the parent's peak
// into the child's ru_maxrss at that exec: without this, every command's
// peak was this generator's (260 MB at 1M tuples for tqmon and DuckDB
// alike). What is left is a floor of the parent's resident size when the
// command starts (tens of MB); writing 5 to clear_refs (Linux ≥ 4.0)
// resets the peak.
func resetPeakRSS() {
	debug.FreeOSMemory()
	if runtime.GOOS == "linux" {
		_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	}
}

// peakRSSKB is the child's peak resident set size in KiB (getrusage's
// ru_maxrss: KiB on Linux, bytes on macOS).
func peakRSSKB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) / 1024
	}
	return int64(ru.Maxrss)
}
