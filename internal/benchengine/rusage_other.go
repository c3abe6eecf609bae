//go:build !unix

package main

import "os"

// peakRSSKB is not known here.
func peakRSSKB(*os.ProcessState) int64 { return 0 }

// resetPeakRSS has nothing to reset here.
func resetPeakRSS() {}
