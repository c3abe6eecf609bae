package resident

// rdtscp reads the time-stamp counter, ordered after every earlier load
// (tsc_amd64.s).
func rdtscp() uint64

// cpuidTSC reports whether the TSC is invariant (constant rate, running
// in every power state) and whether RDTSCP exists.
func cpuidTSC() (invariant, rdtscp bool)

// lfence orders an earlier clock read before later loads.
func lfence()
