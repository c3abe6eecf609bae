//go:build !amd64

package resident

func rdtscp() uint64 { panic("resident: no TSC on this architecture") }

func rdtscLfence() uint64 { panic("resident: no TSC on this architecture") }

func cpuTSC() (invariant, rdtscp, lfence bool) { return false, false, false }

func lfence() {}
