package kernel

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ring reads a BPF ring buffer through its mapped pages: the consumer
// position page (read-write), then the producer position page and the
// data pages, mapped twice in a row so that a record wrapping around the
// end reads as one piece (read-only).
type ring struct {
	cons, prod []byte
	data       []byte
	mask       uint64
}

// Ring record header bits (kernel/bpf/ringbuf.c).
const (
	ringBusy    = 1 << 31
	ringDiscard = 1 << 30
	ringHdrSize = 8
)

func openRing(m *ebpf.Map) (*ring, error) {
	page := os.Getpagesize()
	size := int(m.MaxEntries())
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping a ring buffer's consumer page: %w", err)
	}
	prod, err := unix.Mmap(m.FD(), int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(cons)
		return nil, fmt.Errorf("mapping a ring buffer's data: %w", err)
	}
	return &ring{cons: cons, prod: prod, data: prod[page:], mask: uint64(size - 1)}, nil
}

func (r *ring) close() {
	if r.cons != nil {
		unix.Munmap(r.cons)
		unix.Munmap(r.prod)
		r.cons, r.prod, r.data = nil, nil, nil
	}
}

func (r *ring) consPos() *uint64 { return (*uint64)(unsafe.Pointer(&r.cons[0])) }
func (r *ring) prodPos() *uint64 { return (*uint64)(unsafe.Pointer(&r.prod[0])) }

// busyWait bounds how long drain waits for a record a program is still
// writing (programs write a record in microseconds).
const busyWait = 10 * time.Millisecond

// walk passes to f each record committed from position from up to the
// producer position read on entry, in ring order: its position and its
// bytes (nil for a record its program discarded). The bytes stay valid — the kernel writes no record over
// them — until the consumer position passes them (free), not just during
// the call: the ring itself holds what the drain has read and not
// applied. A record still being written is waited for (briefly: see
// busyWait), so that every record reserved before the call is seen. walk
// returns the position after the last record passed.
func (r *ring) walk(from uint64, f func(pos uint64, b []byte)) uint64 {
	prod := atomic.LoadUint64(r.prodPos())
	var waitStart time.Time
	for from < prod {
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[from&r.mask])))
		if hdr&ringBusy != 0 {
			if waitStart.IsZero() {
				waitStart = time.Now()
			} else if time.Since(waitStart) > busyWait {
				break
			}
			runtime.Gosched()
			continue
		}
		waitStart = time.Time{}
		size := uint64(hdr &^ (ringBusy | ringDiscard))
		start := (from + ringHdrSize) & r.mask
		if hdr&ringDiscard == 0 {
			f(from, r.data[start:start+size:start+size])
		} else {
			f(from, nil)
		}
		from += (ringHdrSize + size + 7) &^ 7
	}
	return from
}

// next returns the position after the record at pos (committed, not
// yet freed: its header is intact).
func (r *ring) next(pos uint64) uint64 {
	hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[pos&r.mask])))
	size := uint64(hdr &^ (ringBusy | ringDiscard))
	return pos + (ringHdrSize+size+7)&^7
}

// consumed returns the consumer position.
func (r *ring) consumed() uint64 { return atomic.LoadUint64(r.consPos()) }

// free moves the consumer position to pos: the records before it are
// done with, and the kernel may write over them.
func (r *ring) free(pos uint64) { atomic.StoreUint64(r.consPos(), pos) }

var le = binary.LittleEndian
