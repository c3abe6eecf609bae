//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

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
