//go:build amd64 && !race

package resident

// storeRel stores v at p with release ordering and no fence: a plain MOV
// (store_amd64.s). On amd64 (TSO) every store is a release store, and a
// MOV, unlike the XCHG sync/atomic uses for Store, does not wait for the
// store buffer to drain.
func storeRel(p *uint64, v uint64)

// plainStores reports whether storeRel is a plain store (claims then need
// the drain's membarrier; see ring.go).
const plainStores = true
