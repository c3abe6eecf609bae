//go:build !amd64

package resident

import "sync/atomic"

func rdtscp() uint64 { panic("resident: no TSC on this architecture") }

func cpuidTSC() (invariant, rdtscp bool) { return false, false }

// storeRel is a sequentially consistent store here: no membarrier needed.
func storeRel(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

func lfence() {}

const plainStores = false
