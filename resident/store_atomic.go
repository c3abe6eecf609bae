//go:build !amd64 || race

package resident

import "sync/atomic"

// storeRel is a sequentially consistent store here (other architectures,
// and under the race detector, which then sees the release–acquire
// edges): claims need no membarrier.
func storeRel(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

const plainStores = false
