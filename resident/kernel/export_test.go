package kernel

import (
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/tqmon/tqmon/resident/session"
	"github.com/tqmon/tqmon/resident/wire"
	"github.com/tqmon/tqmon/sensor/bpfgen"
)

// Synthetic is a resident whose rings are anonymous memory written by
// the test, not by programs: the consumer path (drain, decoder, sessions)
// runs as it does over BPF rings, without BPF. Its one process and thread
// are SynthPid; enables are noted in the sessions, never attached.
type Synthetic struct {
	R   *Resident
	t   *tracker
	rec []byte // a Syscall record (getppid by SynthPid), without its time
	ts  int64  // the last record's time
}

// SynthPid is the synthetic process's (and its thread's) ID.
const SynthPid = 4242

// NewSynthetic makes a synthetic resident with a packet ring of ringBytes
// and starts its drain.
func NewSynthetic(ringBytes int) (*Synthetic, error) {
	d, err := Describe(nil)
	if err != nil {
		return nil, err
	}
	r, err := newResident(Options{Name: "synthetic", RingBytes: ringBytes, EntityRingBytes: 4096, Logf: func(string, ...any) {}}, d)
	if err != nil {
		return nil, err
	}
	t := &tracker{r: r, maps: map[string]*ebpf.Map{}, stop: make(chan struct{}), done: make(chan struct{}),
		begun: map[beginKey]*begunTuple{}, rearm: map[flagKey]bool{}, delivered: make([]atomic.Uint64, len(r.cat.Relations)), decided: make([]uint64, len(r.cat.Relations)),
		flags: make([]bpfgen.Flags, max(r.spec.Relations, 1))}
	if t.events, err = memRing(ringBytes); err != nil {
		return nil, err
	}
	if t.entRing, err = memRing(4096); err != nil {
		return nil, err
	}
	t.lastW = monoNow() - 1
	t.evQ, t.entQ = newRingQ(t.events), newRingQ(t.entRing)
	t.ents = newEntities(r, t)
	p := t.ents.create(typeProcess, SynthPid, 0, "work", nil, 0, nil)
	t.ents.create(typeThread, SynthPid, 0, "", p, 0, nil)
	r.tr = t
	s := &Synthetic{R: r, t: t}
	rel := r.cat.Lookup("Syscall")
	for _, ss := range r.sensors {
		if ss == nil || ss.s.Rel != rel {
			continue
		}
		bd := ss.s.Bindings[0]
		s.rec = make([]byte, bd.Layout.Size)
		le.PutUint16(s.rec[bpfgen.OffSensor:], uint16(ss.s.ID))
		s.rec[bpfgen.OffKind] = byte(bpfgen.KindEvent)
		for _, sl := range bd.Layout.Slots {
			switch {
			case sl.Entity != "":
				le.PutUint64(s.rec[sl.Off:], SynthPid)
			case sl.Decode == bpfgen.DecodeSyscall:
				le.PutUint64(s.rec[sl.Off:], 110) // getppid
			}
		}
	}
	go t.loop()
	return s, nil
}

// memRing is a ring in anonymous memory laid out as openRing maps a BPF
// ring: a consumer page, a producer page, the data twice.
func memRing(size int) (*ring, error) {
	page := unix.Getpagesize()
	cons, err := unix.Mmap(-1, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	prod, err := unix.Mmap(-1, 0, page+2*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		unix.Munmap(cons)
		return nil, err
	}
	return &ring{cons: cons, prod: prod, data: prod[page:], mask: uint64(size - 1)}, nil
}

// Write writes up to n getppid records stamped now into the packet ring,
// as a program would (as many as there is room for); it returns how many
// it wrote.
func (s *Synthetic) Write(n int) int {
	r := s.t.events
	size := uint64(len(s.rec))
	step := (ringHdrSize + size + 7) &^ 7
	prod := atomic.LoadUint64(r.prodPos())
	cons := atomic.LoadUint64(r.consPos())
	// As programs do: reserve (the records busy), read the clock, commit.
	// A record read from its start reads on into the second mapping of
	// the data when it wraps: writing it there is enough.
	first := prod
	k := 0
	for ; k < n && prod+step-cons <= r.mask+1; k++ {
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.data[prod&r.mask])), uint32(size)|ringBusy)
		prod += step
	}
	atomic.StoreUint64(r.prodPos(), prod)
	now := monoNow()
	for at := first; at < prod; at += step {
		s.ts = max(now, s.ts+1) // no two alike
		le.PutUint64(s.rec, uint64(s.ts))
		copy(r.data[at&r.mask+ringHdrSize:], s.rec)
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&r.data[at&r.mask])), uint32(size))
	}
	return k
}

// Local is an in-process connection to a session of the resident whose
// enables are noted, not attached.
func (s *Synthetic) Local() wire.Conn {
	ss := s.R.Open()
	return &synthConn{Conn: session.Local(s.R.localHello, ss), s: ss} // in process: no plans, as Local
}

type synthConn struct {
	wire.Conn
	s *Session
}

// Release gives a batch back to the session (as the resident's own Local
// does: the remote releases what it took).
func (c *synthConn) Release(b *wire.Batch) { c.Conn.(wire.Releaser).Release(b) }

// Send carries out enables as the session's commands (numbered, so that
// batches say when they were applied: the remote starts its observation
// there), noting them without attaching anything.
func (c *synthConn) Send(cmd *wire.Command) error {
	switch cmd.Kind {
	case wire.CEnable, wire.CEnableAll:
		return c.s.core.Command(&c.s.r.mu, cmd, func(cmd *wire.Command) error {
			if cmd.Kind == wire.CEnableAll {
				c.s.all.Enable(int(cmd.Sensor))
				return nil
			}
			n, _ := strconv.ParseUint(cmd.Entity, 10, 32)
			c.s.flags.Enable(flagKey{int(cmd.Sensor), uint32(n)})
			return nil
		}, c.s.Close)
	}
	return c.Conn.Send(cmd)
}

// Close ends the sessions after a last drain and frees the rings.
func (s *Synthetic) Close() {
	s.R.mu.Lock()
	for _, ss := range s.R.sensors {
		if ss != nil {
			ss.att = nil
		}
	}
	s.R.mu.Unlock()
	s.R.Close()
}

// DrainHeld stops the drain (no last round) and returns the records it
// has walked and not applied, and the bytes it holds for them and for the
// records walked and not freed (its notes' capacity: it copies no record).
func (s *Synthetic) DrainHeld() (records, bytes int) {
	s.t.stopDrain(false)
	t := s.t
	return len(t.pending) - t.head, cap(t.pending)*int(unsafe.Sizeof(record{})) + cap(t.evQ.done) + cap(t.entQ.done)
}

// RecordBytes is the room a synthetic record takes in the ring.
func (s *Synthetic) RecordBytes() int { return (ringHdrSize + len(s.rec) + 7) &^ 7 }

// RejectSelections returns o with every program that has a selection
// compiled in made one the kernel's verifier rejects.
func RejectSelections(o Options) Options {
	o.rejectSelections = true
	return o
}

// Index returns the session's index in the resident's table (-1: none).
func (s *Session) Index() int { return s.idx }
