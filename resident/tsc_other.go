//go:build !amd64

package resident

func rdtscp() uint64 { panic("resident: no TSC on this architecture") }

func cpuidTSC() (invariant, rdtscp bool) { return false, false }

func lfence() {}
