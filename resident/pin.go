package resident

import (
	_ "unsafe" // for go:linkname
)

// procPin pins the goroutine to its P (no preemption, no other goroutine
// on the P) and returns the P's id; procUnpin ends it. sync.Pool uses the
// same pair; the runtime keeps both linkname-able (go.dev/issue/67401).
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// pin pins the goroutine to its P and returns the P's ring, made on the
// P's first packet. Unpin with procUnpin; between the two the caller must
// not block (nor allocate much, nor call anything that may).
func (r *Resident) pin() *ring {
	for {
		pid := procPin()
		if rs := *r.rings.Load(); pid < len(rs) && rs[pid] != nil {
			return rs[pid]
		}
		procUnpin()
		r.addRing(pid)
	}
}

// addRing makes P pid's ring (unpinned: it allocates).
func (r *Resident) addRing(pid int) {
	r.ringMu.Lock()
	defer r.ringMu.Unlock()
	old := *r.rings.Load()
	if pid < len(old) && old[pid] != nil {
		return
	}
	rs := make([]*ring, max(len(old), pid+1))
	copy(rs, old)
	rs[pid] = newRing(r.slots)
	r.rings.Store(&rs)
}

// ringList returns the rings made so far.
func (r *Resident) ringList() []*ring { return *r.rings.Load() }
