package resident

// rdtscp reads the time-stamp counter, ordered after every earlier load
// (tsc_amd64.s).
func rdtscp() uint64

// cpuidTSC reports whether the TSC is invariant (constant rate, running
// in every power state) and whether RDTSCP exists.
func cpuidTSC() (invariant, rdtscp bool)

// storeRel stores v at p with release ordering and no fence: a plain MOV.
func storeRel(p *uint64, v uint64)

// lfence orders an earlier clock read before later loads.
func lfence()

// plainStores reports whether storeRel is a plain store (claims then need
// the drain's membarrier; see ring.go).
const plainStores = true
